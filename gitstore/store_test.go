package gitstore

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

func open(t testing.TB) (*Store, string) {
	t.Helper()
	dir := testrepo.New(t)
	repo, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	return Open(repo, WithHost("test-host")), dir
}

func mustCreate(t testing.TB, s *Store, title string) *task.Snapshot {
	t.Helper()
	sn, err := s.Create(task.CreateSpec{Title: title, Goal: "goal of " + title, Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

// TestCreateLoadRoundTrip: the record is plain git (the suite of
// task/storetest holds the rest of a create).
func TestCreateLoadRoundTrip(t *testing.T) {
	s, dir := open(t)
	sn := mustCreate(t, s, "Fix the flaky login test")
	// The record is plain git: the tree holds the snapshot and the
	// commit carries the trailers.
	ls := testrepo.Git(t, dir, "ls-tree", "--name-only", TaskRef(sn.Task.ID))
	for _, want := range []string{"task.json", "goal.md", "violations.json", "op.json"} {
		if !strings.Contains(ls, want) {
			t.Errorf("tree lacks %s:\n%s", want, ls)
		}
	}
	msg := testrepo.Git(t, dir, "log", "-1", "--format=%B", TaskRef(sn.Task.ID))
	for _, want := range []string{"Lazy-Op: create", "Lazy-Actor: human", "Lazy-To: backlog", "Lazy-Clock: 1", "Lazy-Host: test-host", "Lazy-Task: " + sn.Task.ID} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit message lacks %q:\n%s", want, msg)
		}
	}
	testrepo.Git(t, dir, "fsck", "--strict", "--no-dangling")
}

// TestUnchangedBlobsAreReused: an operation rewrites only what it
// changed; goal.md keeps its hash across operations (the suite of
// task/storetest holds the rest of an update).
func TestUnchangedBlobsAreReused(t *testing.T) {
	s, dir := open(t)
	sn := mustCreate(t, s, "task")
	got, _, err := s.Update(context.Background(), sn.Task.ID, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Status = machine.Abandoned
		sn.Task.Outcome = task.OutcomeClosed
		sn.AddComment(task.Comment{Actor: machine.Human, Text: "dup"})
		return &task.Op{Name: "close", Actor: machine.Human}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	hist, err := s.History(got)
	if err != nil || len(hist) != 2 {
		t.Fatalf("history %+v %v", hist, err)
	}
	// Unchanged blobs are reused: goal.md keeps its hash across ops.
	g1 := testrepo.Git(t, dir, "rev-parse", hist[0].Commit.String()+":goal.md")
	g2 := testrepo.Git(t, dir, "rev-parse", hist[1].Commit.String()+":goal.md")
	if g1 != g2 {
		t.Fatalf("goal blob rewritten: %s vs %s", g1, g2)
	}
}

// TestListBatchPathIsolatesCorruptRecords lists enough uncached tasks to
// take the git cat-file path, with one record vandalized by hand.
func TestListBatchPathIsolatesCorruptRecords(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	s, dir := open(t)
	var ids []string
	for i := 0; i < batchThreshold+20; i++ {
		ids = append(ids, mustCreate(t, s, fmt.Sprintf("t%d", i)).Task.ID)
	}
	bad := ids[7]
	ref := TaskRef(bad)
	blob := testrepo.Git(t, dir, "hash-object", "-w", "--stdin", "--path", "task.json") // empty blob: not JSON
	tree := strings.TrimSpace(gitIn(t, dir, "100644 blob "+blob+"\ttask.json\n", "mktree"))
	testrepo.Git(t, dir, "update-ref", ref, testrepo.Git(t, dir, "commit-tree", "-p", ref, "-m", "x", tree))
	list, err := Open(s.repo).List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(ids) {
		t.Fatalf("%d entries for %d tasks", len(list), len(ids))
	}
	for _, e := range list {
		if e.ID == bad {
			if e.Err == nil || !strings.Contains(e.Err.Error(), "corrupt") {
				t.Fatalf("vandalized record: %+v", e)
			}
			continue
		}
		if sum, err := e.Summary(); err != nil || sum.ID != e.ID || e.Status != machine.Backlog {
			t.Fatalf("entry %s: %+v %v", e.ID, sum, err)
		}
	}
}

func gitIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// newOID reads a hex id as plumbing.NewHash did: the zero id when it is
// not one.
func newOID(s string) gitrepo.OID {
	id, _ := gitrepo.ParseOID(s)
	return id
}
