package landing

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// stepNarrator records what an accept tells it.
type stepNarrator struct{ heard []string }

func (r *stepNarrator) Prelude(msg string) { r.heard = append(r.heard, "prelude "+msg) }
func (r *stepNarrator) Plan(plan []Phase) {
	var ids []string
	for _, p := range plan {
		ids = append(ids, p.ID)
	}
	r.heard = append(r.heard, "plan "+strings.Join(ids, ","))
}
func (r *stepNarrator) Step(n, m int, p Phase) {
	r.heard = append(r.heard, "step "+p.ID+" "+string(rune('0'+n))+"/"+string(rune('0'+m)))
}
func (r *stepNarrator) Note(string)          {}
func (r *stepNarrator) last() string         { return r.heard[len(r.heard)-1] }
func (r *stepNarrator) count(pfx string) int { return countPrefix(r.heard, pfx) }

// panicNarrator panics at every call.
type panicNarrator struct{}

func (panicNarrator) Prelude(string)       { panic("prelude") }
func (panicNarrator) Plan([]Phase)         { panic("plan") }
func (panicNarrator) Step(int, int, Phase) { panic("step") }
func (panicNarrator) Note(string)          { panic("note") }

func countPrefix(ss []string, pfx string) int {
	n := 0
	for _, s := range ss {
		if strings.HasPrefix(s, pfx) {
			n++
		}
	}
	return n
}

// TestAcceptBeginNumbersOnlyThePlannedPhases checks that a phase the
// plan leaves out (no stash for a clean destination) is neither counted
// nor narrated, and that a panicking narrator changes nothing.
func TestAcceptBeginNumbersOnlyThePlannedPhases(t *testing.T) {
	rec := &stepNarrator{}
	a := &localAccept{e: &Service{}, n: rec}
	a.announce(AcceptPlan(false, false))
	for _, id := range []string{"pre-accept", "record", "stash", "merge", "restore", "finish", "cleanup"} {
		a.begin(id)
	}
	want := []string{"plan record,merge,finish,cleanup", "step record 1/4", "step merge 2/4", "step finish 3/4", "step cleanup 4/4"}
	if strings.Join(rec.heard, "|") != strings.Join(want, "|") {
		t.Fatalf("heard %q, want %q", rec.heard, want)
	}
	quiet := &localAccept{e: &Service{}, n: panicNarrator{}}
	quiet.announce(AcceptPlan(true, true))
	quiet.begin("pre-accept")
	quiet.say(func(n Narrator) { n.Note("x") })
	if quiet.step != 1 {
		t.Fatalf("a panicking narrator changed the count: %d", quiet.step)
	}
	(&localAccept{}).say(func(n Narrator) { n.Note("no narrator at all") })
}

// acceptFixture is a blocked task of this machine whose branch changes
// feature.txt, ready to be accepted into main, checked out at dir.
type acceptFixture struct {
	e   *Service
	sn  *task.Snapshot
	dir string // the main checkout (the destination)
	wt  string // the task's worktree
}

