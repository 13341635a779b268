package gitstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// TestSHA256Store: in a repository made by git init
// --object-format=sha256 the store creates, loads, lists and updates
// records named by SHA-256, with loose and packed objects and refs, and
// git finds every object it wrote well formed.
func TestSHA256Store(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "init", "-q", "-b", "main", "--object-format=sha256")
	repo, err := Discover(dir)
	if err != nil {
		t.Fatalf("a SHA-256 repository refused: %v", err)
	}
	if repo.ObjectFormat != gitrepo.SHA256 {
		t.Fatalf("object format %q, want sha256", repo.ObjectFormat)
	}
	s := Open(repo, WithHost("test-host"))
	sn := mustCreate(t, s, "sha256 task")
	if sn.Commit.Format() != gitrepo.SHA256 {
		t.Fatalf("record commit %s is not a SHA-256 id", sn.Commit)
	}
	if got := testrepo.Git(t, dir, "rev-parse", TaskRef(sn.Task.ID)); got != sn.Commit.String() {
		t.Fatalf("git reads the ref as %q, the store wrote %s", got, sn.Commit)
	}
	check := func(when string, wantStatus machine.Status) {
		t.Helper()
		got, err := s.Load(sn.Task.ID)
		if err != nil {
			t.Fatalf("%s: load: %v", when, err)
		}
		if goal, err := got.Goal(); err != nil || goal != "goal of sha256 task" || got.Task.Status != wantStatus {
			t.Fatalf("%s: loaded %+v, goal %q %v", when, got.Task, goal, err)
		}
		entries, err := s.List()
		if err != nil || len(entries) != 1 || entries[0].ID != sn.Task.ID || entries[0].Status != wantStatus {
			t.Fatalf("%s: list %+v %v", when, entries, err)
		}
		testrepo.Git(t, dir, "fsck", "--strict", "--no-dangling")
	}
	check("loose", machine.Backlog)
	testrepo.Git(t, dir, "gc", "-q")
	check("packed", machine.Backlog)
	if _, _, err := s.Update(context.Background(), sn.Task.ID, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Status = machine.Abandoned
		sn.Task.Outcome = task.OutcomeClosed
		return &task.Op{Name: "close", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatalf("update over a packed ref: %v", err)
	}
	check("updated", machine.Abandoned)
}
