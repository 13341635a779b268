package spending

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// A turn recorded on a task whose budget a turn overspent is not
// started: the task parks back, held by the spent budget with its
// figures, the agent log says so with the command that carries it on,
// and raising the budget by an amount raises it from what was spent, so
// the next turn may spend that amount.
func TestATurnPastASpentBudgetParksTheTaskHeld(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	sn, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "spender", BudgetUSD: ptr(1.0)})
	if err != nil {
		t.Fatal(err)
	}
	id := sn.Task.ID
	spend(t, e, id, 1.5)
	turn := func() *task.Snapshot {
		t.Helper()
		sn, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
			if s.Session == nil {
				s.Session = &task.Session{ID: "s1", Number: 1, Host: "ops-test"}
				s.Task.Sessions = 1
			}
			s.Session.Turn++
			s.Task.Status = machine.Working
			return &task.Op{Name: "walk", Actor: machine.System}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return sn
	}

	sn = turn()
	_, err = e.Budgets().ForTurn(sn, sn.Session.Turn)
	var over *session.ErrOverBudget
	if !errors.As(err, &over) || over.Line.Scope != budget.ScopeTask || over.Line.LimitUSD != 1 || over.Line.SpentUSD != 1.5 {
		t.Fatalf("a turn past a spent budget: %v", err)
	}
	if want := "spender is over budget ($1.50 spent of $1.00 (task budget)): the turn was not started"; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "lazy unblock spender --budget +5") {
		t.Fatalf("error %q, want it to start %q and say how to raise it", err, want)
	}
	got, _ := e.Store.Load(id)
	if h := got.Task.Hold; got.Task.Status != machine.Blocked || h == nil || h.Kind != task.HoldBudget || h.Scope != budget.ScopeTask || h.LimitUSD != 1 || h.SpentUSD != 1.5 {
		t.Fatalf("parked %s with hold %+v, want blocked, held by the task budget", got.Task.Status, got.Task.Hold)
	}
	if s := got.Task.Hold.String(); s != "over budget: $1.50 spent of $1.00 (task budget)" {
		t.Fatalf("the hold reads %q", s)
	}
	log, err := os.ReadFile(proto.ForTask(e.Repo.LazyDir(), id).Path(proto.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	note, ok := proto.ParseLogLine(string(log))
	if !ok || note.Kind != proto.NoteBudget || note.Text != "held: over budget: $1.50 spent of $1.00 (task budget)" || !strings.Contains(note.Next, "lazy unblock spender --budget +5") {
		t.Fatalf("the agent log's note: %q", log)
	}

	owner, limit, err := e.Spending().RaiseBudget(ctx, "spender", true, 2)
	if err != nil || owner != "spender" || limit != 3.5 {
		t.Fatalf("raise by $2: %s %v %v, want spender's budget raised from the $1.50 spent to $3.50", owner, limit, err)
	}
	sn = turn()
	if left, err := e.Budgets().ForTurn(sn, sn.Session.Turn); err != nil || left != 2 {
		t.Fatalf("the next turn may spend $%v (%v), want $2", left, err)
	}
	// A task that ended has no budget to raise.
	walk(t, e, id, machine.Blocked, machine.Abandoned)
	if _, _, err := e.Spending().RaiseBudget(ctx, "spender", false, 10); err == nil || !strings.Contains(err.Error(), "reopen it first") {
		t.Fatalf("raising an abandoned task's budget: %v", err)
	}
}
