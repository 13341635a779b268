#!/bin/sh
# Install the GitHub CLI (Debian package gh) so forge's
# TestGitHubArgvAgainstRealGH checks every gh argv lazy builds against
# the real parser instead of skipping.
set -eu
if command -v gh >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
	SUDO=sudo
else
	SUDO=
fi
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends gh
