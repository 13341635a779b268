package gitstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestBulkReaderMatchesCatFile reads honest and vandalized records
// through the bulk reader and through the cat-file path it replaced, from
// loose objects, then packed, then with a replace ref: every record must
// come out the same, errors included.
func TestBulkReaderMatchesCatFile(t *testing.T) {
	s, dir := open(t)
	var ids []string
	for i := 0; i < 40; i++ {
		ids = append(ids, mustCreate(t, s, fmt.Sprintf("honest %d", i)).Task.ID)
	}
	git := func(stdin string, args ...string) string {
		t.Helper()
		return strings.TrimSpace(gitIn(t, dir, stdin, args...))
	}
	// vandalize points task ids[k] at a commit of the given tree lines.
	vandalize := func(k int, tree string) {
		t.Helper()
		treeHash := git(tree, "mktree")
		ref := TaskRef(ids[k])
		testrepo.Git(t, dir, "update-ref", ref, testrepo.Git(t, dir, "commit-tree", "-p", ref, "-m", "x", treeHash))
	}
	blob := func(content string) string {
		t.Helper()
		return git(content, "hash-object", "-w", "--stdin")
	}
	taskBlob := func(k int) string {
		t.Helper()
		return testrepo.Git(t, dir, "rev-parse", TaskRef(ids[k])+":task.json")
	}
	goal := blob("goal")
	vandalize(0, "100644 blob "+blob("")+"\ttask.json\n")          // not JSON
	vandalize(1, "100755 blob "+taskBlob(1)+"\ttask.json\n")       // executable
	vandalize(2, "040000 tree "+git("", "mktree")+"\ttask.json\n") // a directory
	vandalize(3, "100644 blob "+goal+"\tgoal.md\n")                // no task.json
	vandalize(4, "120000 blob "+blob("task.json")+"\ttask.json\n") // a symlink
	vandalize(5, "100644 blob "+taskBlob(5)+"\ttask.json\n100644 blob "+goal+"\tzz\n")
	vandalize(6, "100644 blob "+blob(`{"id":"`+ids[6]+`","status":"nope"}`)+"\ttask.json\n")
	// A ref naming a tag of the commit, and one naming a blob.
	tag := git("object "+testrepo.Git(t, dir, "rev-parse", TaskRef(ids[7]))+"\ntype commit\ntag t\ntagger b <b@b> 0 +0000\n\nt\n", "hash-object", "-t", "tag", "-w", "--stdin")
	testrepo.Git(t, dir, "update-ref", "--no-deref", TaskRef(ids[7]), tag)
	testrepo.Git(t, dir, "update-ref", TaskRef(ids[8]), goal)
	// A commit whose first line is not its tree.
	odd := git("author b <b@b> 0 +0000\ntree "+testrepo.Git(t, dir, "rev-parse", TaskRef(ids[9])+"^{tree}")+"\n\nx\n", "hash-object", "-t", "commit", "--literally", "-w", "--stdin")
	honest := mustRef(t, s, ids[9])
	if err := s.repo.CompareAndSwap(TaskRef(ids[9]), honest, plumbing.NewHash(odd)); err != nil {
		t.Fatal(err) // git update-ref refuses the commit
	}
	plantHuge(t, s, ids[10], MaxMetaRecord+1)
	// A tree whose entries are out of order: git stops at "zz".
	vandalize(11, "100644 blob "+goal+"\tzz\n100644 blob "+taskBlob(11)+"\ttask.json\n")

	check := func(what string) {
		t.Helper()
		fresh := Open(s.repo)
		commits := make([]plumbing.Hash, len(ids))
		for i, id := range ids {
			commits[i] = mustRef(t, fresh, id)
		}
		bulk, err := fresh.bulkSummaries(ids, commits)
		if err != nil {
			t.Fatal(err)
		}
		cat, err := Open(s.repo).batchSummaries(ids, commits)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			got := (&cached{id: id, cacheRec: bulk[i]}).entry()
			want := (&cached{id: id, cacheRec: cat[i]}).entry()
			if fmt.Sprint(got) != fmt.Sprint(want) || bulk[i].transient != cat[i].transient {
				t.Errorf("%s, record %d (%s):\n bulk %+v\n  cat %+v", what, i, id, got, want)
			}
		}
	}
	check("loose")
	// git gc refuses to pack the commit git cannot parse.
	if err := s.repo.CompareAndSwap(TaskRef(ids[9]), plumbing.NewHash(odd), honest); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(s.objs.dir, odd[:2], odd[2:])); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "gc", "-q")
	check("packed")
	testrepo.Git(t, dir, "replace", testrepo.Git(t, dir, "rev-parse", TaskRef(ids[12])+":task.json"), taskBlob(13))
	if !s.repo.hasReplaceRefs() {
		t.Fatal("the replace ref is not seen")
	}
	check("replace ref")
	testrepo.Git(t, dir, "pack-refs", "--all")
	if !s.repo.hasReplaceRefs() {
		t.Fatal("the packed replace ref is not seen")
	}
}

// FuzzPatchDelta holds patchDelta to go-git's PatchDelta, which the pack
// reader used before: never a panic, and the same result whenever both
// apply a delta (go-git refuses an empty base, which git allows).
func FuzzPatchDelta(f *testing.F) {
	f.Add([]byte("hello world"), []byte{11, 5, 0x91, 6, 5})
	f.Add([]byte("abc"), []byte{3, 4, 0x90, 3, 1, 'd'})
	f.Add([]byte(""), []byte{0, 2, 2, 'h', 'i'})
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		got, ok := patchDelta(nil, base, delta, bulkMaxObject)
		if !ok {
			// The reverse holds where git's patch_delta would apply it:
			// git refuses a delta under four bytes, and patchDelta a
			// truncated size (git reads the bits it has), which then
			// goes to git to read.
			_, rest, ok1 := deltaSize(delta)
			_, _, ok2 := deltaSize(rest)
			if want, err := packfile.PatchDelta(base, delta); err == nil && len(want) <= bulkMaxObject && len(delta) >= 4 && ok1 && ok2 {
				t.Fatalf("patchDelta refuses a delta go-git applies, to %q", want)
			}
			return
		}
		if len(base) > 0 {
			want, err := packfile.PatchDelta(base, delta)
			if err != nil {
				t.Fatalf("patchDelta applied a delta go-git refuses: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("patchDelta = %q, go-git %q", got, want)
			}
		}
	})
}

func TestTreeFind(t *testing.T) {
	h := bytes.Repeat([]byte{1}, 20)
	ent := func(mode, name string) string { return mode + " " + name + "\x00" + string(h) }
	for _, c := range []struct {
		tree string
		ok   bool
	}{
		{ent("100644", "goal.md") + ent("100644", "task.json"), true},
		{ent("100644", "task.json") + ent("40000", "turns"), true},
		{ent("100755", "task.json"), false},
		{ent("100644", "zz") + ent("100644", "task.json"), false}, // git stops at zz
		{ent("100644", "task") + ent("100644", "task.json"), true},
		{ent("100644", "task.json") + ent("100644", "task.json"), true},
		{ent("100644", "task.json") + "100644 x\x00", false}, // truncated
		{ent("10064x", "task.json"), false},
		{ent("100644", ""), false},
		{"", false},
	} {
		if _, ok := treeFind([]byte(c.tree), fileTask); ok != c.ok {
			t.Errorf("treeFind(%q) = %v, want %v", c.tree, ok, c.ok)
		}
	}
}
