package ops

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
)

// spend records usd as what task id's turns cost.
func spend(t *testing.T, e *Env, id string, usd float64) {
	t.Helper()
	if _, _, err := e.Store.Update(context.Background(), id, func(s *gitstore.Snapshot) (*gitstore.Op, error) {
		s.Task.Usage = &gitstore.Usage{CostUSD: usd}
		return &gitstore.Op{Name: "walk", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A task's budget counts it and everything under it; a subtask's turns
// run under its own budget, each ancestor's and the day's; the tightest
// one decides, and an own budget replaces lazy.budget.task.
func TestBudgetLinesRollUpSubtasks(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	dir := filepath.Dir(e.Store.Repo().CommonDir)
	git := func(args ...string) { t.Helper(); testrepo.Git(t, dir, args...) }
	root, _ := e.Create(ctx, CreateInput{Title: "root", BudgetUSD: 3})
	mid, _ := e.Create(ctx, CreateInput{Title: "mid", Parent: root.Task.ID})
	leaf, _ := e.Create(ctx, CreateInput{Title: "leaf", Parent: mid.Task.ID})
	other, _ := e.Create(ctx, CreateInput{Title: "other"})
	spend(t, e, root.Task.ID, 1)
	spend(t, e, mid.Task.ID, 0.5)
	spend(t, e, leaf.Task.ID, 0.75)
	spend(t, e, other.Task.ID, 100)

	sn, _ := e.Store.Load(leaf.Task.ID)
	lines, err := e.BudgetLines(sn, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// No lazy.budget.task: only the root's own budget applies, over the
	// whole tree (1 + 0.5 + 0.75), the other task not at all.
	if len(lines) != 1 || lines[0].Scope != "parent root" || lines[0].LimitUSD != 3 || lines[0].SpentUSD != 2.25 {
		t.Fatalf("lines %+v", lines)
	}
	git("config", KeyBudgetTask, "1")
	git("config", KeyBudgetDay, "$20")
	if err := e.Ledger().Add(budget.Entry{Task: "x", Session: "s", Seq: 1, At: time.Now(), CostUSD: 19.5}); err != nil {
		t.Fatal(err)
	}
	lines, err = e.BudgetLines(sn, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]budget.Line{}
	for _, l := range lines {
		got[l.Scope] = l
	}
	if got["task"].SpentUSD != 0.75 || got["task"].LimitUSD != 1 || got["parent mid"].SpentUSD != 1.25 || got["parent root"].LimitUSD != 3 || got["day"].SpentUSD != 19.5 {
		t.Fatalf("lines %+v", lines)
	}
	if tight, _ := budget.Tightest(lines); tight.Scope != "parent mid" || !tight.Over() {
		t.Fatalf("tightest %+v, want mid's spent budget", tight)
	}

	// Raising it raises the budget that holds: the hold names mid.
	walk(t, e, leaf.Task.ID, machine.Working, machine.Blocked)
	if _, _, err := e.Store.Update(ctx, leaf.Task.ID, func(s *gitstore.Snapshot) (*gitstore.Op, error) {
		s.Task.Hold = BudgetHold(budget.Line{Scope: "parent " + mid.Task.Slug, LimitUSD: 1, SpentUSD: 1.25}, time.Now())
		return &gitstore.Op{Name: "walk", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	owner, limit, err := e.RaiseBudget(ctx, leaf.Task.Slug, true, 2)
	if err != nil || owner != mid.Task.Slug || limit != 3.25 {
		t.Fatalf("raise: %s %v %v, want mid raised from what it spent to 3.25", owner, limit, err)
	}
	// A bad setting is the key, the value and the fix.
	git("config", KeyBudgetTask, "lots")
	if _, err := e.BudgetLines(sn, time.Now()); err == nil || !strings.Contains(err.Error(), KeyBudgetTask) || !strings.Contains(err.Error(), "lots") || !strings.Contains(err.Error(), "git config "+KeyBudgetTask) {
		t.Fatalf("bad setting: %v", err)
	}
	// The day budget is not a task's to raise.
	git("config", KeyBudgetTask, "1")
	walk(t, e, other.Task.ID, machine.Working, machine.Blocked)
	if _, _, err := e.Store.Update(ctx, other.Task.ID, func(s *gitstore.Snapshot) (*gitstore.Op, error) {
		s.Task.Hold = BudgetHold(budget.Line{Scope: budget.ScopeDay, LimitUSD: 20, SpentUSD: 21}, time.Now())
		return &gitstore.Op{Name: "walk", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.RaiseBudget(ctx, other.Task.Slug, true, 5); err == nil || !strings.Contains(err.Error(), KeyBudgetDay) {
		t.Fatalf("raising a day hold: %v", err)
	}
}

// A hold lasts while the task is parked, or runs a neutral turn from
// there; a work turn, or any other status, ends it.
func TestHoldEndsWhenWorkResumes(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	sn, _ := e.Create(ctx, CreateInput{Title: "held"})
	id := sn.Task.ID
	walk(t, e, id, machine.Working, machine.Blocked)
	set := func(st machine.Status, kind string, hold bool) *gitstore.Snapshot {
		t.Helper()
		sn, _, err := e.Store.Update(ctx, id, func(s *gitstore.Snapshot) (*gitstore.Op, error) {
			s.Session = &gitstore.Session{ID: "s1", Number: 1, Host: "ops-test", TurnKind: kind}
			s.Task.Status = st
			if hold {
				s.Task.Hold = &gitstore.Hold{Kind: gitstore.HoldLimit, Until: time.Now().Add(time.Hour)}
			}
			return &gitstore.Op{Name: "walk", Actor: machine.System}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return sn
	}
	if sn := set(machine.Blocked, "unblock", true); sn.Task.Hold == nil {
		t.Fatal("a blocked task lost its hold")
	}
	if sn := set(machine.Working, "ask", false); sn.Task.Hold == nil {
		t.Fatal("an ask from a held task ended the hold")
	}
	if sn := set(machine.Working, "unblock", false); sn.Task.Hold != nil {
		t.Fatal("a work turn kept the hold")
	}
	set(machine.Blocked, "unblock", true)
	if sn := set(machine.Abandoned, "", true); sn.Task.Hold != nil {
		t.Fatal("a closed task kept a hold")
	}
}
