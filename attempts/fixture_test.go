package attempts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// The tests of this package run attempts on its seams alone: the task
// store in memory, a real lifecycle over git faked (fakeGit, both
// lifecycle's Worktree and this package's), review's measure faked,
// every supervisor's launch recorded, and PATH emptied so that any git
// or bubblewrap process a step would start fails it.

const fakeTip = "0123456789abcdef0123456789abcdef01234567"

// fakeGit is git in a repository where every branch exists: a worktree
// is a directory made at the path asked for, and each branch's diff
// stat is what the test says.
type fakeGit struct {
	mu        sync.Mutex
	calls     []string
	noCommits bool
	stats     map[string]worktree.DiffStat // branch tip -> its stat
}

func (g *fakeGit) called(what string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, what)
}

func (g *fakeGit) NoCommits(context.Context, string) bool { g.called("NoCommits"); return g.noCommits }

func (g *fakeGit) Create(_ context.Context, _, dir, branch, base string) (string, error) {
	g.called("Create " + branch + " from " + base)
	return fakeTip, os.MkdirAll(dir, 0o755)
}

func (g *fakeGit) CreateBranch(context.Context, string, string, string) error { return nil }
func (g *fakeGit) Move(_ context.Context, _, from, to string) error           { return os.Rename(from, to) }
func (g *fakeGit) BranchCommit(context.Context, string, string) (string, error) {
	return fakeTip, nil
}
func (g *fakeGit) BranchTip(context.Context, string, string) (string, error) { return fakeTip, nil }
func (g *fakeGit) CheckedOutAt(context.Context, string, string) (string, error) {
	return "", nil
}
func (g *fakeGit) RefsUnder(context.Context, string, string) ([]worktree.Ref, error) {
	return nil, nil
}
func (g *fakeGit) Head(context.Context, string) (string, error) { return fakeTip, nil }
func (g *fakeGit) Dirty(context.Context, string) (bool, error)  { return false, nil }
func (g *fakeGit) RevertFile(context.Context, string, string, string) (bool, error) {
	return true, nil
}
func (g *fakeGit) CommitAsLazy(context.Context, string, string, []string) error { return nil }
func (g *fakeGit) ClearKilledIndexLock(context.Context, string) bool            { return false }

func (g *fakeGit) Numstat(_ context.Context, _, from, to string) (worktree.DiffStat, error) {
	g.called("Numstat " + from + ".." + to)
	g.mu.Lock()
	defer g.mu.Unlock()
	if d, ok := g.stats[to]; ok {
		return d, nil
	}
	return worktree.DiffStat{}, errors.New("no such commit")
}

var (
	_ lifecycle.Worktree = (*fakeGit)(nil)
	_ Worktree           = (*fakeGit)(nil)
)

// fakeReview measures a started attempt as its own branch ("tip-" and
// its id) over a merge base, and a finished one as landed, its branch
// gone, as review does.
type fakeReview struct{}

func (fakeReview) Measure(_ context.Context, sn *task.Snapshot, lacks string) (*review.Review, string, error) {
	switch {
	case sn.Session == nil:
		return nil, "", fmt.Errorf("%s has not started, so it has %s", sn.Task.Slug, lacks)
	case sn.Task.Status == machine.Complete:
		return nil, "", fmt.Errorf("%s is complete and its branch is gone", sn.Task.Slug)
	}
	return &review.Review{Slug: sn.Task.Slug, MergeBase: "base", BranchSHA: "tip-" + sn.Task.ID}, "", nil
}

// testEnv is the core over a task store in memory and a lazy directory
// of its own (no repository, no git process), with its launches
// recorded.
type testEnv struct {
	session.Env
	git *fakeGit

	mu       sync.Mutex
	launched []string
	// onLaunch, when set, is called with each launched task's id.
	onLaunch func(id string)
}

