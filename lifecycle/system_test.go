package lifecycle

import (
	"context"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// history is how many operations task id's record holds.
func history(t *testing.T, e *testEnv, id string) int {
	t.Helper()
	sn, err := e.Store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Store.History(sn)
	if err != nil {
		t.Fatal(err)
	}
	return len(h)
}

// The system's steps move a task only from what the reconciler saw,
// each recorded as one operation of the system with its reason; on any
// other task they decline and write nothing.
func TestTheSystemsSteps(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no git: nothing may need one
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		walk     []machine.Status
		step     func(l *Service, id string) (*Step, error)
		to       machine.Status
		why      string
		declines []machine.Status // walks on from the start, then the step declines
	}{
		{"a gone pairing parks", []machine.Status{machine.Working, machine.Blocked, machine.Pairing},
			func(l *Service, id string) (*Step, error) { return l.ParkGonePairing(ctx, id) },
			machine.Blocked, "the pairing process is gone", []machine.Status{machine.Working, machine.Blocked}},
		{"merged outside lazy", []machine.Status{machine.Working, machine.Interrupted},
			func(l *Service, id string) (*Step, error) { return l.MergedOutside(ctx, id, "main") },
			machine.Zombie, "its branch lazy/x was merged into main outside lazy", []machine.Status{machine.Working}},
		{"a late response revives", []machine.Status{machine.Working, machine.Interrupted},
			func(l *Service, id string) (*Step, error) { return l.ReviveLateResponse(ctx, id, "s1", 0) },
			machine.Working, "a completed response arrived after the task was marked interrupted", []machine.Status{machine.Working, machine.Blocked}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env(t)
			sn, err := e.Lifecycle().Create(ctx, CreateInput{Title: "x"})
			if err != nil {
				t.Fatal(err)
			}
			id := sn.Task.ID
			walk(t, e, id, tc.walk...)
			if _, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
				s.Session.Branch = "lazy/x"
				return &task.Op{Name: "walk", Actor: machine.System}, nil
			}); err != nil {
				t.Fatal(err)
			}
			from := tc.walk[len(tc.walk)-1]
			n := history(t, e, id)
			step, err := tc.step(e.Lifecycle(), id)
			if err != nil {
				t.Fatal(err)
			}
			if step == nil || step.ID != id || step.Slug != sn.Task.Slug || step.From != from || step.To != tc.to || step.Why != tc.why {
				t.Fatalf("step %+v, want %s -> %s: %q", step, from, tc.to, tc.why)
			}
			after, _ := e.Store.Load(id)
			h, _ := e.Store.History(after)
			if after.Task.Status != tc.to || len(h) != n+1 {
				t.Fatalf("the task is %s with %d operations, want %s with %d", after.Task.Status, len(h), tc.to, n+1)
			}

			// The same step on a task that is no longer what was seen.
			other, err := e.Lifecycle().Create(ctx, CreateInput{Title: "y"})
			if err != nil {
				t.Fatal(err)
			}
			walk(t, e, other.Task.ID, tc.declines...)
			n = history(t, e, other.Task.ID)
			if step, err := tc.step(e.Lifecycle(), other.Task.ID); err != nil || step != nil {
				t.Fatalf("declined: %+v %v", step, err)
			}
			if history(t, e, other.Task.ID) != n {
				t.Fatal("a declined step wrote")
			}
		})
	}
}

// A blocked task with no session goes back to backlog; one with a
// session stays.
func TestBacklogSessionless(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ctx := context.Background()
	e := env(t)
	sn, err := e.Lifecycle().Create(ctx, CreateInput{Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	walk(t, e, sn.Task.ID, machine.Working, machine.Blocked)
	if step, err := e.Lifecycle().BacklogSessionless(ctx, sn.Task.ID); err != nil || step != nil {
		t.Fatalf("with a session: %+v %v", step, err)
	}
	if _, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Session, s.Task.Sessions = nil, 0
		return &task.Op{Name: "walk", Actor: machine.System}, nil
	}); err != nil {
		t.Skipf("the store keeps a session once made: %v", err)
	}
	step, err := e.Lifecycle().BacklogSessionless(ctx, sn.Task.ID)
	if err != nil || step == nil || step.To != machine.Backlog || !strings.Contains(step.Why, "nothing to review") {
		t.Fatalf("sessionless: %+v %v", step, err)
	}
}
