package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// reviseSubmission is the first step of an unblock on a submitted task:
// back to blocked (so the ordinary unblock follows), the pull request
// kept open and the record marked as being revised.
func (l *Service) reviseSubmission(ctx context.Context, sn *task.Snapshot) (*task.Snapshot, error) {
	e := l.Env
	if sn.Task.Status != machine.Submitted {
		return sn, nil
	}
	out, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Submitted {
			return nil, nil
		}
		s.Task.Status = machine.Blocked
		text := "revising the submission; the pull request stays open and lazy submit updates it"
		if f := s.Task.Forge; f != nil {
			f.Revising = true
			if f.URL != "" {
				text = fmt.Sprintf("revising the submission; pull request #%d (%s) stays open and lazy submit updates it", f.Number, f.URL)
			}
		}
		s.AddComment(task.Comment{Actor: e.Actor, At: time.Now().UTC().Truncate(time.Second), Text: text})
		return &task.Op{Name: "revise", Actor: e.Actor, Reason: "the submission is being revised"}, nil
	})
	return out, err
}

// Unblock gives a parked task human feedback and launches the next turn.
// The feedback is recorded (pending delivery) before anything is
// launched, and the supervisor merges upstream into the task branch
// before the agent runs: every unblock merges upstream.
//
// Pending file-permission violations must be decided (d) first: the
// decisions are recorded, reverted files restored, and only then does the
// turn start.
func (l *Service) Unblock(ctx context.Context, name, feedback string, d Decisions) (*task.Snapshot, error) {
	e := l.Env
	if err := e.RequireLauncher("unblock"); err != nil {
		return nil, err
	}
	feedback, err := session.RequiredProse("the feedback", feedback, "unblock needs feedback for the agent (-m, stdin or $EDITOR)")
	if err != nil {
		return nil, err
	}
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if sn, err = l.escapeStranded(ctx, sn, "unblock"); err != nil {
		return nil, err
	}
	if l.ForRunner(sn) && !d.any() {
		return l.leaveForRunner(ctx, sn, feedback)
	}
	if sn.Task.Status == machine.Submitted {
		// Everything that can refuse is checked before the submission is
		// withdrawn: a refused unblock leaves the task submitted.
		asBlocked := *sn
		asBlocked.Task.Status = machine.Blocked
		if err := e.Turns().CheckResumable(&asBlocked, "unblock", false, machine.Blocked); err != nil {
			return nil, fmt.Errorf("%w; %s stays submitted", err, sn.Task.Slug)
		}
		if err := agent.CheckCredentials(sn.Session.Agent, agent.HostEnvironment()); err != nil {
			return nil, fmt.Errorf("unblock %s: %w; nothing was recorded and it stays submitted", sn.Task.Slug, err)
		}
	}
	if sn, err = l.reviseSubmission(ctx, sn); err != nil {
		return nil, err
	}
	if d.any() {
		if err := e.Turns().CheckResumable(sn, "unblock", true, machine.Blocked, machine.Conflict, machine.Interrupted); err != nil {
			return nil, err
		}
		if sn, err = l.decide(ctx, sn, d); err != nil {
			return nil, err
		}
	}
	check := func(s *task.Snapshot) error {
		return e.Turns().CheckResumable(s, "unblock", false, machine.Blocked, machine.Conflict, machine.Interrupted)
	}
	return e.Turns().Continue(ctx, sn, "unblock", check, func(s *task.Snapshot, now time.Time) (task.Turn, string, *task.Op, error) {
		prompt, err := e.Turns().DeliveryPrompt(s, feedback, "unblock")
		if err != nil {
			return task.Turn{}, "", nil, err
		}
		s.Session.ConsecutiveInterruptions = 0 // a human intervened
		turn := task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "unblock", Content: feedback, At: now, FeedbackDelivery: task.FeedbackPending}
		return turn, prompt, &task.Op{Name: "unblock", Actor: e.Actor}, nil
	})
}
