package handoff

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// The tests of this package run handoff on its seams alone: the task
// store in memory, git's side of the branch faked (fakeGit), the
// repository's git config a file the test writes, every supervisor's
// launch recorded, and PATH emptied so that any git process a step
// would start fails it.

// fakeGit is a task branch with the commits, touched files and
// uncommitted files the test says, whatever the range asked for.
type fakeGit struct {
	commits, touched, uncommitted []string
}

func (g *fakeGit) CommitLog(context.Context, string, string, string) ([]string, error) {
	return g.commits, nil
}

func (g *fakeGit) DiffNames(context.Context, string, string, string) ([]string, error) {
	return g.touched, nil
}

func (g *fakeGit) Uncommitted(context.Context, string) ([]string, error) {
	return g.uncommitted, nil
}

var _ Worktree = (*fakeGit)(nil)

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

func env(t *testing.T) *testEnv {
	t.Helper()
	t.Setenv("PATH", t.TempDir()) // no git, no agent CLI
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	e := &testEnv{
		Env: session.Env{
			Store: memstore.New(memstore.WithHost("handoff-test")),
			Repo:  &gitrepo.Location{CommonDir: t.TempDir()},
			Actor: machine.Human,
		},
		git: &fakeGit{},
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

// handoff is e's handoff capability over the fake git.
func (e *testEnv) handoff() *Service {
	h := New(&e.Env)
	h.Worktrees = e.git
	return h
}

// asAgent is e as the agent of task caller, as the daemon builds it for
// a call carrying that agent's token.
func (e *testEnv) asAgent(caller string) *testEnv {
	a := &testEnv{Env: e.Env, git: e.git}
	a.Actor, a.CallerTask = machine.Agent, caller
	return a
}

func (e *testEnv) launches() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.launched...)
}

// config writes the repository's git config file (lazy reads it as git
// would, with no git process).
func (e *testEnv) config(t *testing.T, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.Repo.CommonDir, "config"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (e *testEnv) load(t *testing.T, id string) *task.Snapshot {
	t.Helper()
	sn, err := e.Store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

// update changes task id's record as the system would (a turn, its
// end), to reach the states a test needs.
func (e *testEnv) update(t *testing.T, id string, fn func(s *task.Snapshot)) *task.Snapshot {
	t.Helper()
	sn, _, err := e.Store.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
		fn(s)
		return &task.Op{Name: "test", Actor: machine.System}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

// parked is a task whose session this machine started as s says, that
// worked a turn and is parked blocked: one a handoff may take over.
func (e *testEnv) parked(t *testing.T, title string, s owned.Session) *task.Snapshot {
	t.Helper()
	sn, err := e.Store.Create(task.CreateSpec{Title: title, Goal: "Make the login race go away.", TargetBranch: "release", Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	sid, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	branch := "lazy/" + sn.Task.Slug
	wt := t.TempDir()
	e.update(t, sn.Task.ID, func(x *task.Snapshot) {
		x.Task.Sessions++
		x.Session = &task.Session{ID: sid, Number: 1, Host: e.Store.Host(), Agent: s.Agent, Branch: branch, Worktree: wt, GitStartSHA: "0123456789abcdef0123456789abcdef01234567"}
		x.Task.Status = machine.Working
	})
	s.TaskID, s.SessionID, s.Worktree, s.Branch = sn.Task.ID, sid, wt, branch
	if err := e.Sessions().Save(s); err != nil {
		t.Fatal(err)
	}
	return e.update(t, sn.Task.ID, func(x *task.Snapshot) { x.Task.Status = machine.Blocked })
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

// sections are the record's own headings after its title, in order.
var sections = []string{"Goal", "Where the work stands", "What the previous agent said last",
	"Decisions the human made (their messages, oldest first)", "Tried and did not work",
	"Feedback still pending (not yet acted on)", "Last merge-gate result", "Next step"}
