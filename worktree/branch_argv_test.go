package worktree

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestBranchCommandsArgv pins the argv of the branch and checkout
// commands of start, take-over, edit, reject and the reconciler.
func TestBranchCommandsArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  *gitcli.Cmd
		want []string
	}{
		{"create branch", createBranchCmd("r", "lazy/x", "refs/remotes/origin/lazy/x"), []string{"branch", "--quiet", "--no-track", "lazy/x", "refs/remotes/origin/lazy/x"}},
		{"move", moveCmd("r", "/a", "/b"), []string{"worktree", "move", "/a", "/b"}},
		{"head commit", headCommitCmd("r"), []string{"rev-parse", "--verify", "--quiet", "HEAD^{commit}"}},
		{"any branch", anyBranchCmd("r"), []string{"for-each-ref", "--count=1", "refs/heads/"}},
		{"grep commits", grepCommitsCmd("r", "Lazy-Task: t1", "abc", "main"), []string{"log", "--format=%H", "--fixed-strings", "--grep=Lazy-Task: t1", "abc..refs/heads/main"}},
	} {
		got, err := tc.cmd.Argv()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: argv %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestBranchCommandsOnARealRepository runs them: an unborn repository
// has no commits, a grep finds only commits after since, a move and a
// branch land where asked.
func TestBranchCommandsOnARealRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	unborn := t.TempDir()
	testrepo.Git(t, unborn, "init", "-q", "-b", "main")
	if !NoCommits(ctx, unborn) {
		t.Fatal("an unborn repository has commits")
	}
	dir := testrepo.New(t)
	if NoCommits(ctx, dir) {
		t.Fatal("a repository with a commit has none")
	}
	since := testrepo.Git(t, dir, "rev-parse", "HEAD")
	if found, err := HasCommitWith(ctx, dir, "Lazy-Task: t1", since, "main"); err != nil || found {
		t.Fatalf("before the commit: %v %v", found, err)
	}
	testrepo.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "squash\n\nLazy-Task: t1")
	if found, err := HasCommitWith(ctx, dir, "Lazy-Task: t1", since, "main"); err != nil || !found {
		t.Fatalf("after the commit: %v %v", found, err)
	}
	if found, _ := HasCommitWith(ctx, dir, "Lazy-Task: t", "HEAD", "main"); found {
		t.Fatal("a commit at since counted")
	}
	if err := CreateBranch(ctx, dir, "side", since); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	if err := Add(ctx, dir, a, "side"); err != nil {
		t.Fatal(err)
	}
	if err := Move(ctx, dir, a, b); err != nil {
		t.Fatal(err)
	}
	if at, _ := CheckedOutAt(ctx, dir, "side"); at != b {
		t.Fatalf("side is at %q, want %q", at, b)
	}
	if head, err := Head(ctx, b); err != nil || head != since {
		t.Fatalf("head %q %v, want %s", head, err, since)
	}
	if CreateBranch(ctx, dir, "--help", since) == nil || Move(ctx, dir, "-f", b) == nil {
		t.Fatal("an option-like value reached git")
	}
}
