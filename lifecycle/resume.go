package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// Crash-context prompts (spec: "Auto-Resume: Clean Worktree Path" and
// "Dirty Worktree Path").
const (
	ResumeClean = "You are being resumed after a crash. Upstream has been merged into your branch since your last turn. Don't assume your previous state is intact — verify before continuing."
	ResumeDirty = "You are being resumed after a crash. There are uncommitted changes in your worktree from your interrupted turn. Review them, decide what to keep, commit or discard, then continue your work."
)

// ResumePrompt builds the prompt of a resumed work turn: the crash
// context, then, when messages were recorded but never delivered, the
// newest verbatim and every older one after it (withUndelivered), so a
// queue is never silently collapsed. pending is what the turn delivers,
// oldest first.
func ResumePrompt(dirty bool, slug string, pending []task.Turn) string {
	prompt := ResumeClean
	if dirty {
		prompt = ResumeDirty
	}
	if len(pending) == 0 {
		return prompt
	}
	newest := pending[len(pending)-1]
	prompt += "\n\nThis feedback was given to you before the interruption and you never received it. Here it is, verbatim:\n\n" + session.QuotedMessage(newest)
	return session.WithUndelivered(prompt, slug, pending[:len(pending)-1])
}

// ResumeAsk opens the prompt of a resumed ask.
const ResumeAsk = "You were interrupted while answering a question. This turn is read-only: answer it, and change nothing in the worktree or the repository."

// ResumeAskPrompt is the prompt of a resumed ask: the question that was
// never answered, verbatim, and any older unanswered ones.
func ResumeAskPrompt(slug string, pending []task.Turn) string {
	if len(pending) == 0 {
		return ResumeAsk
	}
	newest := pending[len(pending)-1]
	return session.WithUndelivered(ResumeAsk+" The question, verbatim:\n\n"+session.QuotedMessage(newest), slug, pending[:len(pending)-1])
}

// MaxConsecutiveInterruptions is the circuit breaker: after this many
// interrupted turns in a row the reconciler stops auto-resuming and the
// task waits for a human (spec: "Circuit Breaker Check").
const MaxConsecutiveInterruptions = 3

// AutoResumedNote opens the synthetic turn an auto-resume records.
const AutoResumedNote = "[system] Session interrupted and auto-resumed"

// Resume restarts an interrupted task without new feedback. It resets
// the consecutive-interruption counter: a human intervened.
func (l *Service) Resume(ctx context.Context, name string) (*task.Snapshot, error) {
	e := l.Env
	if err := e.RequireLauncher("resume"); err != nil {
		return nil, err
	}
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return l.resume(ctx, sn, false)
}

// AutoResumeRefusal says why an interrupted task is not auto-resumed, or
// "" when it may be. The reconciler asks before every auto-resume.
func (l *Service) AutoResumeRefusal(s *task.Snapshot) string {
	e := l.Env
	switch {
	case s.Task.Status != machine.Interrupted || s.Session == nil:
		return "not interrupted"
	case !e.Owns(s):
		return "its session was not started on this machine"
	case s.Session.ConsecutiveInterruptions >= MaxConsecutiveInterruptions:
		return fmt.Sprintf("circuit breaker: %d consecutive interruptions; a human must resume or unblock it", s.Session.ConsecutiveInterruptions)
	case s.Session.InterruptPhase == "merge_and_fix":
		return "the upstream merge failed; a human must resolve it"
	case s.PendingViolations() > 0 && s.Session.TurnKind != "ask":
		// An ask decides nothing and may be resumed; a work turn would pile
		// work onto files a decision may revert.
		return "file-permission violations are pending"
	}
	if _, running := e.Supervisors().Running(s.Task.ID); running {
		return "a supervisor still runs it"
	}
	if err := agent.CheckCredentials(s.Session.Agent, agent.HostEnvironment()); err != nil {
		return err.Error() // relaunching would only spend a turn learning it
	}
	return ""
}

