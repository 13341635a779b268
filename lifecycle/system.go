package lifecycle

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// The system's steps: what the reconciler records when what it sees on
// this machine moves a task on (the spec's system actions). Each takes
// the task lock, judges the task again under it, and records one
// operation of the system whose reason says why; a task that is no
// longer what the reconciler saw is left alone (a nil Step).

// Step is a system step taken on a task: it moved from From to To, and
// Why is the reason recorded.
type Step struct {
	ID, Slug string
	From, To machine.Status
	Why      string
	// Neutral: the turn that ended was status-neutral (an ask, a sync,
	// accept's pre-accept turn) and parked the task back where it was.
	Neutral bool
}

// SystemStep applies apply to task id under its lock, recorded as one
// operation of the system with the reason apply returns; apply returns
// "" to decline (the task is no longer what the caller saw), and then
// nothing is written and the Step is nil.
func (l *Service) SystemStep(ctx context.Context, id string, apply func(s *task.Snapshot) string) (*Step, error) {
	unlock, err := l.Env.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var step *Step
	_, _, err = l.Env.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		from := s.Task.Status
		why := apply(s)
		if why == "" {
			step = nil
			return nil, nil
		}
		step = &Step{ID: id, Slug: s.Task.Slug, From: from, To: s.Task.Status, Why: why}
		return &task.Op{Name: "reconcile", Actor: machine.System, Reason: why}, nil
	})
	if err != nil {
		return nil, err // the closure ran, but nothing was written
	}
	return step, nil
}

// ParkGonePairing parks a pairing task whose pairing process is gone
// (spec: "Stale pairing sweep"), to conflict when violations are
// pending.
func (l *Service) ParkGonePairing(ctx context.Context, id string) (*Step, error) {
	return l.SystemStep(ctx, id, func(s *task.Snapshot) string {
		if s.Task.Status != machine.Pairing {
			return ""
		}
		s.Task.Status = machine.Park(s.PendingViolations())
		return "the pairing process is gone"
	})
}

// BacklogSessionless moves a blocked task that never had a session back
// to backlog: blocked means "waiting for review", and there is nothing
// to review (spec: "Blocked-to-backlog migration").
func (l *Service) BacklogSessionless(ctx context.Context, id string) (*Step, error) {
	return l.SystemStep(ctx, id, func(s *task.Snapshot) string {
		if s.Task.Status != machine.Blocked || s.Session != nil || s.Task.Sessions > 0 {
			return ""
		}
		s.Task.Status = machine.Backlog
		return "blocked without a session: nothing to review, back to backlog"
	})
}

// MergedOutside marks a parked task with a session zombie: its branch
// was found merged into target outside lazy (landing then finishes it).
func (l *Service) MergedOutside(ctx context.Context, id, target string) (*Step, error) {
	return l.SystemStep(ctx, id, func(s *task.Snapshot) string {
		if !ParkedStatus(s.Task.Status) || s.Session == nil {
			return ""
		}
		s.Task.Status = machine.Zombie
		return fmt.Sprintf("its branch %s was merged into %s outside lazy", s.Session.Branch, target)
	})
}

// ParkedStatus reports whether a task in status s is where a branch
// merged outside lazy is looked for; a working task's branch is moving,
// and judging it would yank a live turn.
func ParkedStatus(s machine.Status) bool {
	switch s {
	case machine.Blocked, machine.Conflict, machine.Interrupted, machine.Submitted:
		return true
	}
	return false
}

// ReviveLateResponse moves an interrupted task back to working when a
// completed response for its current turn (seq of session) arrived
// after it was marked interrupted, so that the response is recorded,
// never lost.
func (l *Service) ReviveLateResponse(ctx context.Context, id, session string, seq int) (*Step, error) {
	return l.SystemStep(ctx, id, func(s *task.Snapshot) string {
		if s.Task.Status != machine.Interrupted || s.Session == nil || s.Session.Turn != seq || s.Session.ID != session {
			return ""
		}
		s.Task.Status = machine.Working
		return "a completed response arrived after the task was marked interrupted"
	})
}
