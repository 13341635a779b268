package mcp

import (
	"context"
	"encoding/json"
	"github.com/lazyorch/lazy/attempts"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// lazy_accept with attempt K lands that attempt of a task tried two
// ways, as lazy accept GROUP --attempt K does: only its work reaches
// main, the group completes and the other attempt is closed. An attempt
// the group does not have is refused in one sentence.
func TestAcceptAnAttemptOfAGroup(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	dir := testrepo.New(t)
	d, store := repoDispatcher(t, dir)
	ctx := context.Background()
	env := wire.New(store, session.Env{Actor: machine.Human, RepoDir: dir, Launch: func(string) error { return nil }})
	g, err := env.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "Two ways"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.Attempts().Start(ctx, g.Task.Slug, attempts.Input{N: 2, Base: session.StartInput{Agent: "exec", ExecCommand: []string{"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range res.Started {
		wt := a.Session.Worktree
		name := []string{"one.txt", "two.txt"}[i]
		if err := os.WriteFile(filepath.Join(wt, name), []byte("way\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		testrepo.Git(t, wt, "add", ".")
		testrepo.Git(t, wt, "commit", "-q", "-m", "attempt work")
		if _, _, err := store.Update(ctx, a.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			s.Task.Status = machine.Blocked
			return &task.Op{Name: "test-turn", Actor: machine.System}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	builder := Caller{Actor: machine.Builder}
	if _, err := d.Call(ctx, builder, "lazy_accept", json.RawMessage(`{"task":"two-ways","attempt":3}`)); err == nil || !strings.Contains(err.Error(), "has 2 attempts; --attempt 3 is not one of them") {
		t.Fatalf("attempt 3: %v", err)
	}
	out, err := d.Call(ctx, builder, "lazy_accept", json.RawMessage(`{"task":"two-ways","attempt":2}`))
	if err != nil {
		t.Fatal(err)
	}
	var acc struct {
		Task   struct{ Slug, Status string }
		Commit string
	}
	if err := json.Unmarshal(out, &acc); err != nil || acc.Task.Slug != "two-ways-a2" || acc.Task.Status != "complete" || acc.Commit == "" {
		t.Fatalf("lazy_accept: %s %v", out, err)
	}
	if files := testrepo.Git(t, dir, "ls-tree", "--name-only", "main"); !strings.Contains(files, "two.txt") || strings.Contains(files, "one.txt") {
		t.Fatalf("main's files:\n%s", files)
	}
	if gs, _ := store.Load(g.Task.ID); gs.Task.Status != machine.Complete || gs.Task.Reason != "attempt 2 (two-ways-a2) landed" {
		t.Fatalf("group: %s %q", gs.Task.Status, gs.Task.Reason)
	}
	if a1, _ := store.Load(res.Started[0].Task.ID); a1.Task.Status != machine.Abandoned || a1.Task.Reason != "attempt 2 was chosen" {
		t.Fatalf("attempt 1: %s %q", a1.Task.Status, a1.Task.Reason)
	}
}