// AutoResume is the reconciler's resume of task id: the same turn as
// lazy resume, recorded by the system, without resetting the circuit
// breaker. It refuses with the reason from AutoResumeRefusal.
func (l *Service) AutoResume(ctx context.Context, id string) (*task.Snapshot, error) {
	e := l.Env
	if err := e.RequireLauncher("auto-resume"); err != nil {
		return nil, err
	}
	sn, unlock, err := e.LockedLoad(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if why := l.AutoResumeRefusal(sn); why != "" {
		return nil, fmt.Errorf("auto-resume %s: %s", sn.Task.Slug, why)
	}
	return l.resume(ctx, sn, true)
}

// resume runs under the task lock. The clean-worktree path merges
// upstream first; the dirty path does not, and the prompt says which it
// was. Messages never delivered are re-delivered (ResumePrompt). An
// interrupted ask is resumed as the ask it was: read-only, its question
// re-delivered, the task parked back where it was when it ends.
func (l *Service) resume(ctx context.Context, sn *task.Snapshot, auto bool) (*task.Snapshot, error) {
	e := l.Env
	id := sn.Task.ID
	verb := "resume"
	if auto {
		verb = "auto-resume"
	}
	kind := "resume"
	if sn.Session != nil && sn.Session.TurnKind == "ask" {
		kind = "ask"
	}
	check := func(s *task.Snapshot) error {
		if auto {
			if why := l.AutoResumeRefusal(s); why != "" {
				return fmt.Errorf("auto-resume %s: %s", s.Task.Slug, why)
			}
		}
		if s.Session != nil && (s.Session.TurnKind == "ask") != (kind == "ask") {
			return fmt.Errorf("%s %s: the interrupted turn changed meanwhile; try again", verb, s.Task.Slug)
		}
		// An ask decides nothing, so pending violations do not hold it up.
		return e.Turns().CheckResumable(s, verb, kind == "ask", machine.Interrupted)
	}
	if err := check(sn); err != nil {
		return nil, err
	}
	if err := agent.CheckCredentials(sn.Session.Agent, agent.HostEnvironment()); err != nil {
		return nil, fmt.Errorf("%s %s: %w; nothing was recorded", verb, sn.Task.Slug, err)
	}
	local, err := e.Owned(sn)
	if err != nil {
		return nil, fmt.Errorf("%s %w", verb, err)
	}
	dirty, err := l.worktrees().Dirty(ctx, local.Worktree)
	if err != nil {
		return nil, fmt.Errorf("%s %s: inspect the worktree: %w", verb, sn.Task.Slug, err)
	}
	syncFrom := ""
	if !dirty && kind != "ask" {
		// A clean worktree merges upstream first; merging into a dirty one
		// would fail or tangle the interrupted edits, and an ask changes
		// nothing.
		if syncFrom, err = e.BaseBranch(ctx, sn, e.Dir()); err != nil {
			return nil, err
		}
	}
	var turn task.Turn
	var prompt string
	sn, _, err = e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if err := check(s); err != nil {
			return nil, err
		}
		turns, err := e.Store.Turns(s)
		if err != nil {
			return nil, err
		}
		pending := session.PendingBefore(turns, s.Task.Turns+1, kind)
		if kind == "ask" {
			prompt = ResumeAskPrompt(s.Task.Slug, pending)
		} else {
			prompt = ResumePrompt(dirty, s.Task.Slug, pending)
		}
		content := prompt
		if auto {
			content = AutoResumedNote + "\n\n" + prompt
		}
		// The resume turn carries no message of its own, so a crash
		// during it re-delivers the same pending ones again.
		turn = s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: verb, Content: content, At: time.Now().UTC().Truncate(time.Second), Session: s.Session.ID})
		s.Session.Turn, s.Session.TurnKind = turn.Seq, kind
		s.Session.AutoResumed = auto
		if !auto {
			s.Session.ConsecutiveInterruptions = 0 // a human intervened
		}
		s.Task.Status = machine.Working
		if kind == "ask" {
			s.Task.Substate = "agent:answering"
		}
		return &task.Op{Name: verb, Actor: e.Actor}, nil
	})
	if err != nil {
		return nil, err
	}
	return sn, e.Turns().Launch(sn, turn, kind, prompt, syncFrom)
}

// Stop ends a running turn: the task is parked first (blocked, or
// conflict with pending violations), then its supervisor is told to stop,
// which takes the agent's process group down with it. Work on disk stays.
func (l *Service) Stop(ctx context.Context, name, reason string) (*task.Snapshot, error) {
	e := l.Env
	reason, err := session.CleanReason(reason)
	if err != nil {
		return nil, err
	}
	id, err := e.Store.Resolve(name)
	if err != nil {
		return nil, err
	}
	unlock, err := e.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	sn, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Working {
			if _, running := e.Supervisors().Running(id); running || len(e.Supervisors().Strays(id)) > 0 {
				return nil, errStrays
			}
			return nil, fmt.Errorf("stop %s: the task is %s; only a working task has a turn to stop", s.Task.Slug, s.Task.Status)
		}
		if _, err := e.Owned(s); err != nil {
			return nil, fmt.Errorf("stop %w", err)
		}
		content := "[stop] the human stopped this turn"
		if reason != "" {
			content += ": " + reason
		}
		s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "stop", Content: content, At: time.Now().UTC().Truncate(time.Second), Session: s.Session.ID})
		s.Task.Status = session.ParkBack(s)
		s.Task.Substate = ""
		return &task.Op{Name: "stop", Actor: e.Actor, Reason: reason}, nil
	})
	if errors.Is(err, errStrays) {
		// Not a turn lazy accounts for: end it, and leave the status alone.
		if _, err := e.Supervisors().StopTurn(ctx, id); err != nil {
			return nil, fmt.Errorf("stop: %w", err)
		}
		return e.Store.Load(id)
	}
	if err != nil {
		return nil, err
	}
	// A supervisor launched a moment ago may not hold its lock yet, and
	// then StopTurnProcesses finds nothing to stop: without its command it
	// exits as soon as it looks again, before any agent runs.
	proto.ForTask(e.Repo.LazyDir(), id).Remove(proto.CommandFile)
	if _, err := e.Supervisors().StopTurn(ctx, id); err != nil {
		return sn, fmt.Errorf("the task is parked, but its turn did not stop: %w", err)
	}
	// The agent may have been stopped inside a git command: the lock it
	// held would fail every later turn and revert in the worktree.
	if local, err := e.Owned(sn); err == nil {
		l.worktrees().ClearKilledIndexLock(ctx, local.Worktree)
	}
	return sn, nil
}

// errStrays says that a task which is not working still has turn
// processes running: Stop ends them without recording a stop.
var errStrays = errors.New("turn processes of a task that is not working")
