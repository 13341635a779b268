package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// stashOf writes files into dir (tracked ones must exist already) and
// stashes everything, untracked included.
func stashOf(t *testing.T, dir, msg string, files map[string]string) string {
	t.Helper()
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sha, err := StashPush(context.Background(), dir, msg)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// TestFoldedStashRestoresBothInOrder: two stashes fold into one stash
// commit; git stash apply of it gives back both, untracked files
// included; its parts are the two, oldest first; a third folded on top
// that changes a line the others changed keeps every version between
// conflict markers, older first, and names the file.
func TestFoldedStashRestoresBothInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	if err := os.WriteFile(filepath.Join(dir, "other.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "add", "other.txt")
	testrepo.Git(t, dir, "commit", "-q", "-m", "other")
	s1 := stashOf(t, dir, "lazy accept a (0000000000000001): your uncommitted changes", map[string]string{"README.md": "# test\nolder\n", "u1.txt": "untracked 1\n"})
	// HEAD moves on between the two, as accepts land.
	if err := os.WriteFile(filepath.Join(dir, "landed.txt"), []byte("landed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "add", "landed.txt")
	testrepo.Git(t, dir, "commit", "-q", "-m", "landed")
	s2 := stashOf(t, dir, "lazy accept b (0000000000000002): your uncommitted changes", map[string]string{"other.txt": "one\nTWO\n"})
	f, err := FoldStashes(ctx, dir, "main", s1, s2, 2, nil)
	if err != nil || len(f.Conflicts) != 0 {
		t.Fatalf("fold: %+v, %v", f, err)
	}
	if parts, conflicts, err := StashParts(ctx, dir, f.SHA); err != nil || !slices.Equal(parts, []string{s1, s2}) || len(conflicts) != 0 {
		t.Fatalf("parts %v conflicts %v (%v), want %v", parts, conflicts, err, []string{s1, s2})
	}
	if err := StashApplies(ctx, dir, f.SHA); err != nil {
		t.Fatalf("the folded stash does not apply to the clean checkout: %v", err)
	}
	if err := StashApply(ctx, dir, f.SHA); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"README.md": "# test\nolder\n", "u1.txt": "untracked 1\n", "other.txt": "one\nTWO\n", "landed.txt": "landed\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s after applying the folded stash: %q %v, want %q", name, b, err, want)
		}
	}
	if !StashInWorktree(ctx, dir, f.SHA) {
		t.Error("the applied folded stash is not seen as back in the checkout")
	}

	// A third, newer, on top: it rewrote the line the first changed.
	s3 := stashOf(t, dir, "lazy accept c (0000000000000003): your uncommitted changes", map[string]string{"README.md": "# test\nnewer\n", "u3.txt": "untracked 3\n"})
	g, err := FoldStashes(ctx, dir, "main", f.SHA, s3, 3, f.Conflicts)
	if err != nil || !slices.Equal(g.Conflicts, []string{"README.md"}) {
		t.Fatalf("fold of a clashing third: %+v, %v", g, err)
	}
	parts, conflicts, err := StashParts(ctx, dir, g.SHA)
	if err != nil || !slices.Equal(parts, []string{s1, s2, s3}) || !slices.Equal(conflicts, []string{"README.md"}) {
		t.Fatalf("parts %v conflicts %v (%v)", parts, conflicts, err)
	}
	if subject := testrepo.Git(t, dir, "log", "-1", "--format=%s", g.SHA); subject != "On main: "+FoldedSubject+"3 interrupted accepts, oldest first" {
		t.Fatalf("subject %q", subject)
	}
	if err := StashApply(ctx, dir, g.SHA); err != nil {
		t.Fatal(err)
	}
	readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	older, newer := strings.Index(string(readme), "older"), strings.Index(string(readme), "newer")
	if older < 0 || newer < older || !strings.Contains(string(readme), "<<<<<<< ") || !strings.Contains(string(readme), ">>>>>>> ") {
		t.Fatalf("README.md keeps both versions, older first, between markers: %q", readme)
	}
	for _, name := range []string{"u1.txt", "u3.txt", "other.txt", "landed.txt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s is not back: %v", name, err)
		}
	}
	if _, err := FoldStashes(ctx, dir, "main", "-x", s3, 2, nil); err == nil {
		t.Fatal("an option was taken for a stash")
	}
}
