package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// The tests in this file run lifecycle on its seams alone: the task
// store in memory, git's side of branches and worktrees faked (fakeGit),
// the supervisor's launch recorded (launches), and PATH emptied so that
// any git process a step would start fails the test.

// fakeGit is the Worktree of a repository with the branches it names: a
// worktree is a directory made at the path asked for.
type fakeGit struct {
	mu       sync.Mutex
	branches map[string]string // branch -> tip
	calls    []string
}

const fakeTip = "0123456789abcdef0123456789abcdef01234567"

func newFakeGit(branches ...string) *fakeGit {
	g := &fakeGit{branches: map[string]string{}}
	for _, b := range branches {
		g.branches[b] = fakeTip
	}
	return g
}

func (g *fakeGit) called(what string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, what)
}

func (g *fakeGit) NoCommits(context.Context, string) bool { g.called("NoCommits"); return false }

func (g *fakeGit) Create(_ context.Context, _, dir, branch, base string) (string, error) {
	g.called("Create " + branch + " from " + base)
	g.mu.Lock()
	defer g.mu.Unlock()
	tip, ok := g.branches[base]
	if !ok {
		return "", fmt.Errorf("no branch %s", base)
	}
	g.branches[branch] = tip
	return tip, os.MkdirAll(dir, 0o755)
}

func (g *fakeGit) CreateBranch(_ context.Context, _, branch, from string) error {
	g.called("CreateBranch " + branch)
	return nil
}

func (g *fakeGit) Move(_ context.Context, _, from, to string) error {
	g.called("Move")
	return os.Rename(from, to)
}

func (g *fakeGit) BranchCommit(_ context.Context, _, branch string) (string, error) {
	g.called("BranchCommit " + branch)
	g.mu.Lock()
	defer g.mu.Unlock()
	if tip, ok := g.branches[branch]; ok {
		return tip, nil
	}
	return "", errors.New("no such branch")
}

func (g *fakeGit) BranchTip(ctx context.Context, repoDir, branch string) (string, error) {
	return g.BranchCommit(ctx, repoDir, branch)
}

func (g *fakeGit) CheckedOutAt(context.Context, string, string) (string, error) { return "", nil }

func (g *fakeGit) RefsUnder(context.Context, string, string) ([]worktree.Ref, error) {
	return nil, nil
}

func (g *fakeGit) Head(context.Context, string) (string, error) { return fakeTip, nil }

func (g *fakeGit) Dirty(context.Context, string) (bool, error) { return false, nil }

func (g *fakeGit) RevertFile(context.Context, string, string, string) (bool, error) {
	return true, nil
}

func (g *fakeGit) CommitAsLazy(context.Context, string, string, []string) error { return nil }

func (g *fakeGit) ClearKilledIndexLock(context.Context, string) bool {
	g.called("ClearKilledIndexLock")
	return false
}

// launches records the supervisors a lifecycle launches, and what the
// task's record said at that moment.
type launches struct {
	mu     sync.Mutex
	ids    []string
	seen   []*task.Snapshot
	e      *testEnv
	refuse error
}

func (l *launches) launch(id string) error {
	sn, err := l.e.Store.Load(id)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids = append(l.ids, id)
	l.seen = append(l.seen, sn)
	return l.refuse
}

// seamEnv is a testEnv whose lifecycle runs on fake git, with a launcher
// and no git on PATH.
func seamEnv(t *testing.T) (*testEnv, *Service, *fakeGit, *launches) {
	t.Helper()
	t.Setenv("PATH", t.TempDir()) // no git, no agent CLI: nothing may need one
	e := env(t)
	l := &launches{e: e}
	e.Launch = l.launch
	g := newFakeGit("release")
	lc := e.Lifecycle()
	lc.Worktrees = g
	return e, lc, g, l
}

