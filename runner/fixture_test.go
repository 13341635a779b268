package runner

import (
	"context"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// testEnv is the core as a process builds it, over a task store in
// memory and a lazy directory of its own (no repository), with PATH
// emptied so that any git process a step would start fails the test:
// the runner's decisions run on their seams alone.
type testEnv struct {
	session.Env
	sync *fakeSync
}

// Lifecycle is e's lifecycle, with no landing and no forge above it.
func (e *testEnv) Lifecycle() *lifecycle.Service { return lifecycle.New(&e.Env, nil, nil) }

// Runner is e's runner over lifecycle, with the remote's records faked.
func (e *testEnv) Runner() *Service { return New(&e.Env, e.Lifecycle(), e.sync) }

func env(t *testing.T) *testEnv {
	t.Helper()
	t.Setenv("PATH", t.TempDir()) // no git: nothing here may need one
	return &testEnv{Env: session.Env{
		Store: memstore.New(memstore.WithHost("ops-test")),
		Repo:  &gitrepo.Location{CommonDir: t.TempDir()},
		Actor: machine.Human,
	}, sync: &fakeSync{fetched: map[string]string{}}}
}

// fakeSync is the task store's side on the remote: a pull that counts,
// and the records as the remote had them.
type fakeSync struct {
	// block, when set, holds every pull until it is closed: git work
	// that hangs.
	block   chan struct{}
	pulls   int
	pullErr error
	fetched map[string]string // task id -> record commit on the remote
}

func (f *fakeSync) Pull(context.Context, string) error {
	if f.block != nil {
		<-f.block
	}
	f.pulls++
	return f.pullErr
}
func (f *fakeSync) TaskRef(id string) string { return "refs/lazy/tasks/" + id }
func (f *fakeSync) Fetched(_ context.Context, _, id string) string {
	return f.fetched[id]
}

// walk moves a task through statuses as the system would, giving it a
// session on the way, to reach states the CLI alone cannot reach yet.
func walk(t *testing.T, e *testEnv, id string, to ...machine.Status) {
	t.Helper()
	for _, st := range to {
		if _, _, err := e.Store.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
			if s.Session == nil {
				s.Session = &task.Session{ID: "s1", Number: 1, Host: "ops-test"}
				s.Task.Sessions = 1
			}
			s.Task.Status = st
			return &task.Op{Name: "walk", Actor: machine.System}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// accepted moves a task to complete, accepted, as an accept leaves it.
func accepted(t *testing.T, e *testEnv, id string) {
	t.Helper()
	walk(t, e, id, machine.Working, machine.Blocked, machine.Merging)
	if _, _, err := e.Store.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Status, s.Task.Outcome = machine.Complete, task.OutcomeAccepted
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func (e *testEnv) mustLoad(t *testing.T, id string) *task.Snapshot {
	t.Helper()
	sn, err := e.Store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	return sn
}
