package landing

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/worktree"
)

// keptStashOf stashes what is written to dir as an accept of task id
// would, and records it as the accept does.
func keptStashOf(t *testing.T, e *Service, dir, id string, files map[string]string) string {
	t.Helper()
	for f, b := range files {
		write(t, dir, f, b)
	}
	sha, err := e.Stashes().stashPush(context.Background(), dir, stashMessage("task-"+id[:4], id))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Stashes().keepStash(context.Background(), dir, id, sha); err != nil {
		t.Fatal(err)
	}
	return sha
}

// TestOwedStashesFoldIntoOnePerCheckout: three owed stashes of one
// checkout. A fold killed right after it recorded the folded stash, and
// before it let go of the stashes it folds, leaves them all reachable:
// listing (which writes nothing) reports the folded one once, not its
// parts again. Mending folds the third in and lets go of the rest; the
// one stash lists its parts oldest first and the file they clash on,
// and restores all of them, refusing first a checkout with changes of
// its own.
func TestOwedStashesFoldIntoOnePerCheckout(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	e := env(t)
	dir := filepath.Dir(e.Repo.CommonDir)
	e.RepoDir = dir
	ids := []string{"00000000000000a1", "00000000000000a2", "00000000000000a3"}
	s1 := keptStashOf(t, e, dir, ids[0], map[string]string{"README.md": "# test\nedit 1\n", "n1.txt": "note 1\n"})
	s2 := keptStashOf(t, e, dir, ids[1], map[string]string{"README.md": "# test\nedit 2\n", "n2.txt": "note 2\n"})
	s3 := keptStashOf(t, e, dir, ids[2], map[string]string{"README.md": "# test\nedit 3\n", "n3.txt": "note 3\n"})

	// A fold of the first two, recorded, then killed.
	f, err := worktree.FoldStashes(ctx, dir, "main", s1, s2, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := worktree.SwapRef(ctx, dir, owedRef("main"), f.SHA, "", "test"); err != nil {
		t.Fatal(err)
	}
	refsBefore := testrepo.Git(t, dir, "for-each-ref", "refs/lazy-kept/")
	owed, err := e.Stashes().OwedStashes(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	var shas []string
	for _, o := range owed {
		shas = append(shas, o.SHA)
	}
	if !slices.Equal(shas, []string{f.SHA, s3}) && !slices.Equal(shas, []string{s3, f.SHA}) {
		t.Fatalf("owed %v, want the folded %s and %s, not its parts again", shas, f.SHA, s3)
	}
	if after := testrepo.Git(t, dir, "for-each-ref", "refs/lazy-kept/"); after != refsBefore {
		t.Fatalf("listing wrote refs:\n%s\nwas:\n%s", after, refsBefore)
	}

	owed, err = e.Stashes().OwedStashes(ctx, true)
	if err != nil || len(owed) != 1 {
		t.Fatalf("mended: %+v, %v", owed, err)
	}
	o := owed[0]
	var parts []string
	for _, p := range o.Parts {
		parts = append(parts, p.SHA)
	}
	if !slices.Equal(parts, []string{s1, s2, s3}) || !slices.Equal(o.Conflicts, []string{"README.md"}) || o.Target != "main" || o.Dir != dir || o.Parts[0].TaskID != ids[0] {
		t.Fatalf("the folded stash: %+v", o)
	}
	if refs := strings.Fields(testrepo.Git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/lazy-kept/")); !slices.Equal(refs, []string{owedRef("main"), o.SHA}) {
		t.Fatalf("refs after the fold: %v, want only %s at %s", refs, owedRef("main"), o.SHA)
	}
	if list := strings.Fields(testrepo.Git(t, dir, "stash", "list", "--format=%H")); !slices.Equal(list, []string{o.SHA}) {
		t.Fatalf("stash list %v, want only %s", list, o.SHA)
	}
	for _, w := range []string{"from 3 interrupted accepts", "stash apply " + o.SHA, "README.md will hold both versions"} {
		if !strings.Contains(o.Describe(), w) {
			t.Errorf("%q does not say %q", o.Describe(), w)
		}
	}

	// Restore: refused over the user's own changes, then everything.
	write(t, dir, "README.md", "# test\nmine now\n")
	if _, err := e.Stashes().RestoreOwed(ctx, "main"); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("restore over changes: %v", err)
	}
	if read(t, dir, "README.md") != "# test\nmine now\n" {
		t.Fatal("a refused restore changed the checkout")
	}
	testrepo.Git(t, dir, "checkout", "--", "README.md")
	got, err := e.Stashes().RestoreOwed(ctx, "main")
	if err != nil || got.SHA != o.SHA {
		t.Fatalf("restore: %+v, %v", got, err)
	}
	readme := read(t, dir, "README.md")
	for _, want := range []string{"edit 1", "edit 2", "edit 3"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md after the restore lacks %q: %q", want, readme)
		}
	}
	for i := 1; i <= 3; i++ {
		if b, err := os.ReadFile(filepath.Join(dir, "n"+string(rune('0'+i))+".txt")); err != nil || !strings.Contains(string(b), "note") {
			t.Errorf("note %d after the restore: %q %v", i, b, err)
		}
	}
	if owed, err := e.Stashes().OwedStashes(ctx, true); err != nil || len(owed) != 0 {
		t.Fatalf("owed after the restore: %+v, %v", owed, err)
	}
	if refs := testrepo.Git(t, dir, "for-each-ref", "refs/lazy-kept/"); refs != "" {
		t.Fatalf("refs after the restore: %s", refs)
	}
}
