package handoff

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/internal/confine"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// Input is who takes a task over: the agent (and the exec
// agent's command), and a note for the next step.
type Input struct {
	session.StartInput
	Note string
}

// HandOff gives a parked task to another agent: a new session on the
// same branch and worktree, with in.Agent, whose first turn's prompt is
// the handoff record (kept in the task as that turn). The previous
// agent's conversation stays where it was; the new agent starts its own.
// Messages still pending are in the record, and delivered with it.
func (h *Service) HandOff(ctx context.Context, name string, in Input) (*task.Snapshot, error) {
	e := h.Env
	if err := e.RequireLauncher("hand off"); err != nil {
		return nil, err
	}
	if _, err := agent.For(in.Agent); err != nil {
		return nil, err
	}
	if err := agent.ValidModel(in.Model); err != nil {
		return nil, err
	}
	if in.Agent == "exec" {
		in.Model = "" // the exec agent runs its command as given
	}
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	slug := sn.Task.Slug
	if sn.Session == nil {
		return nil, fmt.Errorf("hand off %s: the task has no session yet; start it with lazy start %s --agent %s", slug, slug, in.Agent)
	}
	if err := e.Turns().CheckResumable(sn, "hand off", false, machine.Blocked, machine.Conflict, machine.Interrupted); err != nil {
		return nil, err
	}
	if err := agent.CheckCredentials(in.Agent, agent.HostEnvironment()); err != nil {
		return nil, fmt.Errorf("hand off %s: %w; nothing was recorded", slug, err)
	}
	local, err := e.Owned(sn)
	if err != nil {
		return nil, fmt.Errorf("hand off %w", err)
	}
	// The new session keeps the old one's sandbox; a handoff that is not
	// a human's is held to all of the old session's confinement and the
	// asking agent's.
	sandboxed, mode := local.Sandbox, in.PermissionMode
	if e.Actor != machine.Human {
		floor := local.Confinement()
		if caller, ok, err := e.CallerSession(); err != nil {
			return nil, session.ConfinementRefusal("hand off", slug, err)
		} else if ok {
			floor = confine.Tightest(floor, caller.Confinement())
		}
		eff, err := session.Held(confine.Tightest(floor, confine.Confinement{Sandbox: local.Sandbox, PermissionMode: in.PermissionMode, AnyCommand: true}), in.Agent, in.Request, in.SandboxIfAsked)
		if err != nil {
			return nil, session.ConfinementRefusal("hand off", slug, err)
		}
		sandboxed, mode = eff.Sandbox, eff.PermissionMode
	}
	if err := session.SandboxReady(ctx, sandboxed); err != nil {
		return nil, fmt.Errorf("hand off %s: %w; nothing was recorded", slug, err)
	}
	record, err := h.Record(ctx, sn, in.Agent, in.Note)
	if err != nil {
		return nil, err
	}
	upstream, err := e.BaseBranch(ctx, sn, e.Dir())
	if err != nil {
		return nil, err
	}
	sessionID, err := task.NewID()
	if err != nil {
		return nil, err
	}
	// The same worktree and branch, decided here as before; the agent and
	// its command are this handoff's.
	if err := e.Sessions().Save(owned.Session{
		TaskID: sn.Task.ID, SessionID: sessionID, Agent: in.Agent, Exec: in.ExecCommand, PermissionMode: mode, Model: in.Model,
		Worktree: local.Worktree, Branch: local.Branch, StartedAt: time.Now().UTC(), Sandbox: sandboxed, Prepared: true,
	}); err != nil {
		return nil, err
	}
	var turn task.Turn
	from, prevID, prevStatus := sn.Session.Agent, sn.Session.ID, sn.Task.Status
	updated, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		// Checked above under the task lock; the local record names the
		// new session by now, so only a change of the record itself (a
		// pull) is looked for here.
		if s.Session == nil || s.Session.ID != prevID || s.Task.Status != prevStatus {
			return nil, fmt.Errorf("hand off %s: the task changed meanwhile; look at it again", s.Task.Slug)
		}
		now := time.Now().UTC().Truncate(time.Second)
		prev := s.Session
		s.Task.Sessions++
		s.Session = &task.Session{
			ID: sessionID, Number: s.Task.Sessions, Host: e.Store.Host(), Agent: in.Agent, ExecCommand: in.ExecCommand,
			PermissionMode: mode, Model: in.Model, Branch: prev.Branch, Worktree: prev.Worktree, GitStartSHA: prev.GitStartSHA, StartedAt: now,
		}
		// The record carries every pending message, so they are this
		// turn's to deliver: it consumes them when it completes.
		turn = s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "handoff", Content: record, At: now, Session: sessionID, FeedbackDelivery: task.FeedbackPending})
		s.Session.Turn, s.Session.TurnKind = turn.Seq, "handoff"
		s.Task.Status = machine.Working
		return &task.Op{Name: "handoff", Actor: e.Actor, Reason: "from " + from + " to " + in.Agent}, nil
	})
	if err != nil {
		// Nothing was recorded: this machine keeps the session it had.
		if rerr := e.Sessions().Save(local); rerr != nil {
			return nil, fmt.Errorf("%w (and restoring this machine's record of the session failed: %w; lazy start --take-over %s repairs it)", err, rerr, slug)
		}
		return nil, err
	}
	sn = updated
	h.saveFile(sn.Task.ID, record)
	return sn, e.Turns().Launch(sn, turn, "handoff", record, upstream)
}

// File is where the newest handoff record of a task is kept on
// this machine as a file, for a human taking over with lazy pair.
func (h *Service) File(id string) string {
	return h.Env.Repo.LazyDir("handoff", id+".md")
}

func (h *Service) saveFile(id, record string) {
	p := h.File(id)
	if os.MkdirAll(filepath.Dir(p), 0o755) == nil {
		_ = os.WriteFile(p, []byte(record), 0o644)
	}
}

// WriteFile writes sn's handoff record for a human who takes the
// task over (lazy pair) and returns its path.
func (h *Service) WriteFile(ctx context.Context, sn *task.Snapshot) (string, error) {
	record, err := h.Record(ctx, sn, "a human", "")
	if err != nil {
		return "", err
	}
	h.saveFile(sn.Task.ID, record)
	return h.File(sn.Task.ID), nil
}
