package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// fakePicker's steps block until the test releases them (or their
// context ends), then decide the pick.
type fakePicker struct {
	mu      sync.Mutex
	steps   map[string]int
	running int
	release chan struct{}
}

func (p *fakePicker) PickStep(ctx context.Context, id string) (*attempts.PickOutcome, error) {
	p.mu.Lock()
	p.steps[id]++
	p.running++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.running--
		p.mu.Unlock()
	}()
	select {
	case <-p.release:
		return &attempts.PickOutcome{Slug: "g-" + id, Decided: true, Proposed: 2, Why: "attempt 2: gate passed"}, nil
	case <-ctx.Done():
		return &attempts.PickOutcome{Slug: "g-" + id}, ctx.Err()
	case <-time.After(10 * time.Second):
		return nil, errors.New("the test never released the step")
	}
}

func (p *fakePicker) counts(id string) (steps, running int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.steps[id], p.running
}

// pickingGroup makes an attempt group picked by the gate, not decided.
func pickingGroup(t *testing.T, r *Reconciler) string {
	t.Helper()
	st := r.store()
	g, err := st.Create(task.CreateSpec{Title: "three ways", Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Update(context.Background(), g.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Attempts = []string{"a1", "a2", "a3"}
		s.Task.Pick = &task.AttemptPick{Rule: task.PickGate}
		return &task.Op{Name: "attempts", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return g.Task.ID
}

// sweepOnce is the pass's pick sweep over the store's listing (the
// other sweeps need git).
func sweepOnce(t *testing.T, r *Reconciler) ([]Action, error) {
	t.Helper()
	entries, err := r.store().List()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var as []Action
	go func() {
		defer close(done)
		as, err = r.pickGroups(context.Background(), newView(entries, 0))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pass waited 10s: it waits for the pick's gates")
	}
	return as, err
}

// TestAPickGatesInTheBackgroundOfThePass: the pass starts the pick's
// step and returns while its gates run (a step held until the test
// releases it), so the other tasks' sweeps never wait for a gate; the
// passes meanwhile start no second step for the group, the reconciler
// says it is picking (the daemon stays up), and the pass after the step
// ended reports the pick as the group's action.
func TestAPickGatesInTheBackgroundOfThePass(t *testing.T) {
	r, _ := memReconciler(t)
	fp := &fakePicker{steps: map[string]int{}, release: make(chan struct{})}
	r.PickAttempts, r.Picker = true, fp
	defer func() { _ = r.Close() }()
	id := pickingGroup(t, r)
	for range 3 {
		if as, err := sweepOnce(t, r); err != nil || len(as) != 0 {
			t.Fatalf("a pass while the step runs: %+v, %v", as, err)
		}
	}
	waitUntil(t, func() bool { s, n := fp.counts(id); return s == 1 && n == 1 }, "the step to start once")
	if !r.Picking() {
		t.Fatal("the reconciler does not say a pick runs")
	}
	fp.release <- struct{}{}
	var got []Action
	waitUntil(t, func() bool {
		as, err := sweepOnce(t, r)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, as...)
		return len(got) > 0
	}, "the pick's action")
	if len(got) != 1 || got[0].TaskID != id || got[0].Why != "picked by the gate: attempt 2: gate passed" || got[0].To != machine.Backlog || !got[0].Neutral {
		t.Fatalf("actions %+v", got)
	}
}

// TestClosingTheReconcilerEndsThePickItRuns: a step keeps the daemon
// up once it has run since an earlier pass (gating), not as it starts;
// Close cancels a step still gating and returns once it ended, so a
// daemon that exits leaves no gate run behind; no pass starts a step
// after it.
func TestClosingTheReconcilerEndsThePickItRuns(t *testing.T) {
	r, _ := memReconciler(t)
	fp := &fakePicker{steps: map[string]int{}, release: make(chan struct{})}
	r.PickAttempts, r.Picker = true, fp
	id := pickingGroup(t, r)
	if _, err := sweepOnce(t, r); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { _, n := fp.counts(id); return n == 1 }, "the step to start")
	if r.Picking() {
		t.Fatal("a step the pass just started keeps the daemon up (one with nothing to gate ends at once)")
	}
	if _, err := sweepOnce(t, r); err != nil {
		t.Fatal(err)
	}
	if !r.Picking() {
		t.Fatal("a step running since the last pass does not keep the daemon up")
	}
	closed := make(chan struct{})
	go func() { _ = r.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited 10s: it does not cancel the step")
	}
	if s, n := fp.counts(id); s != 1 || n != 0 {
		t.Fatalf("after Close: %d steps, %d running", s, n)
	}
	if _, err := sweepOnce(t, r); err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("the pass after Close reports %v, want the canceled step", err)
	}
	if s, _ := fp.counts(id); s != 1 {
		t.Fatalf("a pass after Close started a step (%d)", s)
	}
}

// waitUntil polls cond, failing after 10s naming what it waited for.
func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
