package session

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/internal/quote"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
)

// NextTurnFunc builds the turn a command adds to a session under the
// store's update: the turn (its Seq and Session are filled in), the
// prompt it launches with, and the operation recorded.
type NextTurnFunc func(s *task.Snapshot, now time.Time) (task.Turn, string, *task.Op, error)

// Continue is the sequence every command that runs the next turn
// of a parked task's session shares: check (before recording and again
// under the update), the agent's credentials, the upstream to merge,
// the turn recorded with the task working, then the launch. kind is the
// turn's kind, which also names the command in errors.
func (t Turns) Continue(ctx context.Context, sn *task.Snapshot, kind string, check func(*task.Snapshot) error, next NextTurnFunc) (*task.Snapshot, error) {
	e := t.e
	if err := check(sn); err != nil {
		return nil, err
	}
	if err := agent.CheckCredentials(sn.Session.Agent, agent.HostEnvironment()); err != nil {
		return nil, fmt.Errorf("%s %s: %w; nothing was recorded", kind, sn.Task.Slug, err)
	}
	upstream, err := e.BaseBranch(ctx, sn, e.Dir())
	if err != nil {
		return nil, err
	}
	var turn task.Turn
	var prompt string
	sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if err := check(s); err != nil {
			return nil, err
		}
		t, p, op, err := next(s, time.Now().UTC().Truncate(time.Second))
		if err != nil {
			return nil, err
		}
		t.Session = s.Session.ID
		turn, prompt = s.AddTurn(t), p
		s.Session.Turn, s.Session.TurnKind = turn.Seq, kind
		s.Task.Status = machine.Working
		return op, nil
	})
	if err != nil {
		return nil, err
	}
	return sn, e.Turns().Launch(sn, turn, kind, prompt, upstream)
}

// DeliveryPrompt is the prompt of a turn of kind about to be added to s
// with message as its own content: message first, then every older
// message still pending that the turn delivers (withUndelivered).
func (t Turns) DeliveryPrompt(s *task.Snapshot, message, kind string) (string, error) {
	e := t.e
	turns, err := e.Store.Turns(s)
	if err != nil {
		return "", err
	}
	return WithUndelivered(message, s.Task.Slug, PendingBefore(turns, s.Task.Turns+1, kind)), nil
}

// CheckResumable is the guard shared by the commands that start a new
// turn on an existing session.
//
// Pending violations refuse a turn that would pile work onto files an
// eventual decision may revert, unless allowPending (ask and sync decide
// nothing, and the park re-derives conflict afterwards).
func (t Turns) CheckResumable(s *task.Snapshot, verb string, allowPending bool, from ...machine.Status) error {
	e := t.e
	ok := false
	for _, st := range from {
		ok = ok || s.Task.Status == st
	}
	if !ok {
		names := make([]string, len(from))
		for i, st := range from {
			names[i] = string(st)
		}
		return fmt.Errorf("%s %s: the task is %s; %s works on %s tasks", verb, s.Task.Slug, s.Task.Status, verb, strings.Join(names, ", "))
	}
	if s.PendingViolations() > 0 && !allowPending {
		return fmt.Errorf("%s %s: %s pending and must each be approved or reverted first (%s); decide with lazy unblock --approve-file PATH (keep; the others are reverted) or --no-approve-files (revert all)",
			verb, s.Task.Slug, words.Count(s.PendingViolations(), "file-permission violation is", "file-permission violations are"), strings.Join(s.Violations.Pending, ", "))
	}
	if s.Session == nil {
		return fmt.Errorf("%s %s: the task has no session; use lazy start", verb, s.Task.Slug)
	}
	if pid, running := e.Supervisors().Running(s.Task.ID); running {
		return fmt.Errorf("%s %s: a supervisor (pid %d) of an earlier turn still runs it; wait for it to end, or end it with lazy stop %s", verb, s.Task.Slug, pid, s.Task.Slug)
	}
	local, err := e.Owned(s)
	if err != nil {
		return fmt.Errorf("%s %w", verb, err)
	}
	if _, err := os.Stat(local.Worktree); err != nil {
		return fmt.Errorf("%s %s: its worktree %s is missing: %w", verb, s.Task.Slug, local.Worktree, err)
	}
	if err := e.CallerMayDrive(verb, s.Task.Slug, local); err != nil {
		return err
	}
	if err := SandboxReady(context.Background(), local.Sandbox); err != nil {
		return fmt.Errorf("%s %s: %w; nothing was started", verb, s.Task.Slug, err)
	}
	if verb != "ask" { // an ask is read-only, like the chat itself
		if err := e.WorktreeFree(s.Task.ID, verb, s.Task.Slug); err != nil {
			return err
		}
	}
	return machine.Validate(s.Task.Status, machine.Working, e.Actor)
}

