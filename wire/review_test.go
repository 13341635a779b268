package wire

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/worktree"
)

// commitFile writes name on branch in dir and commits it.
func commitFile(t *testing.T, dir, branch, name string) {
	t.Helper()
	testrepo.Git(t, dir, "checkout", "-q", branch)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "add", name)
	testrepo.Git(t, dir, "commit", "-q", "-m", "add "+name)
}

// lazy diff (ReviewRange), lazy_diff (Diff) and accept --dry-run
// (PreviewAccept) must measure one range: the branch against its merge
// base with its destination, so work that landed on main after the
// branch left it never shows as the task's.
func TestDiffReviewAndPreviewMeasureOneRange(t *testing.T) {
	t.Parallel()
	dir := testrepo.Copy(t, template)
	repo, err := gitrepo.Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := New(gitstore.Open(repo, gitstore.WithHost("ops-test")), session.Env{Actor: machine.Human})
	ctx := context.Background()
	sn, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "measure me"})
	if err != nil {
		t.Fatal(err)
	}
	slug := sn.Task.Slug

	if _, err := e.Review().Diff(ctx, slug, false, 0); err == nil || !strings.Contains(err.Error(), slug+" has not started, so it has no branch to diff; lazy start "+slug+" first") {
		t.Fatalf("diff of a backlog task: %v", err)
	}
	if _, err := e.Review().ReviewRange(ctx, slug); err == nil || !strings.Contains(err.Error(), slug+" has not started, so it has no work to review") {
		t.Fatalf("review of a backlog task: %v", err)
	}

	walk(t, e, sn.Task.ID, machine.Working, machine.Blocked)
	if _, err := e.Review().Diff(ctx, slug, false, 0); err == nil || !strings.Contains(err.Error(), "does not exist on this machine") {
		t.Fatalf("diff without the branch: %v", err)
	}

	fork := testrepo.Git(t, dir, "rev-parse", "main")
	testrepo.Git(t, dir, "branch", worktree.Branch(slug), "main")
	commitFile(t, dir, worktree.Branch(slug), "task.txt")
	commitFile(t, dir, "main", "later-on-main.txt")

	r, err := e.Review().ReviewRange(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	if r.MergeBase != fork || r.Into != "main" || r.Branch != worktree.Branch(slug) {
		t.Fatalf("review range %+v, want merge base %s into main", r, fork)
	}
	d, err := e.Review().Diff(ctx, slug, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Base != r.Into || d.Branch != r.Branch || !slices.Equal(d.Files, []string{"task.txt"}) || !strings.Contains(d.Patch, "+task.txt") || d.Truncated {
		t.Fatalf("lazy_diff %+v differs from lazy diff's range %+v", d, r)
	}
	p, err := e.Landing().PreviewAccept(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	if p.Review != *r || !slices.Equal(p.Files, []string{"A\ttask.txt"}) || len(p.Commits) != 1 || p.Blocker != "" {
		t.Fatalf("accept --dry-run %+v differs from lazy diff's range %+v", p, r)
	}
}