// command reads the command.json a launch wrote for task id.
func command(t *testing.T, e *testEnv, id string) proto.Command {
	t.Helper()
	var c proto.Command
	if err := proto.ForTask(e.Repo.LazyDir(), id).Read(proto.CommandFile, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

var trueAgent = session.StartInput{Agent: "exec", ExecCommand: []string{"/bin/true"}}

// Start records first and acts second: the session, the human's start
// turn and the working status are in the record before the supervisor is
// launched, on the branch and worktree lazy made from the task's target,
// with this machine's record of the session saved; the command the
// supervisor reads carries the task's text as the prompt.
func TestStartRecordsTheTurnThenLaunches(t *testing.T) {
	e, lc, g, l := seamEnv(t)
	ctx := context.Background()
	sn, err := lc.Create(ctx, CreateInput{Title: "add the feature", Goal: "so that it exists", TargetBranch: "release"})
	if err != nil {
		t.Fatal(err)
	}
	in := trueAgent
	in.WorktreeDir = t.TempDir()
	got, err := lc.Start(ctx, sn.Task.Slug, in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.ids, []string{sn.Task.ID}) {
		t.Fatalf("launched %v, want the task once", l.ids)
	}
	at := l.seen[0]
	if at.Task.Status != machine.Working || at.Session == nil || at.Task.Turns != 1 || at.Session.Turn != 1 {
		t.Fatalf("at launch the record was %s with session %+v and %d turns: the turn must be recorded first", at.Task.Status, at.Session, at.Task.Turns)
	}
	turns, err := e.Store.Turns(got)
	if err != nil || len(turns) != 1 || turns[0].Kind != "start" || turns[0].FeedbackDelivery != task.FeedbackPending || turns[0].Actor != machine.Human {
		t.Fatalf("the start turn: %+v %v", turns, err)
	}
	branch := worktree.Branch(sn.Task.Slug)
	if got.Session.Branch != branch || got.Session.GitStartSHA != fakeTip || !slices.Contains(g.calls, "Create "+branch+" from release") {
		t.Fatalf("session %+v after git calls %v: the branch comes from the target", got.Session, g.calls)
	}
	local, err := e.Sessions().Load(sn.Task.ID)
	if err != nil || local.Branch != branch || local.Worktree != filepath.Join(in.WorktreeDir, sn.Task.Slug) || local.SessionID != got.Session.ID {
		t.Fatalf("this machine's record of the session: %+v %v", local, err)
	}
	c := command(t, e, sn.Task.ID)
	if c.Kind != "start" || c.Prompt != "add the feature\n\nso that it exists" || c.Worktree != local.Worktree || c.BaseSHA != fakeTip || c.Seq != 1 {
		t.Fatalf("command.json: %+v", c)
	}
	if _, err := lc.Start(ctx, sn.Task.Slug, in); err == nil || !strings.Contains(err.Error(), "already running") || len(l.ids) != 1 {
		t.Fatalf("a second start: %v, launches %v", err, l.ids)
	}
}

// Stop parks the task first (the human's stop turn recorded, blocked),
// then ends the turn: its command is taken away, so a supervisor that
// has not read it yet starts no agent. Unblock then records the
// feedback, pending, and launches the next turn of the same session with
// it as the prompt (and every message no turn has received after it),
// merging the target branch first.
func TestStopThenUnblockRunsTheNextTurnWithTheFeedback(t *testing.T) {
	e, lc, g, l := seamEnv(t)
	ctx := context.Background()
	sn, err := lc.Create(ctx, CreateInput{Title: "fix the flaky test", TargetBranch: "release"})
	if err != nil {
		t.Fatal(err)
	}
	in := trueAgent
	in.WorktreeDir = t.TempDir()
	if _, err := lc.Start(ctx, sn.Task.ID, in); err != nil {
		t.Fatal(err)
	}
	stopped, err := lc.Stop(ctx, sn.Task.Slug, "wrong file")
	if err != nil {
		t.Fatal(err)
	}
	if stopped.Task.Status != machine.Blocked {
		t.Fatalf("after stop: %s", stopped.Task.Status)
	}
	if _, err := os.Stat(filepath.Join(e.Repo.LazyDir("proto", sn.Task.ID), proto.CommandFile)); !os.IsNotExist(err) {
		t.Fatalf("the stopped turn's command is still there: %v", err)
	}
	if !slices.Contains(g.calls, "ClearKilledIndexLock") {
		t.Errorf("a stop clears the index lock a killed agent may leave: git calls %v", g.calls)
	}
	if _, err := lc.Unblock(ctx, sn.Task.Slug, "  ", Decisions{}); err == nil || len(l.ids) != 1 {
		t.Fatalf("an unblock without feedback: %v, launches %v", err, l.ids)
	}
	got, err := lc.Unblock(ctx, sn.Task.Slug, "use the other fixture", Decisions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.ids) != 2 || l.seen[1].Task.Status != machine.Working || l.seen[1].Task.Turns != 3 {
		t.Fatalf("launches %v; at the second the record was %+v", l.ids, l.seen[len(l.seen)-1].Task)
	}
	turns, err := e.Store.Turns(got)
	if err != nil || len(turns) != 3 {
		t.Fatalf("turns %+v %v", turns, err)
	}
	if st, ub := turns[1], turns[2]; st.Kind != "stop" || !strings.Contains(st.Content, "wrong file") || ub.Kind != "unblock" || ub.Content != "use the other fixture" || ub.FeedbackDelivery != task.FeedbackPending {
		t.Fatalf("stop and unblock turns: %+v %+v", st, ub)
	}
	c := command(t, e, sn.Task.ID)
	// No turn finished, so the task as given at its start was never
	// delivered: the unblock's prompt carries it after its own message.
	if c.Kind != "unblock" || !strings.HasPrefix(c.Prompt, "use the other fixture\n\n---") || !strings.Contains(c.Prompt, "[turn 1: the task as given at its start]\nfix the flaky test") ||
		c.SyncFrom != "release" || c.Seq != 3 || c.Session != got.Session.ID {
		t.Fatalf("command.json of the unblock: %+v", c)
	}
}

// A turn whose supervisor cannot be launched leaves the task recorded as
// working (the reconciler interrupts it), and says so.
func TestAFailedLaunchIsSaidAndLeftToTheReconciler(t *testing.T) {
	_, lc, _, l := seamEnv(t)
	ctx := context.Background()
	l.refuse = errors.New("fork failed")
	sn, err := lc.Create(ctx, CreateInput{Title: "t", TargetBranch: "release"})
	if err != nil {
		t.Fatal(err)
	}
	in := trueAgent
	in.WorktreeDir = t.TempDir()
	got, err := lc.Start(ctx, sn.Task.ID, in)
	if err == nil || !strings.Contains(err.Error(), "reconciler will mark it interrupted") || !strings.Contains(err.Error(), "fork failed") {
		t.Fatalf("start with a failing launch: %v", err)
	}
	if got == nil || got.Task.Status != machine.Working {
		t.Fatalf("the record after a failed launch: %+v", got)
	}
}

// Without landing wired in, a task an interrupted accept holds in a merge
// is refused by every command that would escape it, and changes not; the
// landing that is wired in is asked instead.
func TestAStrandedMergeIsLandingsToRecover(t *testing.T) {
	e, lc, _, _ := seamEnv(t)
	ctx := context.Background()
	sn, err := lc.Create(ctx, CreateInput{Title: "merging"})
	if err != nil {
		t.Fatal(err)
	}
	walk(t, e, sn.Task.ID, machine.Working, machine.Blocked, machine.Merging)
	if _, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Accept = &task.AcceptRecord{ID: "a1", Into: "main", IntoSHA: fakeTip, Host: "ops-test"}
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	before, _ := e.Store.Load(sn.Task.ID)
	if _, err := lc.Close(ctx, sn.Task.Slug, "not wanted"); err == nil || !strings.Contains(err.Error(), "lazy doctor") {
		t.Fatalf("close of a stranded merge with no landing: %v", err)
	}
	if after, _ := e.Store.Load(sn.Task.ID); after.Commit != before.Commit {
		t.Fatal("a refused close changed the record")
	}
	rec := &escapes{}
	lc.Landing = rec
	if _, err := lc.Close(ctx, sn.Task.Slug, "not wanted"); err == nil || !strings.Contains(err.Error(), "recovered elsewhere") || !slices.Equal(rec.verbs, []string{"close"}) {
		t.Fatalf("close with landing wired: %v, landing asked %v", err, rec.verbs)
	}
}

// escapes is a Landing that refuses, saying so, and records what it was
// asked.
type escapes struct{ verbs []string }

func (x *escapes) EscapeStranded(_ context.Context, sn *task.Snapshot, verb string) (*task.Snapshot, error) {
	x.verbs = append(x.verbs, verb)
	return nil, fmt.Errorf("%s %s: recovered elsewhere", verb, sn.Task.Slug)
}
