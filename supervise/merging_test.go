package supervise

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestMergingReadsTheWorktreesOwnGitDir: a merge stopped on a conflict
// in a linked worktree is seen from its MERGE_HEAD file, and gone once
// aborted; the main worktree's merge is not a linked worktree's; a .git
// file lazy cannot read falls back to asking git.
func TestMergingReadsTheWorktreesOwnGitDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := testrepo.New(t)
	wt := filepath.Join(t.TempDir(), "wt")
	testrepo.Git(t, repo, "worktree", "add", "-q", "-b", "lazy/x", wt, "main")
	commit := func(dir, text string) {
		if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		testrepo.Git(t, dir, "add", "f.txt")
		testrepo.Git(t, dir, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "-m", text)
	}
	commit(repo, "main's\n")
	commit(wt, "the task's\n")
	if merging(ctx, wt) || merging(ctx, repo) {
		t.Fatal("merging before any merge")
	}
	if _, err := syncUpstream(ctx, wt, "main"); err != nil {
		t.Fatal(err)
	}
	if gd, ok := worktreeGitDir(wt); !ok || filepath.Base(filepath.Dir(gd)) != "worktrees" {
		t.Fatalf("the linked worktree's git dir: %q %v", gd, ok)
	}
	if !merging(ctx, wt) {
		t.Fatal("a conflicted merge in the worktree is not seen")
	}
	if merging(ctx, repo) {
		t.Fatal("the worktree's merge is taken for the main checkout's")
	}
	// A .git file lazy cannot read: git is asked, and says the same.
	dotGit := filepath.Join(wt, ".git")
	b, err := os.ReadFile(dotGit)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dotGit, append([]byte("gitdir: \x00"), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := worktreeGitDir(wt); ok {
		t.Fatal("a .git file with a NUL was read")
	}
	if err := os.WriteFile(dotGit, b, 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, wt, "merge", "--abort")
	if merging(ctx, wt) {
		t.Fatal("an aborted merge is still seen")
	}
}
