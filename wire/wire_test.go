package wire

import (
	"context"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

func env(t *testing.T) *Env {
	t.Helper()
	repo, err := gitrepo.Discover(testrepo.Copy(t, template))
	if err != nil {
		t.Fatal(err)
	}
	return New(gitstore.Open(repo, gitstore.WithHost("ops-test")), session.Env{Actor: machine.Human})
}

// walk moves a task through statuses as the system would, giving it a
// session on the way, to reach states the CLI alone cannot reach yet.
func walk(t *testing.T, e *Env, id string, to ...machine.Status) {
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

// spend records usd as what task id's turns cost.
func spend(t *testing.T, e *Env, id string, usd float64) {
	t.Helper()
	if _, _, err := e.Store.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Usage = &task.Usage{CostUSD: usd}
		return &task.Op{Name: "walk", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
