package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// allocDuring reports the bytes the Go heap allocated while fn ran. Any
// read of a 100 MB record (go-git decompressing it, or the output of a git
// cat-file that printed it) would allocate at least that much.
func allocDuring(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// plantHuge replaces the task.json of id with a blob of size bytes (valid
// JSON up front, so only the size is wrong) in a commit on its ref.
func plantHuge(t *testing.T, s *Store, id string, size int) gitrepo.OID {
	t.Helper()
	sn, err := s.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte(" "), size)
	copy(big, `{"id":"`+id+`"}`)
	blob, err := s.objs.Write(gitrepo.Blob, big)
	if err != nil {
		t.Fatal(err)
	}
	var entries []treeEntry
	for name, e := range entriesOf(sn) {
		if name == fileTask {
			e.Hash = blob
		}
		entries = append(entries, e)
	}
	tree, err := gitrepo.WriteTree(s.objs, entries)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.objs.Write(gitrepo.Commit, encodeCommit(tree, sn.Commit, "attacker", s.now(), "huge\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.repo.CompareAndSwap(TaskRef(id), sn.Commit, c); err != nil {
		t.Fatal(err)
	}
	return blob
}

const (
	hugeRecord = 100 << 20
	// readBudget is well above what pulling or listing 80 small tasks
	// allocates (about 30 MB under -race) and well below the huge record:
	// reading it allocates at least its 100 MB.
	readBudget = 64 << 20
)

// TestOversizeRecordIsNeverRead: an attacker clone pushes a task whose
// task.json is 100 MB. Pull reports it without taking it in; list (the
// batch cat-file path, the go-git path and the cache), show (Load) and
// both loose and packed objects report it as oversize, and none of them
// allocates anything near its size: its content is never read.
func TestOversizeRecordIsNeverRead(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 100 MB object")
	}
	victim, attacker := twoClones(t)
	for i := 0; i < batchThreshold+10; i++ {
		mustCreate(t, attacker, fmt.Sprintf("honest %d", i))
	}
	huge := mustCreate(t, attacker, "huge").Task.ID
	plantHuge(t, attacker, huge, hugeRecord)
	mustPush(t, attacker)

	var rep *SyncReport
	var err error
	if n := allocDuring(func() { rep, err = victim.Sync().Pull(context.Background(), "origin") }); n > readBudget {
		t.Fatalf("pull allocated %d MB: it read the huge record", n>>20)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Created) != batchThreshold+10 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "over lazy's size limit") {
		t.Fatalf("pull: created %d, skipped %+v", len(rep.Created), rep.Skipped)
	}

	check := func(what string, s *Store) {
		t.Helper()
		var list []task.Entry
		if n := allocDuring(func() { list, err = s.List() }); n > readBudget {
			t.Fatalf("%s: list allocated %d MB: it read the huge record", what, n>>20)
		}
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range list {
			if e.ID == huge {
				found = true
				if !errors.Is(e.Err, ErrOversize) && !strings.Contains(fmt.Sprint(e.Err), "over lazy's size limit") {
					t.Fatalf("%s: the huge record lists as %+v", what, e)
				}
			} else if e.Err != nil {
				t.Fatalf("%s: an honest record is hidden: %v", what, e.Err)
			}
		}
		if !found {
			t.Fatalf("%s: list lost the huge record", what)
		}
		if n := allocDuring(func() { _, err = s.Load(huge) }); n > readBudget || !errors.Is(err, ErrOversize) {
			t.Fatalf("%s: load allocated %d MB and said %v", what, n>>20, err)
		}
	}
	cache := attacker.repo.LazyDir("cache", cacheFile)
	_ = os.Remove(cache)
	check("loose, batch path", attacker) // 75 misses: git cat-file
	check("loose, cached", attacker)
	summary := func(what string) {
		t.Helper()
		// A few misses go through go-git: the same check, in process.
		if n := allocDuring(func() { _, err = Open(attacker.repo).lister().readSummary(huge, mustRef(t, attacker, huge)) }); n > readBudget || !errors.Is(err, ErrOversize) {
			t.Fatalf("%s, go-git path: allocated %d MB and said %v", what, n>>20, err)
		}
	}
	summary("loose")
	testrepo.Git(t, attacker.repo.CommonDir, "gc", "-q")
	attacker.objs.(*gitrepo.Local).Objects().Refresh() // the packs the store mapped before gc are gone
	_ = os.Remove(cache)
	check("packed, batch path", attacker)
	summary("packed")
}

func mustRef(t *testing.T, s *Store, id string) gitrepo.OID {
	t.Helper()
	h, ok, err := s.objs.ReadRef(TaskRef(id))
	if err != nil || !ok {
		t.Fatalf("ref of %s: %v", id, err)
	}
	return h
}

// TestWritesStayUnderTheReadLimits: lazy refuses to write a record it
// could not read back, with an error that says what to do.
func TestWritesStayUnderTheReadLimits(t *testing.T) {
	s, _ := open(t)
	id := mustCreate(t, s, "limits").Task.ID
	_, _, err := s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.AllowedPaths = []string{strings.Repeat("p", MaxMetaRecord)}
		return &task.Op{Name: "allow", Actor: machine.Human}, nil
	})
	if err == nil || !strings.Contains(err.Error(), "over lazy's limit") || !strings.Contains(err.Error(), "nothing was saved") {
		t.Fatalf("oversize task.json: %v", err)
	}
	_, _, err = s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.SetGoal(strings.Repeat("g", MaxTextRecord+1))
		return &task.Op{Name: "edit", Actor: machine.Human}, nil
	})
	if err == nil || !strings.Contains(err.Error(), "goal.md") {
		t.Fatalf("oversize goal: %v", err)
	}
	if _, err := s.Load(id); err != nil {
		t.Fatalf("the task is unreadable after refused writes: %v", err)
	}
}
