package spending

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// A task's budget counts it and everything under it; a subtask's turns
// run under its own budget, each ancestor's and the day's; the tightest
// one decides, and an own budget replaces lazy.budget.task.
func TestBudgetLinesRollUpSubtasks(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	git := func(args ...string) { t.Helper(); e.gitConfig(t, args[1:]...) }
	root, _ := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "root", BudgetUSD: ptr(3.0)})
	mid, _ := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "mid", Parent: root.Task.ID})
	leaf, _ := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "leaf", Parent: mid.Task.ID})
	other, _ := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "other"})
	spend(t, e, root.Task.ID, 1)
	spend(t, e, mid.Task.ID, 0.5)
	spend(t, e, leaf.Task.ID, 0.75)
	spend(t, e, other.Task.ID, 100)

	sn, _ := e.Store.Load(leaf.Task.ID)
	lines, err := e.Budgets().Lines(sn, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// No lazy.budget.task: only the root's own budget applies, over the
	// whole tree (1 + 0.5 + 0.75), the other task not at all.
	if len(lines) != 1 || lines[0].Scope != "parent root" || lines[0].LimitUSD != 3 || lines[0].SpentUSD != 2.25 {
		t.Fatalf("lines %+v", lines)
	}
	git("config", session.KeyBudgetTask, "1")
	git("config", session.KeyBudgetDay, "$20")
	if err := e.Budgets().Ledger().Add(budget.Entry{Task: "x", Session: "s", Seq: 1, At: time.Now(), CostUSD: 19.5}); err != nil {
		t.Fatal(err)
	}
	lines, err = e.Budgets().Lines(sn, time.Now())
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
	if _, _, err := e.Store.Update(ctx, leaf.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Hold = session.BudgetHold(budget.Line{Scope: "parent " + mid.Task.Slug, LimitUSD: 1, SpentUSD: 1.25}, time.Now())
		return &task.Op{Name: "walk", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	owner, limit, err := e.Spending().RaiseBudget(ctx, leaf.Task.Slug, true, 2)
	if err != nil || owner != mid.Task.Slug || limit != 3.25 {
		t.Fatalf("raise: %s %v %v, want mid raised from what it spent to 3.25", owner, limit, err)
	}
	// A bad setting is the key, the value and the fix.
	git("config", session.KeyBudgetTask, "lots")
	if _, err := e.Budgets().Lines(sn, time.Now()); err == nil || !strings.Contains(err.Error(), session.KeyBudgetTask) || !strings.Contains(err.Error(), "lots") || !strings.Contains(err.Error(), "git config "+session.KeyBudgetTask) {
		t.Fatalf("bad setting: %v", err)
	}
	// The day budget is not a task's to raise.
	git("config", session.KeyBudgetTask, "1")
	walk(t, e, other.Task.ID, machine.Working, machine.Blocked)
	if _, _, err := e.Store.Update(ctx, other.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Hold = session.BudgetHold(budget.Line{Scope: budget.ScopeDay, LimitUSD: 20, SpentUSD: 21}, time.Now())
		return &task.Op{Name: "walk", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Spending().RaiseBudget(ctx, other.Task.Slug, true, 5); err == nil || !strings.Contains(err.Error(), session.KeyBudgetDay) {
		t.Fatalf("raising a day hold: %v", err)
	}
}

// A hold lasts while the task is parked, or runs a neutral turn from
// there; a work turn, or any other status, ends it.
func TestHoldEndsWhenWorkResumes(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	sn, _ := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "held"})
	id := sn.Task.ID
	walk(t, e, id, machine.Working, machine.Blocked)
	set := func(st machine.Status, kind string, hold bool) *task.Snapshot {
		t.Helper()
		sn, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
			s.Session = &task.Session{ID: "s1", Number: 1, Host: "ops-test", TurnKind: kind}
			s.Task.Status = st
			if hold {
				s.Task.Hold = &task.Hold{Kind: task.HoldLimit, Until: time.Now().Add(time.Hour)}
			}
			return &task.Op{Name: "walk", Actor: machine.System}, nil
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

// Hostile figures among a task's subtasks: a sibling's -1e308 cannot
// cancel another's spending, and a child's 1e308 is left out rather than
// holding its parent for good; both are flagged under the parent.
func TestBudgetLinesLeaveOutHostileFigures(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	parent, _ := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "parent", BudgetUSD: ptr(10.0)})
	spender, _ := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "spender", Parent: parent.Task.ID})
	canceller, _ := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "canceller", Parent: parent.Task.ID})
	hog, _ := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "hog", Parent: parent.Task.ID})
	spend(t, e, spender.Task.ID, 4)
	spend(t, e, canceller.Task.ID, -1e308)
	spend(t, e, hog.Task.ID, 1e308)

	sn, _ := e.Store.Load(parent.Task.ID)
	lines, err := e.Budgets().Lines(sn, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || lines[0].SpentUSD != 4 || lines[0].LimitUSD != 10 || lines[0].Over() {
		t.Fatalf("lines %+v: want $4 of $10 spent, the hostile figures left out", lines)
	}
	spent, flags, err := e.Spending().Spending(sn)
	if err != nil || spent.CostUSD != 4 || len(flags) != 2 {
		t.Fatalf("spending %+v, flags %+v, %v", spent, flags, err)
	}
	for _, f := range flags {
		if f.Task != canceller.Task.Slug && f.Task != hog.Task.Slug {
			t.Errorf("flag of %s", f.Task)
		}
	}
	if u, _ := e.Spending().Spent(sn); u.CostUSD != 4 {
		t.Fatalf("the accept trailer's figure: %+v", u)
	}
}

