#!/bin/sh
# Install the GitLab CLI (glab), pinned, so forge's
# TestGitLabArgvAgainstRealGlab checks every glab argv lazy builds
# against the real parser instead of skipping.
#
# glab is a Go module (gitlab.com/gitlab-org/cli). Where the Go module
# proxy does not serve it, this says so and exits 0, and the test skips;
# with LAZY_REQUIRE_GLAB=1 a missing glab fails instead (here and in the
# test).
set -eu
GLAB_VERSION=v1.79.0
if command -v glab >/dev/null 2>&1; then
	exit 0
fi
if GOFLAGS= go install "gitlab.com/gitlab-org/cli/cmd/glab@$GLAB_VERSION"; then
	echo "installed glab $GLAB_VERSION into $(go env GOPATH)/bin"
	exit 0
fi
echo "ci-install-glab: the Go module proxy did not serve gitlab.com/gitlab-org/cli@$GLAB_VERSION; TestGitLabArgvAgainstRealGlab will skip" >&2
if [ "${LAZY_REQUIRE_GLAB:-}" = 1 ]; then
	exit 1
fi
exit 0
