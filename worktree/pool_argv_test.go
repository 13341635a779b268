package worktree

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

func TestPoolCommandsArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  []string
		want []string
	}{
		{"ref commit", argv(t, refCommitCmd("r", "refs/lazy/tasks/x")), []string{"rev-parse", "--verify", "--quiet", "refs/lazy/tasks/x^{commit}"}},
		{"fetch branch", argv(t, fetchBranchCmd("r", "origin", "lazy/x")), []string{"fetch", "--quiet", "--no-tags", "origin", "refs/heads/lazy/x:refs/heads/lazy/x"}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	ctx := context.Background()
	for _, bad := range [][2]string{{"-origin", "lazy/x"}, {"origin", "--all"}, {"origin", "a:b"}} {
		if FetchBranch(ctx, ".", bad[0], bad[1]) == nil {
			t.Errorf("FetchBranch(%q, %q) was not refused", bad[0], bad[1])
		}
	}
	if _, err := RefCommit(ctx, ".", "HEAD"); err == nil {
		t.Error("RefCommit read a non-ref")
	}
}

// TestFetchBranchOnlyFastForwards: a branch the remote moved ahead
// comes in; a local branch with commits the remote lacks is kept.
func TestFetchBranchOnlyFastForwards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := testrepo.New(t)
	testrepo.Git(t, src, "branch", "lazy/x")
	clone := filepath.Join(t.TempDir(), "c")
	testrepo.Git(t, t.TempDir(), "clone", "-q", src, clone)
	testrepo.Identity(t, clone)
	testrepo.Git(t, src, "commit", "-q", "--allow-empty", "-m", "ahead")
	testrepo.Git(t, src, "branch", "-f", "lazy/x", "HEAD")
	if err := FetchBranch(ctx, clone, "origin", "lazy/x"); err != nil {
		t.Fatal(err)
	}
	want := testrepo.Git(t, src, "rev-parse", "lazy/x")
	if got, err := RefCommit(ctx, clone, "refs/heads/lazy/x"); err != nil || got != want {
		t.Fatalf("lazy/x here is %q (%v), want %q", got, err, want)
	}
	testrepo.Git(t, clone, "branch", "-f", "lazy/x", "main")
	testrepo.Git(t, clone, "switch", "-q", "lazy/x")
	testrepo.Git(t, clone, "commit", "-q", "--allow-empty", "-m", "mine")
	testrepo.Git(t, clone, "switch", "-q", "main")
	mine := testrepo.Git(t, clone, "rev-parse", "lazy/x")
	if err := FetchBranch(ctx, clone, "origin", "lazy/x"); err == nil || !strings.Contains(err.Error(), "fast-forward") {
		t.Fatalf("a diverged branch was fetched over: %v", err)
	}
	if got := testrepo.Git(t, clone, "rev-parse", "lazy/x"); got != mine {
		t.Fatalf("the local commits were lost: %s, want %s", got, mine)
	}
}

func argv(t *testing.T, c interface{ Argv() ([]string, error) }) []string {
	t.Helper()
	a, err := c.Argv()
	if err != nil {
		t.Fatal(err)
	}
	return a
}