// env is a testEnv with git faked and no git on PATH.
func env(t *testing.T) *testEnv {
	t.Helper()
	t.Setenv("PATH", t.TempDir()) // no git, no bwrap, no agent CLI
	e := &testEnv{
		Env: session.Env{
			Store: memstore.New(memstore.WithHost("attempts-test")),
			Repo:  &gitrepo.Location{CommonDir: t.TempDir()},
			Actor: machine.Human,
		},
		git: &fakeGit{stats: map[string]worktree.DiffStat{}},
	}
	e.Launch = func(id string) error {
		e.mu.Lock()
		e.launched = append(e.launched, id)
		hook := e.onLaunch
		e.mu.Unlock()
		if hook != nil {
			hook(id)
		}
		return nil
	}
	return e
}

// asAgent is e as the agent of task caller, as the daemon builds it for
// a call carrying that agent's token.
func (e *testEnv) asAgent(caller string) *testEnv {
	a := &testEnv{Env: e.Env, git: e.git}
	a.Actor, a.CallerTask = machine.Agent, caller
	a.Launch = e.Launch
	return a
}

// lifecycle is e's lifecycle over the fake git.
func (e *testEnv) lifecycle() *lifecycle.Service {
	lc := lifecycle.New(&e.Env, nil, nil)
	lc.Worktrees = e.git
	return lc
}

// attempts is e's attempts capability, over its lifecycle, the fake
// review and the fake git.
func (e *testEnv) attempts() *Service {
	at := New(&e.Env, e.lifecycle(), fakeReview{})
	at.Worktrees = e.git
	return at
}

func (e *testEnv) launches() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.launched...)
}

func (e *testEnv) create(t *testing.T, in lifecycle.CreateInput) *task.Snapshot {
	t.Helper()
	sn, err := e.lifecycle().Create(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

func (e *testEnv) load(t *testing.T, id string) *task.Snapshot {
	t.Helper()
	sn, err := e.Store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

// set changes task id's record as the system would (a turn's end, an
// accept), to reach states a test needs.
func (e *testEnv) set(t *testing.T, id string, fn func(s *task.Snapshot)) {
	t.Helper()
	if _, _, err := e.Store.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
		fn(s)
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// land moves working task id to complete and accepted, as an accept
// that merged it would.
func (e *testEnv) land(t *testing.T, id string) {
	t.Helper()
	e.set(t, id, func(s *task.Snapshot) { s.Task.Status = machine.Blocked })
	e.set(t, id, func(s *task.Snapshot) { s.Task.Status = machine.Merging })
	e.set(t, id, func(s *task.Snapshot) { s.Task.Status, s.Task.Outcome = machine.Complete, task.OutcomeAccepted })
}

// runningHere makes task id's record name a working session that this
// machine started as s says (agent, mode, sandbox), with its branch: the
// agent session an MCP token would belong to.
func (e *testEnv) runningHere(t *testing.T, id string, s owned.Session) {
	t.Helper()
	sid, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	var slug string
	e.set(t, id, func(sn *task.Snapshot) {
		sn.Task.Sessions++
		sn.Session = &task.Session{ID: sid, Number: sn.Task.Sessions, Host: e.Store.Host(), Agent: s.Agent, Branch: "lazy/" + sn.Task.Slug}
		sn.Task.Status = machine.Working
		slug = sn.Task.Slug
	})
	s.TaskID, s.SessionID, s.Worktree, s.Branch = id, sid, t.TempDir(), "lazy/"+slug
	if err := e.Sessions().Save(s); err != nil {
		t.Fatal(err)
	}
}

// command reads the command.json a launch wrote for task id.
func (e *testEnv) command(t *testing.T, id string) proto.Command {
	t.Helper()
	var c proto.Command
	if err := proto.ForTask(e.Repo.LazyDir(), id).Read(proto.CommandFile, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// trueCmd is an exec agent's command found without PATH.
var trueCmd = []string{"/bin/true"}

func ptr[T any](v T) *T { return &v }
