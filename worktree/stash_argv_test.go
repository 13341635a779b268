package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestStashInWorktreeOnlyWhenNothingWouldBeLost checks the test that lets
// a recovery drop lazy's stash: only when every file the stash holds is
// in the checkout exactly as stashed.
func TestStashInWorktreeOnlyWhenNothingWouldBeLost(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	write := func(dir, name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setup := func(t *testing.T) (string, string) {
		dir := testrepo.New(t)
		write(dir, "tracked.txt", "base\n")
		write(dir, "gone.txt", "base\n")
		testrepo.Git(t, dir, "add", ".")
		testrepo.Git(t, dir, "commit", "-q", "-m", "base")
		write(dir, "tracked.txt", "mine\n")
		write(dir, "new.txt", "untracked of mine\n")
		if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
			t.Fatal(err)
		}
		sha, err := StashPush(ctx, dir, "test")
		if err != nil {
			t.Fatal(err)
		}
		return dir, sha
	}
	for _, tc := range []struct {
		name  string
		after func(dir string)
		want  bool
	}{
		{"not applied", func(string) {}, false},
		{"applied", func(dir string) { testrepo.Git(t, dir, "stash", "apply", "-q") }, true},
		{"applied, then a tracked change edited", func(dir string) {
			testrepo.Git(t, dir, "stash", "apply", "-q")
			write(dir, "tracked.txt", "edited since\n")
		}, false},
		{"applied, then an untracked file removed", func(dir string) {
			testrepo.Git(t, dir, "stash", "apply", "-q")
			_ = os.Remove(filepath.Join(dir, "new.txt"))
		}, false},
		{"applied, then a deleted file brought back", func(dir string) {
			testrepo.Git(t, dir, "stash", "apply", "-q")
			write(dir, "gone.txt", "base\n")
		}, false},
		{"applied, plus unrelated new work", func(dir string) {
			testrepo.Git(t, dir, "stash", "apply", "-q")
			write(dir, "other.txt", "more\n")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, sha := setup(t)
			tc.after(dir)
			if got := StashInWorktree(ctx, dir, sha); got != tc.want {
				st, _ := testrepo.GitErr(dir, "status", "--porcelain")
				t.Fatalf("StashInWorktree = %v, want %v; status:\n%s", got, tc.want, strings.TrimSpace(st))
			}
		})
	}
}

// TestStashPushIsLazys: the stash accept keeps of the destination's
// uncommitted changes is lazy's bookkeeping, so it carries lazy's
// identity whatever the user's environment names (and works where the
// repository has no identity at all).
func TestStashPushIsLazys(t *testing.T) {
	ctx := context.Background()
	dir := testrepo.New(t)
	testrepo.Git(t, dir, "config", "--unset", "user.email")
	testrepo.Git(t, dir, "config", "--unset", "user.name")
	t.Setenv("GIT_COMMITTER_NAME", "Someone Else")
	t.Setenv("GIT_AUTHOR_EMAIL", "someone@else.invalid")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sha, err := StashPush(ctx, dir, "lazy accept x (id): yours")
	if err != nil {
		t.Fatal(err)
	}
	if got := testrepo.Git(t, dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>", sha); got != "lazy <lazy@lazy.invalid>|lazy <lazy@lazy.invalid>" {
		t.Fatalf("the stash reads %q", got)
	}
}
