package gitstore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestBulkReaderMatchesCatFile reads honest and vandalized records
// through the bulk reader and through the cat-file path it replaced, from
// loose objects, then packed, then with a replace ref: every record must
// come out the same, errors included.
func TestBulkReaderMatchesCatFile(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
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
	if err := s.repo.CompareAndSwap(TaskRef(ids[9]), honest, newOID(odd)); err != nil {
		t.Fatal(err) // git update-ref refuses the commit
	}
	plantHuge(t, s, ids[10], MaxMetaRecord+1)
	// A tree whose entries are out of order: git stops at "zz".
	vandalize(11, "100644 blob "+goal+"\tzz\n100644 blob "+taskBlob(11)+"\ttask.json\n")

	check := func(what string) {
		t.Helper()
		fresh := Open(s.repo)
		commits := make([]gitrepo.OID, len(ids))
		for i, id := range ids {
			commits[i] = mustRef(t, fresh, id)
		}
		bulk, err := fresh.lister().bulkSummaries(ids, commits)
		if err != nil {
			t.Fatal(err)
		}
		cat, err := Open(s.repo).lister().batchSummaries(ids, commits)
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
	if err := s.repo.CompareAndSwap(TaskRef(ids[9]), newOID(odd), honest); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(filepath.Join(s.repo.CommonDir, "objects"), odd[:2], odd[2:])); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "gc", "-q")
	check("packed")
	testrepo.Git(t, dir, "replace", testrepo.Git(t, dir, "rev-parse", TaskRef(ids[12])+":task.json"), taskBlob(13))
	if !s.repo.HasReplaceRefs() {
		t.Fatal("the replace ref is not seen")
	}
	check("replace ref")
	testrepo.Git(t, dir, "pack-refs", "--all")
	if !s.repo.HasReplaceRefs() {
		t.Fatal("the packed replace ref is not seen")
	}
}
