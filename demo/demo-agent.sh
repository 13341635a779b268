#!/bin/sh
# The demo's agent, run by lazy's exec adapter inside the task's worktree.
# lazy passes the prompt as the last argument (and in LAZY_PROMPT). A real
# agent would think; this one reads the prompt, writes a file and commits.
prompt=$1
echo "demo agent: I was asked:"
printf '%s\n' "$prompt" | sed 's/^/  > /'
if [ "$LAZY_TURN_KIND" = unblock ]; then
  echo "demo agent: applying the feedback"
  cat > tests/logout_test.sh <<'TEST'
#!/bin/sh
# Logout must clear the session cookie.
./logout-check
TEST
  git add tests/logout_test.sh
  git -c user.name="demo agent" -c user.email=agent@lazy.invalid commit -q -m "Cover logout too"
  echo "demo agent: done, committed tests/logout_test.sh"
  exit 0
fi
echo "demo agent: adding a retry to the login test"
mkdir -p tests
cat > tests/login_test.sh <<'TEST'
#!/bin/sh
# Retries the flaky login check up to three times.
for i in 1 2 3; do ./login-check && exit 0; done
exit 1
TEST
git add tests/login_test.sh
git -c user.name="demo agent" -c user.email=agent@lazy.invalid commit -q -m "Retry the flaky login check"
echo "demo agent: done, committed tests/login_test.sh"
