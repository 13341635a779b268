package runner

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// newFeedback returns the newest pending human message recorded after
// the turn the session last ran (left by another clone for this
// runner), or false.
func (s *Service) newFeedback(sn *task.Snapshot) (task.Turn, bool, error) {
	e := s.Env
	turns, err := e.Store.Turns(sn)
	if err != nil {
		return task.Turn{}, false, err
	}
	for i := len(turns) - 1; i >= 0; i-- {
		t := turns[i]
		if t.Seq <= sn.Session.Turn {
			break
		}
		if t.Role == task.RoleHuman && t.Kind == "unblock" && t.FeedbackDelivery == task.FeedbackPending {
			return t, true, nil
		}
	}
	return task.Turn{}, false, nil
}

// DeliverLeft starts the turn that delivers feedback other clones left
// for this runner's blocked task: the newest message, with every older
// undelivered one. It reports whether a turn started.
func (s *Service) DeliverLeft(ctx context.Context, id string) (bool, error) {
	e := s.Env
	sn, unlock, err := e.LockedLoad(ctx, id)
	if err != nil {
		return false, err
	}
	defer unlock()
	if sn.Task.Status != machine.Blocked || sn.Session == nil {
		return false, nil
	}
	t, ok, err := s.newFeedback(sn)
	if err != nil || !ok {
		return false, err
	}
	if err := e.Turns().CheckResumable(sn, "unblock", false, machine.Blocked); err != nil {
		return false, err
	}
	upstream, err := e.BaseBranch(ctx, sn, e.Dir())
	if err != nil {
		return false, err
	}
	turns, err := e.Store.Turns(sn)
	if err != nil {
		return false, err
	}
	prompt := session.WithUndelivered(t.Content, sn.Task.Slug, session.PendingBefore(turns, t.Seq, "unblock"))
	sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Blocked {
			return nil, fmt.Errorf("deliver feedback to %s: the task became %s", s.Task.Slug, s.Task.Status)
		}
		if err := machine.Validate(s.Task.Status, machine.Working, e.Actor); err != nil {
			return nil, err
		}
		s.Session.Turn, s.Session.TurnKind = t.Seq, "unblock"
		s.Session.ConsecutiveInterruptions = 0
		s.Task.Status = machine.Working
		return &task.Op{Name: "unblock", Actor: e.Actor, Reason: "feedback left by another clone"}, nil
	})
	if err != nil {
		return false, err
	}
	return true, e.Turns().Launch(sn, t, "unblock", prompt, upstream)
}