// A budget of 0 allows no spend, from a task or from git config; an
// unset key is no budget; a budget that cannot be one is refused with
// the fix.
func TestZeroBudgetAllowsNoSpend(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	git := func(args ...string) { t.Helper(); e.gitConfig(t, args[1:]...) }
	sn, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "frozen", BudgetUSD: ptr(0.0)})
	if err != nil {
		t.Fatal(err)
	}
	over, _, err := e.Budgets().Over(sn)
	if err != nil || over == nil || over.LimitUSD != 0 || over.Scope != budget.ScopeTask {
		t.Fatalf("a task budget of 0: over %+v, %v", over, err)
	}
	free, _ := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "free"})
	if over, left, err := e.Budgets().Over(free); err != nil || over != nil || left != 0 {
		t.Fatalf("no budget anywhere: %+v %v %v", over, left, err)
	}
	git("config", session.KeyBudgetDay, "0")
	if over, _, err := e.Budgets().Over(free); err != nil || over == nil || over.Scope != budget.ScopeDay {
		t.Fatalf("lazy.budget.day 0: %+v %v", over, err)
	}
	git("config", "--unset", session.KeyBudgetDay)
	for _, bad := range []string{"-1", "1e13", "NaN", "0x10", "five"} {
		git("config", session.KeyBudgetTask, bad)
		_, err := e.Budgets().Settings()
		if err == nil || !strings.Contains(err.Error(), "git config "+session.KeyBudgetTask+" 10") || !strings.Contains(err.Error(), "--unset") {
			t.Errorf("lazy.budget.task %s: %v", bad, err)
		}
	}
	for _, bad := range []float64{-1, 1e308, math.Inf(1)} {
		if _, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "bad budget", BudgetUSD: ptr(bad)}); err == nil || !strings.Contains(err.Error(), "nothing was created") {
			t.Errorf("create with budget %v: %v", bad, err)
		}
	}
	// Edit sets 0 and clears.
	if _, err := e.Lifecycle().Edit(ctx, free.Task.Slug, lifecycle.EditInput{BudgetUSD: ptr(0.0)}); err != nil {
		t.Fatal(err)
	}
	got, _ := e.Store.Load(free.Task.ID)
	if v, ok, _ := got.Task.OwnBudget(); !ok || v != 0 {
		t.Fatalf("edit --budget 0: %v %v", v, ok)
	}
	if _, err := e.Lifecycle().Edit(ctx, free.Task.Slug, lifecycle.EditInput{ClearBudget: true}); err != nil {
		t.Fatal(err)
	}
	got, _ = e.Store.Load(free.Task.ID)
	if got.Task.BudgetUSD != nil {
		t.Fatalf("edit --budget none left %v", *got.Task.BudgetUSD)
	}
}

// Turns are priced from their tokens when the CLI reported no cost: a
// reported cost wins, a lazy.price setting beats the table, and a model
// neither knows is unpriced, never $0.
func TestPriceTurn(t *testing.T) {
	e := env(t)
	prices, err := e.Spending().Prices()
	if err != nil {
		t.Fatal(err)
	}
	u := task.Usage{InputTokens: 60000, OutputTokens: 2400}
	if by := PriceTurn(prices, "gpt-5-codex", &u); by != budget.PricedByTable || u.CostUSD != 0.099 || u.Unpriced != 0 {
		t.Fatalf("codex 60000/2400: %s %+v", by, u)
	}
	u = task.Usage{CostUSD: 0.5, InputTokens: 60000, OutputTokens: 2400}
	if by := PriceTurn(prices, "gpt-5-codex", &u); by != budget.PricedByAgent || u.CostUSD != 0.5 {
		t.Fatalf("a reported cost: %s %+v", by, u)
	}
	u = task.Usage{InputTokens: 60000, OutputTokens: 2400}
	if by := PriceTurn(prices, "gpt-9-unheard-of", &u); by != "" || u.CostUSD != 0 || u.Unpriced != 1 || !strings.HasPrefix(u.String(), "unpriced, ") {
		t.Fatalf("an unknown model: %s %+v %q", by, u, u.String())
	}
	e.gitConfig(t, "--add", KeyPrice, "gpt-9-unheard-of 2,0.5,20")
	e.gitConfig(t, "--add", KeyPrice, "gpt-5-codex 1,0.1,8")
	if prices, err = e.Spending().Prices(); err != nil {
		t.Fatal(err)
	}
	u = task.Usage{InputTokens: 60000, OutputTokens: 2400}
	if by := PriceTurn(prices, "gpt-5-codex", &u); by != budget.PricedByConfig || u.CostUSD != 0.0792 {
		t.Fatalf("a lazy.price override: %s %+v", by, u)
	}
	e.gitConfig(t, "--add", KeyPrice, "gpt-5-codex cheap")
	if _, err := e.Spending().Prices(); err == nil || !strings.Contains(err.Error(), "git config --add "+KeyPrice) {
		t.Fatalf("a bad lazy.price: %v", err)
	}
}
