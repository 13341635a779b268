package reconcile

import (
	"context"
	"testing"

	"github.com/lazyorch/lazy/machine"
)

// TestSteadyPassLoadsNothing counts full snapshot loads: a pass over
// running turns of this host, working and interrupted tasks of another
// host (no local session record), and parked tasks loads no snapshot,
// however many parked tasks there are. Before, every working task was
// loaded on every pass, and every interrupted one twice.
func TestSteadyPassLoadsNothing(t *testing.T) {
	f := newFixture(t)
	f.create(t, 20)
	f.activate(t, 3)
	foreign := f.backlog[:2]
	f.backlog = f.backlog[2:]
	walk(t, f.store, foreign[0], machine.Working)
	walk(t, f.store, foreign[1], machine.Working, machine.Interrupted)
	r := f.reconciler()
	ctx := context.Background()
	for round, more := range []int{0, 40} {
		f.create(t, more)
		for pass := 0; pass < 2; pass++ {
			actions, err := r.Sweep(ctx, f.list(t))
			if err != nil || len(actions) != 0 {
				t.Fatalf("round %d: a steady-state pass acted: %v %v", round, actions, err)
			}
		}
		if n := r.loads.Load(); n != 0 {
			t.Fatalf("round %d: %d snapshot loads in steady-state passes, want 0", round, n)
		}
	}
}

// TestDeadSupervisorIsStillJudged is the other side of the probes: a
// working task of this host whose supervisor holds no lock is loaded and,
// past the start grace, interrupted.
func TestDeadSupervisorIsStillJudged(t *testing.T) {
	f := newFixture(t)
	f.create(t, 3)
	id := f.backlog[0]
	walk(t, f.store, id, machine.Working)
	f.own(t, id)
	r := f.reconciler()
	r.StartGrace = 1 // nanosecond: the turn is past its grace at once
	actions, err := r.Sweep(context.Background(), f.list(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(actions) != 1 || actions[0].TaskID != id || actions[0].To != machine.Interrupted {
		t.Fatalf("actions = %+v, want %s interrupted", actions, id)
	}
	if r.loads.Load() == 0 {
		t.Fatal("the dead supervisor's task was judged without loading it")
	}
}
