package gitstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// TestRefStampMovesWithTheRefs: the stamp stays while no task ref moves,
// and moves when one is updated, created or packed. The stamped files are
// aged before each step, as time would between passes: within one
// timestamp tick a stamp may stay (which RefStamp's newest is for).
func TestRefStampMovesWithTheRefs(t *testing.T) {
	dir := testrepo.New(t)
	repo, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := Open(repo)
	stamp := func() string {
		t.Helper()
		st, _, err := RefStamp(repo, TasksPrefix)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	old := time.Now().Add(-time.Hour)
	age := func() {
		t.Helper()
		for _, p := range []string{filepath.Join(repo.CommonDir, "packed-refs"), filepath.Join(repo.CommonDir, "refs", "lazy", "tasks")} {
			if err := os.Chtimes(p, old, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
	}
	empty := stamp()
	sn, err := s.Create(task.CreateSpec{Title: "one", Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	if stamp() == empty {
		t.Fatal("creating the first task left the stamp as it was")
	}
	age()
	created := stamp()
	if stamp() != created {
		t.Fatal("the stamp moved while no ref did")
	}
	if _, _, err := s.Update(context.Background(), sn.Task.ID, func(x *task.Snapshot) (*task.Op, error) {
		x.Task.Title = "two"
		return &task.Op{Name: "edit", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if stamp() == created {
		t.Fatal("an update left the stamp as it was")
	}
	age()
	updated := stamp()
	testrepo.Git(t, dir, "pack-refs", "--all", "--prune")
	if stamp() == updated {
		t.Fatal("packing the refs left the stamp as it was")
	}
}

// TestWatchIsTheRefStamp: the store's Watch, taken through the task.Store
// port, stamps what RefStamp stamps: it stays while no task changes,
// moves when one does, and answers the same once closed.
func TestWatchIsTheRefStamp(t *testing.T) {
	dir := testrepo.New(t)
	repo, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	var st task.Store = Open(repo)
	sn, err := st.Create(task.CreateSpec{Title: "one", Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	w := st.Watch()
	defer func() { _ = w.Close() }()
	check := func() string {
		t.Helper()
		got, _, err := w.Stamp()
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := RefStamp(repo, TasksPrefix)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("the watch stamps %q, RefStamp %q", got, want)
		}
		return got
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(repo.CommonDir, "refs", "lazy", "tasks"), old, old); err != nil {
		t.Fatal(err)
	}
	before := check()
	if check() != before {
		t.Fatal("the watch's stamp moved while no task did")
	}
	if _, _, err := st.Update(context.Background(), sn.Task.ID, func(x *task.Snapshot) (*task.Op, error) {
		x.Task.Title = "two"
		return &task.Op{Name: "edit", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if check() == before {
		t.Fatal("an update left the watch's stamp as it was")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	check()
}
