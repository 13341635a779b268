package conversation

import (
	"context"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// Ask resumes a parked task's agent read-only to answer one question.
// It is status-neutral: the task reads working while the agent answers
// (so the reconciler and other callers see it busy) and parks back as it
// was when the answer, or an agent error, is recorded.
func (cv *Service) Ask(ctx context.Context, name, question string) (*task.Snapshot, error) {
	e := cv.Env
	if err := e.RequireLauncher("ask"); err != nil {
		return nil, err
	}
	question, err := session.RequiredProse("the question", question, "ask needs a question (-m, stdin or $EDITOR)")
	if err != nil {
		return nil, err
	}
	return cv.neutralTurn(ctx, name, "ask", question, false)
}

// Sync merges upstream into the task branch as a turn of its own (no
// agent runs) and parks the task back.
func (cv *Service) Sync(ctx context.Context, name string) (*task.Snapshot, error) {
	e := cv.Env
	if err := e.RequireLauncher("sync"); err != nil {
		return nil, err
	}
	return cv.neutralTurn(ctx, name, "sync", "[sync] merge upstream into the task branch", true)
}

func (cv *Service) neutralTurn(ctx context.Context, name, kind, content string, merge bool) (*task.Snapshot, error) {
	e := cv.Env
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	id := sn.Task.ID
	if err := cv.checkNeutral(sn, kind); err != nil {
		return nil, err
	}
	syncFrom := ""
	if merge {
		if syncFrom, err = e.BaseBranch(ctx, sn, e.Dir()); err != nil {
			return nil, err
		}
	}
	var turn task.Turn
	prompt := content
	sn, _, err = e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if err := cv.checkNeutral(s, kind); err != nil {
			return nil, err
		}
		if kind == "ask" {
			// Older questions no agent answered are asked again with it.
			if prompt, err = e.Turns().DeliveryPrompt(s, content, kind); err != nil {
				return nil, err
			}
		}
		t := task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: kind, Content: content, At: time.Now().UTC().Truncate(time.Second), Session: s.Session.ID}
		if kind == "ask" {
			t.FeedbackDelivery = task.FeedbackPending
		}
		turn = s.AddTurn(t)
		s.Session.Turn, s.Session.TurnKind = turn.Seq, kind
		s.Task.Status = machine.Working
		if kind == "ask" {
			s.Task.Substate = "agent:answering" // not mistaken for a work turn
		}
		return &task.Op{Name: kind, Actor: e.Actor}, nil
	})
	if err != nil {
		return nil, err
	}
	return sn, e.Turns().Launch(sn, turn, kind, prompt, syncFrom)
}

// checkNeutral allows ask and sync on parked tasks only.
func (cv *Service) checkNeutral(s *task.Snapshot, kind string) error {
	e := cv.Env
	return e.Turns().CheckResumable(s, kind, true, machine.Blocked, machine.Conflict)
}
