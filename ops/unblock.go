package ops

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

// Unblock gives a parked task human feedback and launches the next turn.
// The feedback is recorded (pending delivery) before anything is
// launched, and the supervisor merges upstream into the task branch
// before the agent runs: every unblock merges upstream.
//
// Pending file-permission violations must be decided (d) first: the
// decisions are recorded, reverted files restored, and only then does the
// turn start.
func (e *Env) Unblock(ctx context.Context, name, feedback string, d Decisions) (*task.Snapshot, error) {
	if err := e.requireLauncher("unblock"); err != nil {
		return nil, err
	}
	feedback, err := requiredProse("the feedback", feedback, "unblock needs feedback for the agent (-m, stdin or $EDITOR)")
	if err != nil {
		return nil, err
	}
	sn, unlock, err := e.lockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if sn, err = e.escapeStranded(ctx, sn, "unblock"); err != nil {
		return nil, err
	}
	if e.forRunner(sn) && !d.any() {
		return e.leaveForRunner(ctx, sn, feedback)
	}
	if sn.Task.Status == machine.Submitted {
		// Everything that can refuse is checked before the submission is
		// withdrawn: a refused unblock leaves the task submitted.
		asBlocked := *sn
		asBlocked.Task.Status = machine.Blocked
		if err := e.checkResumable(&asBlocked, "unblock", false, machine.Blocked); err != nil {
			return nil, fmt.Errorf("%w; %s stays submitted", err, sn.Task.Slug)
		}
		if err := agent.CheckCredentials(sn.Session.Agent, agent.HostEnvironment()); err != nil {
			return nil, fmt.Errorf("unblock %s: %w; nothing was recorded and it stays submitted", sn.Task.Slug, err)
		}
	}
	if sn, err = e.reviseSubmission(ctx, sn); err != nil {
		return nil, err
	}
	if d.any() {
		if err := e.checkResumable(sn, "unblock", true, machine.Blocked, machine.Conflict, machine.Interrupted); err != nil {
			return nil, err
		}
		if sn, err = e.decide(ctx, sn, d); err != nil {
			return nil, err
		}
	}
	check := func(s *task.Snapshot) error {
		return e.checkResumable(s, "unblock", false, machine.Blocked, machine.Conflict, machine.Interrupted)
	}
	return e.continueSession(ctx, sn, "unblock", check, func(s *task.Snapshot, now time.Time) (task.Turn, string, *task.Op, error) {
		prompt, err := e.deliveryPrompt(s, feedback, "unblock")
		if err != nil {
			return task.Turn{}, "", nil, err
		}
		s.Session.ConsecutiveInterruptions = 0 // a human intervened
		turn := task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "unblock", Content: feedback, At: now, FeedbackDelivery: task.FeedbackPending}
		return turn, prompt, &task.Op{Name: "unblock", Actor: e.Actor}, nil
	})
}

// nextTurnFunc builds the turn a command adds to a session under the
// store's update: the turn (its Seq and Session are filled in), the
// prompt it launches with, and the operation recorded.
type nextTurnFunc func(s *task.Snapshot, now time.Time) (task.Turn, string, *task.Op, error)

// continueSession is the sequence every command that runs the next turn
// of a parked task's session shares: check (before recording and again
// under the update), the agent's credentials, the upstream to merge,
// the turn recorded with the task working, then the launch. kind is the
// turn's kind, which also names the command in errors.
func (e *Env) continueSession(ctx context.Context, sn *task.Snapshot, kind string, check func(*task.Snapshot) error, next nextTurnFunc) (*task.Snapshot, error) {
	if err := check(sn); err != nil {
		return nil, err
	}
	if err := agent.CheckCredentials(sn.Session.Agent, agent.HostEnvironment()); err != nil {
		return nil, fmt.Errorf("%s %s: %w; nothing was recorded", kind, sn.Task.Slug, err)
	}
	upstream, err := e.BaseBranch(ctx, sn, e.repoDir())
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
	return sn, e.launchTurn(sn, turn, kind, prompt, upstream)
}

