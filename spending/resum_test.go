package spending

import (
	"context"
	"testing"
	"time"

	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// A flagged total is replaced with the sum of the turns lazy believes
// (a flagged turn left out), recorded by the system with what was
// replaced; once repaired, doing it again writes nothing.
func TestResumTotalSumsTheBelievedTurns(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	sn, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "spent"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	if _, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.AddTurn(task.Turn{Role: task.RoleAgent, Kind: "agent", Content: "one", At: now, Usage: &task.Usage{CostUSD: 1.5, InputTokens: 10}})
		s.AddTurn(task.Turn{Role: task.RoleAgent, Kind: "agent", Content: "two", At: now, Usage: &task.Usage{CostUSD: 2, OutputTokens: 5}})
		s.AddTurn(task.Turn{Role: task.RoleAgent, Kind: "agent", Content: "bad", At: now, Usage: &task.Usage{Flagged: "a negative cost"}})
		s.Task.Usage = &task.Usage{CostUSD: 9e9, Flagged: "above any turn's bound"}
		return &task.Op{Name: "walk", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	sum, err := e.Spending().ResumTotal(ctx, sn.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := task.Usage{CostUSD: 3.5, InputTokens: 10, OutputTokens: 5}
	if sum != want {
		t.Fatalf("sum %+v, want %+v", sum, want)
	}
	after, _ := e.Store.Load(sn.Task.ID)
	if after.Task.Usage == nil || *after.Task.Usage != want {
		t.Fatalf("recorded %+v", after.Task.Usage)
	}
	h, _ := e.Store.History(after)
	last := h[len(h)-1]
	if last.Actor != machine.System || last.Op != "reconcile" {
		t.Fatalf("the operation: %+v", last)
	}
	if sum, err := e.Spending().ResumTotal(ctx, sn.Task.ID); err != nil || sum != (task.Usage{}) {
		t.Fatalf("again: %+v %v", sum, err)
	}
	again, _ := e.Store.Load(sn.Task.ID)
	if h2, _ := e.Store.History(again); len(h2) != len(h) {
		t.Fatal("a total repaired already was written again")
	}
}
