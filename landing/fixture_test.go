package landing

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// env is landing over a task store in memory, in a real repository (the
// branches an accept merges and the checkouts it stashes are git's), with
// no queue and no attempts above it.
func env(t *testing.T) *Service {
	t.Helper()
	repo, err := gitrepo.Discover(testrepo.Copy(t, template))
	if err != nil {
		t.Fatal(err)
	}
	return New(&session.Env{Store: memstore.New(memstore.WithHost("ops-test")), Repo: repo, Actor: machine.Human})
}

// walk moves a task through statuses as the system would, giving it a
// session on the way, to reach states the CLI alone cannot reach yet.
func walk(t *testing.T, e *Service, id string, to ...machine.Status) {
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

// startedWith creates a task that this machine started, parked blocked,
// whose branch (off target, "" for main) commits files (path: content) in
// a worktree of its own.
func startedWith(t *testing.T, e *Service, title, target string, files map[string]string) *task.Snapshot {
	t.Helper()
	ctx := context.Background()
	sn, err := e.lifecycle().Create(ctx, lifecycle.CreateInput{Title: title, TargetBranch: target})
	if err != nil {
		t.Fatal(err)
	}
	walk(t, e, sn.Task.ID, machine.Working, machine.Blocked)
	base := target
	if base == "" {
		base = "main"
	}
	branch := worktree.Branch(sn.Task.Slug)
	wt := filepath.Join(t.TempDir(), sn.Task.Slug)
	if _, err := worktree.Create(ctx, e.Dir(), wt, branch, base); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(wt, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, wt, name, content)
	}
	testrepo.Git(t, wt, "add", ".")
	testrepo.Git(t, wt, "commit", "-q", "-m", title)
	sid, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Sessions().Save(owned.Session{TaskID: sn.Task.ID, SessionID: sid, Worktree: wt, Branch: branch}); err != nil {
		t.Fatal(err)
	}
	sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Session.ID = sid
		return &task.Op{Name: "test", Actor: machine.System}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sn
}
