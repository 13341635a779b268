package worktree

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestCreateArgv pins the two git commands a start's worktree takes.
func TestCreateArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		argv func() ([]string, error)
		want []string
	}{
		{"read both refs", commitsCmd("r").Argv, []string{"cat-file", "--batch-check"}},
		{"new branch at the commit read", createCmd("r", "lazy/x", "/w/x", "abc").Argv, []string{"worktree", "add", "--quiet", "-b", "lazy/x", "/w/x", "abc"}},
	} {
		if got, err := tc.argv(); err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: argv %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestCreateOnARealRepository: a new branch starts at its base's commit
// (which Create returns), an existing branch is checked out as it is
// (its work kept), a missing base is named, and a base name that would
// smuggle a second query into git's batch is refused before git runs.
func TestCreateOnARealRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := testrepo.New(t)
	base := testrepo.Git(t, repo, "rev-parse", "HEAD")
	wts := t.TempDir()

	sha, err := Create(ctx, repo, filepath.Join(wts, "a"), "lazy/a", "main")
	if err != nil || sha != base {
		t.Fatalf("new branch: %q %v, want %s", sha, err, base)
	}
	if got := testrepo.Git(t, filepath.Join(wts, "a"), "rev-parse", "HEAD"); got != base {
		t.Fatalf("the new worktree's HEAD is %s, want %s", got, base)
	}
	if got := testrepo.Git(t, filepath.Join(wts, "a"), "symbolic-ref", "--short", "HEAD"); got != "lazy/a" {
		t.Fatalf("the new worktree is on %s", got)
	}

	// A restarted task: its branch holds work past main, kept.
	testrepo.Git(t, repo, "branch", "lazy/b", "main")
	wb := filepath.Join(wts, "b-old")
	testrepo.Git(t, repo, "worktree", "add", "-q", wb, "lazy/b")
	if err := os.WriteFile(filepath.Join(wb, "work.txt"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, wb, "add", "work.txt")
	testrepo.Git(t, wb, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "-m", "work")
	work := testrepo.Git(t, wb, "rev-parse", "HEAD")
	testrepo.Git(t, repo, "worktree", "remove", wb)
	sha, err = Create(ctx, repo, filepath.Join(wts, "b"), "lazy/b", "main")
	if err != nil || sha != work {
		t.Fatalf("existing branch: %q %v, want its own tip %s", sha, err, work)
	}

	if _, err := Create(ctx, repo, filepath.Join(wts, "c"), "lazy/c", "no-such"); err == nil || !strings.Contains(err.Error(), `base branch "no-such" does not exist`) {
		t.Fatalf("missing base: %v", err)
	}
	for _, hostile := range []string{"main\nrefs/heads/lazy/b", "main x"} {
		if _, err := Create(ctx, repo, filepath.Join(wts, "d"), "lazy/d", hostile); err == nil || !strings.Contains(err.Error(), "not a branch name") {
			t.Fatalf("base %q: %v", hostile, err)
		}
	}
	if out := testrepo.Git(t, repo, "branch", "--list", "lazy/c", "lazy/d"); out != "" {
		t.Fatalf("a refused create left a branch: %q", out)
	}
}
