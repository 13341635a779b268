package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// ErrLeftForRunner is not a failure: feedback for a pooled task that a
// runner elsewhere holds was recorded for it (pending) instead of
// starting a turn here. The caller pushes it; the runner delivers it
// after its next fetch.
type ErrLeftForRunner struct {
	Task, Runner string
}

func (e *ErrLeftForRunner) Error() string {
	return fmt.Sprintf("%s is held by runner %s: the feedback is recorded for it and reaches it with the next lazy push (it delivers it after its next fetch)", e.Task, e.Runner)
}

// leaveForRunner records feedback on a pooled task this machine does not
// run, pending delivery, without changing its status or starting a turn.
func (l *Service) leaveForRunner(ctx context.Context, sn *task.Snapshot, feedback string) (*task.Snapshot, error) {
	e := l.Env
	runner := sn.Session.Host
	if sn.Task.Pool != nil && sn.Task.Pool.Runner != "" {
		runner = sn.Task.Pool.Runner
	}
	sn, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Blocked && s.Task.Status != machine.Working {
			return nil, fmt.Errorf("unblock %s: the task is %s; feedback for its runner goes to a blocked or working task", s.Task.Slug, s.Task.Status)
		}
		s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "unblock", Content: feedback,
			At: time.Now().UTC().Truncate(time.Second), Session: s.Session.ID, FeedbackDelivery: task.FeedbackPending})
		return &task.Op{Name: "feedback", Actor: e.Actor, Reason: "for runner " + runner}, nil
	})
	if err != nil {
		return nil, err
	}
	return sn, &ErrLeftForRunner{Task: sn.Task.Slug, Runner: runner}
}

// ForRunner reports whether an unblock of sn on this machine is
// feedback for the runner that holds it elsewhere.
func (l *Service) ForRunner(sn *task.Snapshot) bool {
	e := l.Env
	return sn.Task.Pool != nil && sn.Session != nil && !e.Owns(sn)
}
