package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// LimitResumed opens the turn the daemon records when it resumes a task
// whose usage limit has reset.
const LimitResumed = "[system] The usage limit reset; resumed"

// LimitPrompt is what the resumed agent is told.
const LimitPrompt = "The usage limit that stopped your last turn has reset. Continue the task where you left off; check the worktree first, since your last turn ended mid-way."

// LimitDue says whether s is held by a usage limit that has reset by now.
func LimitDue(s *task.Snapshot, now time.Time) bool {
	h := s.Task.Hold
	return h != nil && h.Kind == task.HoldLimit && !now.Before(h.Until)
}

// ResumeAfterLimit is the daemon's resume of a task a usage limit held,
// once the limit has reset: the same agent session, told the limit
// reset, with any message still pending. It is not an interruption and
// does not reset or advance the circuit breaker. It refuses, changing
// nothing, while the limit holds or when the task moved on.
func (l *Service) ResumeAfterLimit(ctx context.Context, id string, now time.Time) (*task.Snapshot, error) {
	e := l.Env
	if err := e.RequireLauncher("resume"); err != nil {
		return nil, err
	}
	sn, unlock, err := e.LockedLoad(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	check := func(s *task.Snapshot) error {
		if !LimitDue(s, now) {
			return fmt.Errorf("resume %s: it is not waiting for a usage limit that has reset", s.Task.Slug)
		}
		if !e.Owns(s) {
			return fmt.Errorf("resume %s: its session was not started on this machine", s.Task.Slug)
		}
		return e.Turns().CheckResumable(s, "resume", false, machine.Blocked, machine.Conflict)
	}
	return e.Turns().Continue(ctx, sn, "resume", check, func(s *task.Snapshot, at time.Time) (task.Turn, string, *task.Op, error) {
		prompt, err := e.Turns().DeliveryPrompt(s, LimitPrompt, "resume")
		if err != nil {
			return task.Turn{}, "", nil, err
		}
		// No message of its own, and not a human's: the breaker is left
		// as it was.
		turn := task.Turn{Role: task.RoleHuman, Actor: machine.System, Kind: "resume", Content: LimitResumed + "\n\n" + prompt, At: at}
		return turn, prompt, &task.Op{Name: "limit-resume", Actor: machine.System, Reason: "the usage limit reset"}, nil
	})
}