// deliveryPrompt is the prompt of a turn of kind about to be added to s
// with message as its own content: message first, then every older
// message still pending that the turn delivers (withUndelivered).
func (e *Env) deliveryPrompt(s *task.Snapshot, message, kind string) (string, error) {
	turns, err := e.Store.Turns(s)
	if err != nil {
		return "", err
	}
	return withUndelivered(message, s.Task.Slug, pendingBefore(turns, s.Task.Turns+1, kind)), nil
}

// checkResumable is the guard shared by the commands that start a new
// turn on an existing session.
//
// Pending violations refuse a turn that would pile work onto files an
// eventual decision may revert, unless allowPending (ask and sync decide
// nothing, and the park re-derives conflict afterwards).
func (e *Env) checkResumable(s *task.Snapshot, verb string, allowPending bool, from ...machine.Status) error {
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
	if pid, running := e.SupervisorRunning(s.Task.ID); running {
		return fmt.Errorf("%s %s: a supervisor (pid %d) of an earlier turn still runs it; wait for it to end, or end it with lazy stop %s", verb, s.Task.Slug, pid, s.Task.Slug)
	}
	local, err := e.Owned(s)
	if err != nil {
		return fmt.Errorf("%s %w", verb, err)
	}
	if _, err := os.Stat(local.Worktree); err != nil {
		return fmt.Errorf("%s %s: its worktree %s is missing: %w", verb, s.Task.Slug, local.Worktree, err)
	}
	if err := e.callerMayDrive(verb, s.Task.Slug, local); err != nil {
		return err
	}
	if err := sandboxReady(context.Background(), local.Sandbox); err != nil {
		return fmt.Errorf("%s %s: %w; nothing was started", verb, s.Task.Slug, err)
	}
	if verb != "ask" { // an ask is read-only, like the chat itself
		if err := e.worktreeFree(s.Task.ID, verb, s.Task.Slug); err != nil {
			return err
		}
	}
	return machine.Validate(s.Task.Status, machine.Working, e.Actor)
}

// launchTurn writes command.json for a turn of an existing session and
// starts its supervisor. The turn's base is the worktree's HEAD after the
// upstream merge, which the supervisor determines.
func (e *Env) launchTurn(sn *task.Snapshot, turn task.Turn, kind, prompt, syncFrom string) error {
	// What runs, and where, comes from this machine's record of the
	// session, never from the task record (which a fetch may have written).
	local, err := e.bind(sn)
	if err != nil {
		return fmt.Errorf("the turn was recorded but not launched: %w", err)
	}
	// Checked before the turn was recorded too (checkResumable); this
	// holds for every turn an agent causes, a pre-accept turn included.
	if err := e.callerMayDrive(kind, sn.Task.Slug, local); err != nil {
		if _, perr := e.parkBack(context.Background(), sn, turn.Seq, nil); perr != nil {
			return fmt.Errorf("the turn was recorded but not launched: %w (and parking it failed: %w)", err, perr)
		}
		return err
	}
	if kind != "ask" && kind != "sync" && sn.Session.GoalEditedAfter > 0 {
		goalNote, err := editedGoal(sn)
		if err != nil {
			return fmt.Errorf("the turn was recorded but not launched: %w", err)
		}
		prompt = goalNote + prompt
	}
	left, err := e.budgetForTurn(sn, turn.Seq)
	if err != nil {
		return err
	}
	pd := proto.ForTask(e.Store.Repo().LazyDir(), sn.Task.ID)
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
		cmd.Prepare = e.prepare(e.repoDir(), local.Prepared)
	}
	if err := pd.Write(proto.CommandFile, cmd); err != nil {
		return fmt.Errorf("the task is working but its command could not be written (the reconciler will mark it interrupted): %w", err)
	}
	if err := e.launch(sn.Task.ID); err != nil {
		return fmt.Errorf("the task is working but its supervisor did not start (the reconciler will mark it interrupted): %w", err)
	}
	return nil
}

// editedGoal opens the prompt of the first work turn after lazy edit
// changed the goal: the agent works from the goal it was started with,
// so it is told, with the new text in full.
func editedGoal(sn *task.Snapshot) (string, error) {
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

// repoDir is where git commands about branches run.
func (e *Env) repoDir() string {
	if e.RepoDir != "" {
		return e.RepoDir
	}
	return e.Store.Repo().CommonDir
}