func newAcceptFixture(t *testing.T, feature string) *acceptFixture {
	t.Helper()
	ctx := context.Background()
	e := env(t)
	dir := filepath.Dir(e.Repo.CommonDir)
	e.RepoDir = dir
	sn, err := e.lifecycle().Create(ctx, lifecycle.CreateInput{Title: "add the feature", Goal: "so that it exists"})
	if err != nil {
		t.Fatal(err)
	}
	walk(t, e, sn.Task.ID, machine.Working, machine.Blocked)
	branch := worktree.Branch(sn.Task.Slug)
	wt := filepath.Join(t.TempDir(), sn.Task.Slug)
	if _, err := worktree.Create(ctx, dir, wt, branch, "main"); err != nil {
		t.Fatal(err)
	}
	write(t, wt, "feature.txt", feature)
	testrepo.Git(t, wt, "add", ".")
	testrepo.Git(t, wt, "commit", "-q", "-m", "feature")
	sid, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Sessions().Save(owned.Session{TaskID: sn.Task.ID, SessionID: sid, Worktree: wt, Branch: branch}); err != nil {
		t.Fatal(err)
	}
	if sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Session.ID = sid
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return &acceptFixture{e: e, sn: sn, dir: dir, wt: wt}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (f *acceptFixture) accept(n Narrator) *localAccept {
	return &localAccept{e: f.e, n: n, sn: f.sn, release: func() {}}
}

// load reloads the task.
func (f *acceptFixture) load(t *testing.T) *task.Snapshot {
	t.Helper()
	sn, err := f.e.Store.Load(f.sn.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

// TestAcceptStepsMergeADirtyDestinationAndGiveTheChangesBack runs the
// steps one by one: each leaves what the next one relies on.
func TestAcceptStepsMergeADirtyDestinationAndGiveTheChangesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAcceptFixture(t, "feature\n")
	write(t, f.dir, "README.md", "# mine, uncommitted\n")
	write(t, f.dir, "notes.txt", "untracked of mine\n")
	rec := &stepNarrator{}
	a := f.accept(rec)
	defer a.release()

	if err := a.preflight(ctx); err != nil {
		t.Fatal(err)
	}
	if !a.pre.dirty || a.pre.temp || a.pre.dest != f.dir || rec.last() != "plan record,stash,merge,restore,finish,cleanup" {
		t.Fatalf("preflight: %+v, heard %q", a.pre, rec.heard)
	}
	if err := a.record(ctx); err != nil {
		t.Fatal(err)
	}
	if sn := f.load(t); sn.Task.Status != machine.Merging || sn.Task.Accept == nil || sn.Task.Accept.ID != a.mine.ID {
		t.Fatalf("record: the task is %s with accept %+v", sn.Task.Status, sn.Task.Accept)
	}
	if _, err := f.e.Accepts().Match(a.sn.Task.ID, a.mine.ID); err != nil {
		t.Fatalf("record: no local accept record: %v", err)
	}
	if err := a.stashDest(ctx); err != nil {
		t.Fatal(err)
	}
	if a.stash == "" || f.load(t).Task.Accept.StashSHA != a.stash || !f.e.Stashes().keptFor(ctx, f.dir, a.sn.Task.ID, a.stash) {
		t.Fatalf("stash %q is not recorded in the task and under %s", a.stash, keptStashRefs)
	}
	if dirty, _ := worktree.Dirty(ctx, f.dir); dirty {
		t.Fatal("the destination is still dirty after the stash")
	}
	if err := a.squashMerge(ctx); err != nil {
		t.Fatal(err)
	}
	msg := testrepo.Git(t, f.dir, "log", "-1", "--format=%B", a.res.Commit)
	if !strings.Contains(msg, "Lazy-Task: "+a.sn.Task.ID) || read(t, f.dir, "feature.txt") != "feature\n" {
		t.Fatalf("the squash commit is missing the trailer or the change:\n%s", msg)
	}
	a.giveBackStash(ctx)
	if a.res.StashOwed != nil || read(t, f.dir, "README.md") != "# mine, uncommitted\n" || read(t, f.dir, "notes.txt") != "untracked of mine\n" {
		t.Fatalf("the changes were not given back: %v", a.res.StashOwed)
	}
	if f.e.Stashes().keptFor(ctx, f.dir, a.sn.Task.ID, a.stash) || testrepo.Git(t, f.dir, "stash", "list") != "" {
		t.Fatal("a stash given back is still kept")
	}
	if err := a.finish(ctx); err != nil {
		t.Fatal(err)
	}
	if sn := f.load(t); sn.Task.Status != machine.Complete || sn.Task.Outcome != task.OutcomeAccepted {
		t.Fatalf("finish: the task is %s/%s", sn.Task.Status, sn.Task.Outcome)
	}
	// Until the cleanup is done, the local record says what it removes,
	// and the task's comment where the branch was.
	tip := testrepo.Git(t, f.dir, "rev-parse", "lazy/"+a.sn.Task.Slug)
	if local, err := f.e.Accepts().Match(a.sn.Task.ID, a.mine.ID); err != nil || local.Cleanup == nil || local.Cleanup.Worktree != f.wt ||
		local.Cleanup.Branch != "lazy/"+a.sn.Task.Slug || local.Cleanup.Tip != tip || local.Cleanup.Commit != a.res.Commit {
		t.Fatalf("finish: the local accept record %+v (%v) does not say what the cleanup removes", local.Cleanup, err)
	}
	comments, err := f.e.Store.Comments(f.load(t))
	if err != nil || len(comments) == 0 || !strings.Contains(comments[len(comments)-1].Text, "git branch lazy/"+a.sn.Task.Slug+" "+tip+" recreates it") {
		t.Fatalf("the completion's comment does not say where the branch was: %+v", comments)
	}
	a.cleanup(ctx)
	if _, err := os.Stat(f.wt); !os.IsNotExist(err) || testrepo.Git(t, f.dir, "branch", "--list", "lazy/*") != "" || len(a.res.Warnings) > 0 {
		t.Fatalf("cleanup left the worktree or branch (warnings %q)", a.res.Warnings)
	}
	if _, err := f.e.Accepts().Match(a.sn.Task.ID, a.mine.ID); !errors.Is(err, owned.ErrNoAccept) {
		t.Fatalf("cleanup: the local accept record stays: %v", err)
	}
	if got := rec.count("step "); got != 6 || rec.last() != "step cleanup 6/6" {
		t.Fatalf("heard %q", rec.heard)
	}
}

// TestAcceptAbortAfterAConflictingMerge checks that a merge that
// conflicts leaves the destination as it was, gives the stash back and
// puts the task back to blocked, forgetting the local accept record.
func TestAcceptAbortAfterAConflictingMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAcceptFixture(t, "theirs\n")
	write(t, f.dir, "feature.txt", "ours\n")
	testrepo.Git(t, f.dir, "add", ".")
	testrepo.Git(t, f.dir, "commit", "-q", "-m", "ours")
	write(t, f.dir, "README.md", "# mine, uncommitted\n")
	head := testrepo.Git(t, f.dir, "rev-parse", "HEAD")
	a := f.accept(nil)
	defer a.release()
	if err := a.preflight(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.record(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.stashDest(ctx); err != nil {
		t.Fatal(err)
	}
	err := a.squashMerge(ctx)
	if err == nil || !strings.Contains(err.Error(), "conflicts in feature.txt") {
		t.Fatalf("merge: %v, want a conflict in feature.txt", err)
	}
	if err := a.abort(ctx, err); !strings.Contains(err.Error(), "conflicts") {
		t.Fatalf("abort changed the cause: %v", err)
	}
	if sn := f.load(t); sn.Task.Status != machine.Blocked || sn.Task.Accept != nil {
		t.Fatalf("after the abort the task is %s with accept %+v", sn.Task.Status, sn.Task.Accept)
	}
	if got := testrepo.Git(t, f.dir, "rev-parse", "HEAD"); got != head || read(t, f.dir, "README.md") != "# mine, uncommitted\n" || read(t, f.dir, "feature.txt") != "ours\n" {
		t.Fatalf("the destination changed: HEAD %s (was %s)", got, head)
	}
	if _, err := f.e.Accepts().Match(a.sn.Task.ID, a.mine.ID); !errors.Is(err, owned.ErrNoAccept) {
		t.Fatalf("the local accept record stays after the abort: %v", err)
	}
}

// TestAcceptStashStepWhoseRecordVanishedAborts checks the failure path
// where recording the stash on the task fails: the changes come back
// and the abort restores the task. Before the steps were methods, the
// failed update had already cleared the snapshot the abort read, and the
// accept panicked here.
func TestAcceptStashStepWhoseRecordVanishedAborts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAcceptFixture(t, "feature\n")
	write(t, f.dir, "README.md", "# mine, uncommitted\n")
	a := f.accept(nil)
	defer a.release()
	if err := a.preflight(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.record(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.e.Store.Update(ctx, a.sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Accept = nil
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	err := a.stashDest(ctx)
	if err == nil || !strings.Contains(err.Error(), "the accept record vanished") {
		t.Fatalf("stash: %v", err)
	}
	_ = a.abort(ctx, err)
	if sn := f.load(t); sn.Task.Status != machine.Blocked || read(t, f.dir, "README.md") != "# mine, uncommitted\n" {
		t.Fatalf("after the abort the task is %s and README.md %q", sn.Task.Status, read(t, f.dir, "README.md"))
	}
}
