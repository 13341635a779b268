// Package testrepo makes real temporary git repositories for tests.
package testrepo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// template is the repository Main made for New to copy; "" when the
// package's tests run without Main, and New makes each one with git.
var template string

// Main runs a package's tests (m.Run, from its TestMain) with one
// repository made up front by Template, which every New of the run
// copies (cp -a: one process instead of six git processes, about a tenth
// of a second of CPU each time on a busy machine). It returns m.Run's
// exit code and removes the template. Call it after TestMain has set the
// environment the tests share (HOME, the git variables): the template's
// commit is made in that environment, once, where New would make one per
// test.
func Main(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "testrepo-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testrepo:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	dir := filepath.Join(tmp, "template")
	if err := os.Mkdir(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "testrepo:", err)
		return 1
	}
	if err := Template(dir); err != nil {
		fmt.Fprintln(os.Stderr, "testrepo: the template repository:", err)
		return 1
	}
	template = dir
	defer func() { template = "" }()
	return m.Run()
}

// New creates a git repository with one commit on main in a temp dir and
// returns its path. Under Main it is a copy of Main's template, in the
// directory New would have made it in.
func New(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if template != "" {
		if out, err := exec.Command("cp", "-a", template+"/.", dir).CombinedOutput(); err != nil {
			t.Fatalf("cp -a %s: %v\n%s", template, err, out)
		}
		return dir
	}
	Git(t, dir, "init", "-q", "-b", "main")
	Identity(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "add", "README.md")
	Git(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

// Identity gives the repository at dir the tests' own committer (in its
// local config) and turns signing off, so a test commits the same on a
// machine with no git identity, an empty HOME or a signing setup.
// Every repository a test commits in needs it: New's, and each clone.
func Identity(t testing.TB, dir string) {
	t.Helper()
	Git(t, dir, "config", "user.email", "test@example.com")
	Git(t, dir, "config", "user.name", "Test")
	Git(t, dir, "config", "commit.gpgsign", "false")
}

// Git runs git in dir and returns its trimmed stdout, failing the test on
// error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := GitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// GitErr runs git in dir and returns its combined output and error.
func GitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// PackRefs creates n task refs and n slug refs in the repository at dir,
// all naming HEAD, and packs them, as git gc leaves a repository of n
// tasks.
func PackRefs(tb testing.TB, dir string, n int) {
	tb.Helper()
	head := strings.TrimSpace(Git(tb, dir, "rev-parse", "HEAD"))
	var in strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "create refs/lazy/tasks/%016x %s\n", i*7919, head)
		fmt.Fprintf(&in, "create refs/lazy/slugs/seeded-task-%d %s\n", i, head)
	}
	cmd := exec.Command("git", "update-ref", "--stdin")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("update-ref: %v\n%s", err, out)
	}
	Git(tb, dir, "pack-refs", "--all")
}

// Template makes, in dir (which must exist), the repository New makes,
// without a testing.TB: a package's TestMain builds it once and each test
// takes a Copy, so a test pays for one cp instead of six git processes.
func Template(dir string) error {
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.email", "test@example.com"},
		{"config", "user.name", "Test"},
		{"config", "commit.gpgsign", "false"},
	} {
		if out, err := GitErr(dir, args...); err != nil {
			return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# test\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"add", "README.md"}, {"commit", "-q", "-m", "initial"}} {
		if out, err := GitErr(dir, args...); err != nil {
			return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// Copy copies the repository Template made at template into a temp dir of
// t's (cp -a keeps its modes and times, so git sees a clean checkout) and
// returns its path, as New would.
func Copy(t testing.TB, template string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(dir, "repo")
	if out, err := exec.Command("cp", "-a", template, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s: %v\n%s", template, err, out)
	}
	return dir
}

// FullLane skips t in the fast lane (go test -short): t is one of the
// real-git safety nets (an oracle run against git itself, a stress, race
// or crash test, a scenario through real repositories and processes)
// whose logic a fast test of its package, or the capability's seam test
// on the in-memory store, already checks. scripts/test.sh and .ci/run run
// every one of them. The fast lane stays under a minute on two cores
// (README "Tests"); what it skips is named in the skip message, so
// go test -short -v says what the full suite adds.
func FullLane(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("a real-git safety net: the full suite runs it (scripts/test.sh)")
	}
}
