package gitstore

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

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

func TestCreateLoadRoundTrip(t *testing.T) {
	s, dir := open(t)
	sn := mustCreate(t, s, "Fix the flaky login test")
	if sn.Task.Slug != "fix-the-flaky-login-test" || sn.Task.Status != machine.Backlog || !task.ValidID(sn.Task.ID) {
		t.Fatalf("created %+v", sn.Task)
	}
	got, err := s.Load(sn.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Task.Title != "Fix the flaky login test" || got.Commit != sn.Commit {
		t.Fatalf("loaded %+v at %s", got.Task, got.Commit)
	}
	goal, err := got.Goal()
	if err != nil || goal != "goal of Fix the flaky login test" {
		t.Fatalf("goal %q %v", goal, err)
	}
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

func TestSlugsAreUnique(t *testing.T) {
	s, _ := open(t)
	a := mustCreate(t, s, "same title")
	b := mustCreate(t, s, "same title")
	c := mustCreate(t, s, "Same  Title!")
	if a.Task.Slug != "same-title" || b.Task.Slug != "same-title-2" || c.Task.Slug != "same-title-3" {
		t.Fatalf("slugs %s %s %s", a.Task.Slug, b.Task.Slug, c.Task.Slug)
	}
	if _, err := s.Create(task.CreateSpec{Title: "x", Slug: "same-title", Actor: machine.Human}); err == nil || !strings.Contains(err.Error(), "already taken") {
		t.Fatalf("explicit duplicate slug: %v", err)
	}
	if _, err := s.Create(task.CreateSpec{Title: "x", Slug: "../../etc", Actor: machine.Human}); err == nil || !strings.Contains(err.Error(), "invalid slug") {
		t.Fatalf("hostile slug: %v", err)
	}
}

func TestUpdateTransitionsThroughMachine(t *testing.T) {
	s, dir := open(t)
	sn := mustCreate(t, s, "task")
	id := sn.Task.ID
	_, _, err := s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Status = machine.Merging
		return &task.Op{Name: "bogus", Actor: machine.Human}, nil
	})
	if !errors.Is(err, machine.ErrTransition) {
		t.Fatalf("backlog -> merging: %v", err)
	}
	got, _, err := s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Status = machine.Abandoned
		sn.Task.Outcome = task.OutcomeClosed
		sn.AddComment(task.Comment{Actor: machine.Human, Text: "dup"})
		return &task.Op{Name: "close", Actor: machine.Human}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Task.Status != machine.Abandoned || got.Task.Clock != 2 || got.Task.Comments != 1 {
		t.Fatalf("after close: %+v", got.Task)
	}
	hist, err := s.History(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[1].From != machine.Backlog || hist[1].To != machine.Abandoned || hist[1].Op != "close" || hist[1].Actor != machine.Human {
		t.Fatalf("history %+v", hist)
	}
	cs, err := s.Comments(got)
	if err != nil || len(cs) != 1 || cs[0].Text != "dup" {
		t.Fatalf("comments %+v %v", cs, err)
	}
	// Unchanged blobs are reused: goal.md keeps its hash across ops.
	g1 := testrepo.Git(t, dir, "rev-parse", hist[0].Commit.String()+":goal.md")
	g2 := testrepo.Git(t, dir, "rev-parse", hist[1].Commit.String()+":goal.md")
	if g1 != g2 {
		t.Fatalf("goal blob rewritten: %s vs %s", g1, g2)
	}
}

func TestResolve(t *testing.T) {
	s, _ := open(t)
	a := mustCreate(t, s, "alpha")
	if id, err := s.Resolve("alpha"); err != nil || id != a.Task.ID {
		t.Fatalf("by slug: %s %v", id, err)
	}
	if id, err := s.Resolve(a.Task.ID[:6]); err != nil || id != a.Task.ID {
		t.Fatalf("by prefix: %s %v", id, err)
	}
	if id, err := s.Resolve(strings.ToUpper(a.Task.ID)); err != nil || id != a.Task.ID {
		t.Fatalf("by upper-case id: %s %v", id, err)
	}
	for _, bad := range []string{"", "nope", "../x", "-rf", "a\x00b", "ab", strings.Repeat("a", 1<<20)} {
		_, err := s.Resolve(bad)
		if !errors.Is(err, task.ErrNotFound) {
			t.Errorf("Resolve(%.20q) = %v, want not found", bad, err)
		}
	}
}

func TestAmbiguousPrefixListsCandidates(t *testing.T) {
	s, _ := open(t)
	// Make enough tasks that some pair shares a 4-hex prefix is unlikely;
	// instead find the shortest prefix two tasks share.
	var ids []string
	for i := 0; i < 300; i++ {
		ids = append(ids, mustCreate(t, s, fmt.Sprintf("t%d", i)).Task.ID)
	}
	byPrefix := map[string][]string{}
	for _, id := range ids {
		byPrefix[id[:2]] = append(byPrefix[id[:2]], id)
	}
	for p, group := range byPrefix {
		if len(group) < 2 {
			continue
		}
		// A 2-char prefix is below the minimum: not found with a hint.
		if _, err := s.Resolve(p); err == nil || !strings.Contains(err.Error(), "at least 4") {
			t.Fatalf("short prefix: %v", err)
		}
		break
	}
	// Force an ambiguity at 4 characters by finding a shared one, or
	// fabricate one with a ref written by hand.
	id2 := ids[0][:4] + "ffffffffffff"
	if id2 == ids[0] {
		id2 = ids[0][:4] + "eeeeeeeeeeee"
	}
	sn, _ := s.Load(ids[0])
	if err := s.repo.CompareAndSwap(TaskRef(id2), gitrepo.OID{}, sn.Commit); err != nil {
		t.Fatal(err)
	}
	_, err := s.Resolve(ids[0][:4])
	var amb *task.AmbiguousError
	if !errors.As(err, &amb) || len(amb.Candidates) < 2 || !strings.Contains(err.Error(), ids[0]) || !strings.Contains(err.Error(), id2) {
		t.Fatalf("ambiguous: %v", err)
	}
}

func TestListCacheFollowsRefs(t *testing.T) {
	s, _ := open(t)
	a := mustCreate(t, s, "a")
	mustCreate(t, s, "b")
	l, err := s.List()
	if err != nil || len(l) != 2 {
		t.Fatalf("list %v %v", l, err)
	}
	if _, _, err := s.Update(context.Background(), a.Task.ID, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Status = machine.Abandoned
		return &task.Op{Name: "close", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	l, err = s.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l {
		if e.ID == a.Task.ID && e.Status != machine.Abandoned {
			t.Fatalf("cached list is stale: %+v", e)
		}
		sum, err := e.Summary()
		if err != nil || sum.ID != e.ID || sum.Status != e.Status {
			t.Fatalf("summary %+v %v", sum, err)
		}
	}
}

func TestClockInjection(t *testing.T) {
	dir := testrepo.New(t)
	repo, _ := Discover(dir)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := Open(repo, WithClock(func() time.Time { return at }))
	sn := mustCreate(t, s, "x")
	if !sn.Task.CreatedAt.Equal(at) {
		t.Fatalf("created at %v", sn.Task.CreatedAt)
	}
}

// TestListBatchPathIsolatesCorruptRecords lists enough uncached tasks to
// take the git cat-file path, with one record vandalized by hand.
func TestListBatchPathIsolatesCorruptRecords(t *testing.T) {
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
