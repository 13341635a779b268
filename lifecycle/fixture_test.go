package lifecycle

import (
	"context"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// testEnv is the core as a process builds it, over a task store in
// memory and a lazy directory of its own (no repository, no git
// process), with no landing and no forge above it.
type testEnv struct{ session.Env }

// Lifecycle is e's lifecycle.
func (e *testEnv) Lifecycle() *Service { return New(&e.Env, nil, nil) }

func env(t *testing.T) *testEnv {
	t.Helper()
	return &testEnv{session.Env{
		Store: memstore.New(memstore.WithHost("ops-test")),
		Repo:  &gitrepo.Location{CommonDir: t.TempDir()},
		Actor: machine.Human,
	}}
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
