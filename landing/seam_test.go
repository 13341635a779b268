package landing

import (
	"context"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// noGit plays no role of git: any call through it is a call on a nil
// Worktree, which fails the test loudly. A fake that plays one role is
// set beneath it (see preflightOnly), so the role's methods win.
type noGit struct{ Worktree }

// preflightOnly is git playing only an accept's pre-flight role: a
// Service's git, for a test that must not get past pre-flight.
type preflightOnly struct {
	PreflightGit
	noGit
}

// dirtyGit is git, in the pre-flight role, with a worktree that has
// uncommitted changes; it answers nothing else, so any other git call
// fails the test loudly (a nil embedded interface).
type dirtyGit struct {
	PreflightGit
	asked []string
}

func (g *dirtyGit) Dirty(_ context.Context, dir string) (bool, error) {
	g.asked = append(g.asked, dir)
	return true, nil
}

// TestAnAcceptOfADirtyWorktreeIsRefusedBeforeAnythingIsRecorded runs on
// memstore with git faked and no git on PATH: a blocked task of this
// machine whose worktree has uncommitted changes is refused in
// pre-flight, and neither the task's record nor this machine's record of
// accepts says anything happened.
func TestAnAcceptOfADirtyWorktreeIsRefusedBeforeAnythingIsRecorded(t *testing.T) {
	t.Setenv("PATH", "")
	ctx := context.Background()
	g := &dirtyGit{}
	e := New(&session.Env{Store: memstore.New(memstore.WithHost("seam")), Repo: &gitrepo.Location{CommonDir: t.TempDir()}, Actor: machine.Human})
	e.Worktrees = preflightOnly{PreflightGit: g}
	sn, err := e.lifecycle().Create(ctx, lifecycle.CreateInput{Title: "add the feature"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.TargetBranch = "main" // the branch it merges into, with no git to ask
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	walk(t, e, sn.Task.ID, machine.Working, machine.Blocked)
	wt := t.TempDir()
	sid, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Sessions().Save(owned.Session{TaskID: sn.Task.ID, SessionID: sid, Worktree: wt, Branch: "lazy/" + sn.Task.Slug}); err != nil {
		t.Fatal(err)
	}
	if sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Session.ID = sid
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	before, err := e.Store.History(sn)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{})
	if err == nil || !strings.Contains(err.Error(), "has uncommitted changes") {
		t.Fatalf("accept of a dirty worktree: %v", err)
	}
	if len(g.asked) != 1 || g.asked[0] != wt {
		t.Fatalf("git was asked about %q, want the task's worktree %s", g.asked, wt)
	}
	got, err := e.Store.Load(sn.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	after, err := e.Store.History(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) || got.Task.Status != machine.Blocked || got.Task.Accept != nil {
		t.Fatalf("the refused accept recorded something: %d ops (was %d), %s, %+v", len(after), len(before), got.Task.Status, got.Task.Accept)
	}
	if mine, err := e.Accepts().Match(sn.Task.ID, ""); err == nil {
		t.Fatalf("this machine recorded an accept it never began: %+v", mine)
	}
}
