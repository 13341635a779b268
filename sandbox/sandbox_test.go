package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// needBwrap skips without bubblewrap, unless LAZY_REQUIRE_BWRAP says CI
// installed it and the test must run. The fast lane (go test -short)
// runs no real bwrap.
func needBwrap(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real bwrap: the full suite runs it (scripts/test.sh)")
	}
	if err := Check(context.Background()); err != nil {
		if os.Getenv("LAZY_REQUIRE_BWRAP") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// fixture is a repository with two task worktrees, a home with a secret,
// all outside /tmp (which the sandbox replaces), so that every refusal
// is a refusal and not a write into a private copy.
type fixture struct {
	repo, common, lazyDir, root, mine, other, home string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "lazy-sandbox-test-")
	if err != nil {
		t.Skip("no /var/tmp to build the fixture outside /tmp:", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	t.Setenv("TMPDIR", base)
	f := fixture{repo: testrepo.New(t)}
	f.common = filepath.Join(f.repo, ".git")
	f.lazyDir = filepath.Join(f.common, "lazy")
	f.root = filepath.Join(f.lazyDir, "worktrees")
	f.mine, f.other = filepath.Join(f.root, "mine"), filepath.Join(f.root, "other")
	testrepo.Git(t, f.repo, "worktree", "add", "-q", "-b", "lazy/mine", f.mine)
	testrepo.Git(t, f.repo, "worktree", "add", "-q", "-b", "lazy/other", f.other)
	f.home = filepath.Join(base, "home")
	if err := os.MkdirAll(filepath.Join(f.home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.home, ".ssh", "id_test"), []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.lazyDir, "token-like"), []byte("TOKEN"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f fixture) policy(readOnly bool) Policy {
	return Policy{Worktree: f.mine, ReadOnly: readOnly, RepoDir: f.repo, CommonDir: f.common,
		GitDir: filepath.Join(f.common, "worktrees", "mine"), LazyDir: f.lazyDir, WorktreeRoot: f.root,
		Home: f.home, Network: NetworkOff}
}

// sh runs a shell script in the sandbox and returns its combined output.
func sh(t *testing.T, p Policy, script string) string {
	t.Helper()
	argv, err := Wrap([]string{"/bin/sh", "-c", script}, p)
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = append(os.Environ(), "HOME="+p.Home, "GIT_CONFIG_NOSYSTEM=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("sandboxed script failed: %v\n%s", err, out)
	}
	return string(out)
}

func TestSandboxConfinesWritesAndHidesSecrets(t *testing.T) {
	needBwrap(t)
	f := newFixture(t)
	out := sh(t, f.policy(false), `
try() { if "$@" 2>/dev/null; then echo "ALLOWED: $*"; else echo "refused: $*"; fi; }
try sh -c 'echo x > `+f.repo+`/README.md'
try sh -c 'echo x > `+f.other+`/stolen'
try cat `+f.home+`/.ssh/id_test
try cat `+f.lazyDir+`/token-like
try sh -c 'echo x > /etc/lazy-sandbox-probe'
try ls `+f.other+`/README.md
echo work > mine.txt && git add mine.txt && git -c user.name=a -c user.email=a@b commit -qm work && echo "committed"
echo scratch > /tmp/scratch && echo "private tmp ok"
`)
	if strings.Contains(out, "ALLOWED") {
		t.Fatalf("the sandbox let something through:\n%s", out)
	}
	for _, want := range []string{"committed", "private tmp ok"} {
		if !strings.Contains(out, want) {
			t.Fatalf("normal work failed (%q missing):\n%s", want, out)
		}
	}
	if got := testrepo.Git(t, f.repo, "log", "-1", "--format=%s", "lazy/mine"); got != "work" {
		t.Fatalf("the commit did not land on the task branch: %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(f.repo, "README.md")); string(b) != "# test\n" {
		t.Fatalf("the main checkout changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(f.other, "stolen")); err == nil {
		t.Fatal("another task's worktree was written")
	}
}

func TestReadOnlySandboxRefusesWorktreeWrites(t *testing.T) {
	needBwrap(t)
	f := newFixture(t)
	out := sh(t, f.policy(true), `
if echo x > answer.txt 2>/dev/null; then echo "ALLOWED write"; else echo "refused write"; fi
if git -c user.name=a -c user.email=a@b commit -q --allow-empty -m ask 2>/dev/null; then echo "ALLOWED commit"; else echo "refused commit"; fi
cat README.md
`)
	if strings.Contains(out, "ALLOWED") || !strings.Contains(out, "# test") {
		t.Fatalf("a read-only turn could write, or could not read:\n%s", out)
	}
}

func TestNetworkOffHasNoRoute(t *testing.T) {
	needBwrap(t)
	f := newFixture(t)
	out := sh(t, f.policy(false), `cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' '`)
	if strings.TrimSpace(out) != "lo" {
		t.Fatalf("network off still has interfaces: %q", out)
	}
}

func TestWrapRefusesRelativePathsAndUnknownNetwork(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap not installed")
	}
	if _, err := Wrap([]string{"true"}, Policy{Worktree: "rel", CommonDir: "/x"}); err == nil {
		t.Fatal("a relative worktree was accepted")
	}
	if _, err := Wrap([]string{"true"}, Policy{Worktree: "/w", CommonDir: "/x", Network: "maybe"}); err == nil {
		t.Fatal("an unknown network policy was accepted")
	}
}