// Launch writes command.json for a turn of an existing session and
// starts its supervisor. The turn's base is the worktree's HEAD after the
// upstream merge, which the supervisor determines.
func (t Turns) Launch(sn *task.Snapshot, turn task.Turn, kind, prompt, syncFrom string) error {
	e := t.e
	// What runs, and where, comes from this machine's record of the
	// session, never from the task record (which a fetch may have written).
	local, err := e.Bind(sn)
	if err != nil {
		return fmt.Errorf("the turn was recorded but not launched: %w", err)
	}
	// Checked before the turn was recorded too (checkResumable); this
	// holds for every turn an agent causes, a pre-accept turn included.
	if err := e.CallerMayDrive(kind, sn.Task.Slug, local); err != nil {
		if _, perr := e.Turns().ParkUnlaunched(context.Background(), sn, turn.Seq, nil); perr != nil {
			return fmt.Errorf("the turn was recorded but not launched: %w (and parking it failed: %w)", err, perr)
		}
		return err
	}
	if kind != "ask" && kind != "sync" && sn.Session.GoalEditedAfter > 0 {
		goalNote, err := EditedGoal(sn)
		if err != nil {
			return fmt.Errorf("the turn was recorded but not launched: %w", err)
		}
		prompt = goalNote + prompt
	}
	left, err := e.Budgets().ForTurn(sn, turn.Seq)
	if err != nil {
		return err
	}
	pd := proto.ForTask(e.Repo.LazyDir(), sn.Task.ID)
	pd.Remove(proto.ResponseFile)
	pd.Remove(proto.ProgressFile) // a new turn begins with no progress line
	cmd := proto.Command{
		MaxBudgetUSD: left,
		Turn:         proto.Turn{TaskID: sn.Task.ID, Session: sn.Session.ID, Seq: turn.Seq},
		Kind:         kind, Agent: sn.Session.Agent, Exec: sn.Session.ExecCommand, Prompt: prompt,
		ResumeID: sn.Session.AgentSessionID, PermissionMode: sn.Session.PermissionMode, Model: sn.Session.Model,
		Worktree: sn.Session.Worktree, SyncFrom: syncFrom, Timing: e.Timing, Written: time.Now().UTC(),
		AllowedPaths: sn.Task.AllowedPaths, Approved: sn.Violations.ApprovedFiles(), Sandbox: local.Sandbox,
		Policy: e.Policy,
	}
	if kind != "ask" && kind != "sync" {
		cmd.Prepare = e.Turns().Prepare(e.Dir(), local.Prepared)
	}
	if kind != "sync" && agent.KeepsConversation(sn.Session.Agent) {
		if cmd.FreshPrompt, err = FreshPrompt(sn, prompt); err != nil {
			return fmt.Errorf("the turn was recorded but not launched: %w", err)
		}
	}
	if err := pd.Write(proto.CommandFile, cmd); err != nil {
		return fmt.Errorf("the task is working but its command could not be written (the reconciler will mark it interrupted): %w", err)
	}
	if err := e.Turns().Spawn(sn.Task.ID); err != nil {
		return fmt.Errorf("the task is working but its supervisor did not start (the reconciler will mark it interrupted): %w", err)
	}
	return nil
}

// FreshPrompt is the prompt of a turn whose agent session cannot be
// resumed (none was recorded here, or the CLI refuses the id), so a new
// one starts: the new session lacks the conversation, so it gets the
// task's prompt (title and goal, as lazy start gives them) and where the
// earlier work is, then the turn's own prompt (a gate failure's
// command and output tail, a human's feedback).
func FreshPrompt(sn *task.Snapshot, prompt string) (string, error) {
	goal, err := sn.Goal()
	if err != nil {
		return "", err
	}
	taskPrompt := sn.Task.Title
	if goal != "" {
		taskPrompt += "\n\n" + goal
	}
	return "[lazy] This turn continues your earlier work on this task, but your earlier session could not be resumed, so this is a new session. " +
		"The earlier turns' work is in this worktree: its branch holds their commits (git log shows them). The task, as you were first given it:\n\n" +
		taskPrompt + "\n\n---\n\n" + prompt, nil
}

// EditedGoal opens the prompt of the first work turn after lazy edit
// changed the goal: the agent works from the goal it was started with,
// so it is told, with the new text in full.
func EditedGoal(sn *task.Snapshot) (string, error) {
	goal, err := sn.Goal()
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(goal) == "" {
		goal = "(the goal is now empty: the title says it all)"
	}
	// Whoever edited it (a person, or an agent over MCP), the goal is
	// quoted: it must not pass for lazy's words around it.
	return "[lazy] The task's goal was edited since your last turn; work to this version from now on.\n\nTitle: " + quote.Inline(sn.Task.Title) + "\n\nGoal:\n\n" + quote.Block(goal) + "\n\n---\n\n", nil
}

// Dir is where git commands about branches run.
func (e *Env) Dir() string {
	if e.RepoDir != "" {
		return e.RepoDir
	}
	return e.Repo.CommonDir
}
