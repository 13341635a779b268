package worktree

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// A read-only turn that commits, edits, stages, deletes, adds files and
// switches branches is undone exactly, and what it wrote is kept.
func TestRestoreUndoesAReadOnlyTurnAndKeepsWhatItWrote(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	write(t, dir, "tracked.txt", "one\n")
	write(t, dir, "gone.txt", "will be deleted\n")
	testrepo.Git(t, dir, "add", ".")
	testrepo.Git(t, dir, "commit", "-q", "-m", "base")
	// The human's own uncommitted work, staged and not, and untracked.
	write(t, dir, "tracked.txt", "one\nstaged\n")
	testrepo.Git(t, dir, "add", "tracked.txt")
	write(t, dir, "tracked.txt", "one\nstaged\nunstaged\n")
	write(t, dir, "mine.txt", "untracked, mine\n")
	write(t, dir, ".gitignore", "build/\n")

	before, err := Capture(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	// What the "read-only" turn does.
	write(t, dir, "tracked.txt", "overwritten\n")
	write(t, dir, "new.txt", "added by the ask\n")
	testrepo.Git(t, dir, "add", "-A")
	testrepo.Git(t, dir, "commit", "-q", "-m", "ask committed")
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "later.txt", "untracked, by the ask\n")
	testrepo.Git(t, dir, "checkout", "-q", "-b", "elsewhere")

	mid, err := Capture(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if Written(ctx, dir, before, mid) == "" {
		t.Fatal("Written saw nothing")
	}
	after, err := Restore(ctx, dir, before, "refs/lazy-kept/test/ask-1", "what the ask wrote")
	if err != nil {
		t.Fatal(err)
	}
	if after != mid {
		t.Fatalf("Restore reported %+v, want the state it undid %+v", after, mid)
	}
	again, err := Capture(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if again != before {
		t.Fatalf("after Restore: %+v, want %+v", again, before)
	}
	for name, want := range map[string]string{"tracked.txt": "one\nstaged\nunstaged\n", "mine.txt": "untracked, mine\n", "gone.txt": "will be deleted\n"} {
		if got := read(t, dir, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"new.txt", "later.txt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s, written by the ask, is still there", name)
		}
	}
	if staged := testrepo.Git(t, dir, "diff", "--cached", "--name-only"); staged != "tracked.txt" {
		t.Errorf("staged after Restore: %q", staged)
	}
	if got := testrepo.Git(t, dir, "show", "refs/lazy-kept/test/ask-1:later.txt"); got != "untracked, by the ask" {
		t.Errorf("the kept commit lacks what the ask wrote: %q", got)
	}
	// Nothing changed: nothing kept, nothing touched.
	if _, err := Restore(ctx, dir, before, "refs/lazy-kept/test/ask-2", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := testrepo.GitErr(dir, "rev-parse", "--verify", "refs/lazy-kept/test/ask-2"); err == nil {
		t.Error("a turn that wrote nothing left a kept ref")
	}
}
