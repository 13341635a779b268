package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/internal/allowpath"
	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/proc"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/spending"
	"github.com/lazyorch/lazy/task"
)

// sweepWorking judges one working task of this host: its response is
// recorded, a live supervisor is left alone, a dead one (past the start
// grace) interrupts the task, which may then be auto-resumed.
func (r *Reconciler) sweepWorking(ctx context.Context, id string) ([]Action, error) {
	pd := r.proto(id)
	// A running turn with no response yet is what most working tasks
	// are on most passes, and the answer below would be "leave it" for
	// any snapshot: so it is told from two probes, without a Load.
	if !exists(pd.Path(proto.ResponseFile)) && r.supervised(id) {
		return nil, nil
	}
	if !r.owned(id) {
		return nil, nil // another host's session: that host judges it
	}
	sn, err := r.load(id)
	if err != nil {
		return nil, err
	}
	if sn.Task.Status != machine.Working || !r.Env.Owns(sn) {
		return nil, nil // another host judges its own sessions; a record's host claim proves nothing
	}
	if sn.Session.TurnKind == "pre-accept" && r.Env.LockHeldElsewhere(ctx, id) {
		return nil, nil // the accept running it holds the task and records the turn itself
	}
	if resp, ok := currentResponse(pd, sn.Session); ok {
		a, err := r.record(ctx, id, resp)
		return r.thenAutoResume(ctx, a, err)
	}
	if r.supervised(id) {
		return nil, nil
	}
	if r.now().Sub(lastStart(sn, pd)) < r.grace() {
		return nil, nil
	}
	a, err := r.interrupt(ctx, id, pd, sn.Session.ID, sn.Session.Turn)
	return r.thenAutoResume(ctx, a, err)
}

// thenAutoResume follows an interrupt with the auto-resume the circuit
// breaker allows, in the same pass.
func (r *Reconciler) thenAutoResume(ctx context.Context, a *Action, err error) ([]Action, error) {
	if err != nil || a == nil || a.To != machine.Interrupted {
		return one(a), err
	}
	more, err := r.autoResume(ctx, a.TaskID)
	return append(one(a), more...), err
}

// currentResponse reads response.json if it answers the session's
// current turn; a stale one (an older turn, another session) is ignored.
func currentResponse(pd proto.Dir, s *task.Session) (*proto.Response, bool) {
	var resp proto.Response
	if pd.Read(proto.ResponseFile, &resp) != nil || resp.Session != s.ID || resp.Seq != s.Turn {
		return nil, false
	}
	return &resp, true
}

// exists reports whether a file is there; a probe that fails for any
// other reason reads as present, so the caller takes its careful path.
func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// supervisorStatus reads status.json of the session's current turn, for
// its diagnostics (pids, phase, base); it says nothing about liveness.
func supervisorStatus(pd proto.Dir, s *task.Session) proto.Status {
	var st proto.Status
	if pd.Read(proto.StatusFile, &st) != nil || st.Session != s.ID {
		return proto.Status{}
	}
	return st
}

// supervised reports whether a supervisor of task id is alive: it holds
// its flock. Whatever turn it runs, nothing else may start or judge one
// until it is gone.
func (r *Reconciler) supervised(id string) bool {
	return flock.Held(proto.SupervisorLock(r.Env.Repo.LazyDir(), id))
}

// lastStart is when the current turn began, as far as the records tell:
// the command's own timestamp when it belongs to this turn, else the
// task's last update (a later comment only lengthens the grace).
func lastStart(sn *task.Snapshot, pd proto.Dir) time.Time {
	t := sn.Task.UpdatedAt
	var cmd proto.Command
	if pd.Read(proto.CommandFile, &cmd) == nil && cmd.Session == sn.Session.ID && cmd.Seq == sn.Session.Turn && cmd.Written.After(t) {
		t = cmd.Written
	}
	return t
}

// record turns a response into an agent turn and parks the task.
func (r *Reconciler) record(ctx context.Context, id string, resp *proto.Response) (*Action, error) {
	var act *Action
	unlock, err := r.Env.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	recorded, _, err := r.store().Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Working || s.Session == nil || s.Session.ID != resp.Session || s.Session.Turn != resp.Seq {
			act = nil
			return nil, nil // someone else recorded it, or it is not ours
		}
		now := r.now().UTC().Truncate(time.Second)
		code := resp.ExitCode
		turn := task.Turn{Role: task.RoleAgent, Kind: "agent", Content: resp.Result, At: now, Session: resp.Session,
			Commits: resp.Commits, ChangedFiles: resp.ChangedFiles, ExitCode: &code, Error: resp.Error, FailureClass: resp.FailureClass, Attempts: resp.Attempts}
		from := s.Task.Status
		if resp.AgentSessionID != "" {
			// Resume with the latest id seen; the local record is what the
			// next turn's argv trusts.
			_ = r.Env.Sessions().SetAgentSession(id, s.Session.ID, resp.AgentSessionID)
			s.Session.AgentSessionID = resp.AgentSessionID
		}
		var why string
		neutral := neutralKind(s.Session.TurnKind)
		s.Task.Substate = "" // the turn is over
		if s.Session.TurnKind == "sync" {
			turn.Kind = "sync"
		}
		if pb := resp.PushBack; pb != nil {
			// The supervisor pushed back on uncommitted changes: the
			// agent's first answer, the push-back (a human-role turn the
			// supervisor authored, delivered at once), then the rest of
			// the turn, which carries its commits.
			zero := 0
			s.AddTurn(task.Turn{Role: task.RoleAgent, Kind: "agent", Content: pb.FirstResult, At: pb.At.Truncate(time.Second), Session: resp.Session, ExitCode: &zero})
			s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: machine.Supervisor, Kind: "push-back", Content: pb.Prompt, At: pb.At.Truncate(time.Second),
				Session: resp.Session, FeedbackDelivery: task.FeedbackConsumed})
		}
		turn.Agent = s.Session.Agent
		if t := resp.Tools; t != nil {
			turn.Tools = &task.Tools{Calls: t.Calls, Failed: t.Failed}
		}
		if u := resp.Usage; u != nil {
			use, model, pricedBy := r.turnUsage(s, u)
			turn.Usage, turn.Model, turn.PricedBy = &use, model, pricedBy
			if !use.Valid() && s.Task.Usage == nil {
				// Nothing to add, but the task did record usage: the
				// reports that read turns, and doctor, look at it.
				s.Task.Usage = &task.Usage{}
			}
			if use.Valid() {
				total := task.Usage{}
				if t := s.Task.Usage; t.Valid() {
					total = *t
				} else if t != nil {
					// A total lazy does not believe (a pulled record):
					// summed again from the turns it does.
					sum, serr := r.Env.Spending().SumTurns(s)
					if serr != nil {
						return nil, serr
					}
					total = sum
				}
				total.Add(use)
				s.Task.Usage = &total
				// This machine's day ledger, before the record: written
				// twice (this closure retried, a crash before the commit),
				// the turn still counts once.
				if err := r.Env.Budgets().Ledger().Add(budget.Entry{Task: id, Session: resp.Session, Seq: resp.Seq, At: now, CostUSD: use.CostUSD}); err != nil {
					return nil, err
				}
			}
		}
		s.AddTurn(turn)
		// Files changed outside the allowed paths owe a decision whatever
		// became of the turn; the park below derives conflict from them.
		// An ask runs no permission check (and changes nothing).
		if s.Session.TurnKind != "ask" {
			s.Violations.Flag(resp.Violations, resp.BaseSHA)
		}
		switch {
		case neutral && resp.Status != proto.Completed:
			// An ask or sync restores the status it came from on an agent
			// error too; only a dead supervisor (no response) interrupts.
			s.Task.Status = session.ParkBack(s)
			why = s.Session.TurnKind + " ended with an error: " + reasonFor(resp)
		case resp.Status == proto.Completed:
			// Messages are consumed only when a response completes
			// normally, and only those the turn delivered (session.Delivered):
			// one no agent received stays pending for the next turn.
			if err := consumeDelivered(s); err != nil {
				return nil, err
			}
			s.Session.ConsecutiveInterruptions = 0
			if !neutral && s.Session.GoalEditedAfter > 0 && resp.Seq > s.Session.GoalEditedAfter {
				s.Session.GoalEditedAfter = 0 // the agent got the edited goal
			}
			// The reason explained the last park; a completed turn ends it,
			// so show does not keep presenting an old failure.
			s.Session.InterruptReason = ""
			s.Task.Status = session.ParkBack(s)
			why = fmt.Sprintf("agent turn completed (%d commits)", len(resp.Commits))
		case resp.FailureClass == string(agent.Budget):
			// The CLI stopped itself at the budget lazy gave it: parked,
			// held with the figures, until a human raises it.
			s.Task.Status = session.ParkBack(s)
			s.Task.Hold = r.budgetHold(s, now, resp.FailureReason)
			why = "agent stopped at its budget: " + s.Task.Hold.Reason
		case !resp.ResetAt.IsZero() && agent.Class(resp.FailureClass).Transient():
			// A usage limit with a stated reset: not a failure and not an
			// interruption. The daemon resumes the session after it.
			s.Task.Status = session.ParkBack(s)
			s.Task.Hold = &task.Hold{Kind: task.HoldLimit, At: now, Until: resp.ResetAt.UTC().Truncate(time.Second), Reason: resp.FailureReason}
			why = "agent hit a usage limit: " + s.Task.Hold.String()
		case resp.FailureClass != "" && resp.FailureClass != "unknown":
			// The supervisor stopped on a classified condition (fatal, or
			// a transient past its cap): a human must look, and blocked is
			// what keeps auto-resume from relaunching into it.
			// It is recorded as an interrupt, with every field the spec
			// lists (reason, exit code, time, logs, the counter), though
			// the task parks: auto-resume must not relaunch into it.
			recordInterrupt(s, now, resp.ExitCode, resp.FailureClass+": "+resp.FailureReason, resp.StderrTail, resp.Phase)
			s.Task.Status = session.ParkBack(s)
			why = "agent failure the supervisor stopped on: " + s.Session.InterruptReason
		default:
			markInterrupted(s, now, resp.ExitCode, reasonFor(resp), resp.StderrTail, resp.Phase)
			why = "agent turn failed: " + s.Session.InterruptReason
		}
		if s.Task.Hold == nil && (s.Task.Status == machine.Blocked || s.Task.Status == machine.Conflict) && resp.Usage != nil {
			// A turn that ran past a budget (no CLI flag stops Codex or
			// a command) parks held too, so the next turn asks a human.
			if lines, _ := r.Env.Budgets().Lines(s, now); lines != nil {
				if line, ok := budget.Tightest(lines); ok && line.Over() {
					s.Task.Hold = session.BudgetHold(line, now)
					why += "; " + s.Task.Hold.Reason
				}
			}
		}
		act = &Action{TaskID: id, Slug: s.Task.Slug, From: from, To: s.Task.Status, Why: why, Neutral: neutral}
		return &task.Op{Name: "reconcile", Actor: machine.System, Reason: why}, nil
	})
	if err != nil {
		return nil, err // the closure ran, but nothing was written
	}
	if act != nil && recorded != nil && recorded.Task.Hold != nil {
		// The hold goes into the log right after the turn that met it.
		r.Env.NoteHold(recorded)
	}
	return act, nil
}

// turnUsage is a turn's usage as the record keeps it, from what the
// supervisor says the CLI reported: held to what one turn can spend
// (flagged, and counted nowhere, beyond it), and priced from its tokens
// when the CLI reported no cost (lazy.price, then lazy's table). The
// model is the one the CLI reported, else the one the session asked for.
func (r *Reconciler) turnUsage(s *task.Snapshot, u *proto.Usage) (task.Usage, string, string) {
	use := task.Usage{CostUSD: u.CostUSD, InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens, OutputTokens: u.OutputTokens}
	model := u.Model
	if model == "" {
		model = s.Session.Model
	}
	if !use.CheckTurn() {
		return use, model, ""
	}
	prices, err := r.Env.Spending().Prices()
	if err != nil {
		// A bad lazy.price is lazy config's to report; the turn is still
		// priced from the table rather than not recorded.
		prices = budget.NewPrices(nil)
	}
	by := spending.PriceTurn(prices, model, &use)
	use.CostUSD = task.RoundUSD(use.CostUSD)
	return use, model, by
}

// budgetHold is the hold of a turn the CLI stopped at its budget: the
// tightest budget's figures now that the turn's cost is counted, or the
// CLI's own words if no budget reads as spent (one was raised meanwhile).
func (r *Reconciler) budgetHold(s *task.Snapshot, now time.Time, reason string) *task.Hold {
	if lines, err := r.Env.Budgets().Lines(s, now); err == nil {
		if line, ok := budget.Tightest(lines); ok {
			h := session.BudgetHold(line, now)
			if reason != "" {
				h.Reason += " (the agent: " + reason + ")"
			}
			return h
		}
	}
	return &task.Hold{Kind: task.HoldBudget, At: now, Reason: reason, Scope: budget.ScopeTask}
}

// neutralKind says whether a turn kind is status-neutral: the task parks
// back where it was whatever the turn's outcome, and is never interrupted
// into an auto-resumed work turn.
func neutralKind(k string) bool { return k == "ask" || k == "sync" || k == "pre-accept" }

// consumeDelivered marks consumed every pending message the session's
// current turn delivered: its own, and every older one its prompt
// carried, so redelivery is idempotent and nothing undelivered is lost.
func consumeDelivered(s *task.Snapshot) error {
	seq, kind := s.Session.Turn, s.Session.TurnKind
	return s.EditTurns(func(t *task.Turn) bool {
		if !session.Delivered(*t, seq, kind) {
			return false
		}
		t.FeedbackDelivery = task.FeedbackConsumed
		return true
	})
}

func reasonFor(resp *proto.Response) string {
	r := resp.Error
	if r == "" {
		r = exitReason(resp.ExitCode)
	}
	if resp.FailureReason != "" && !strings.Contains(r, resp.FailureReason) {
		r += " (" + resp.FailureReason + ")"
	}
	return r
}

// markInterrupted interrupts the task and records the diagnostics.
func markInterrupted(s *task.Snapshot, now time.Time, code int, reason, logs, phase string) {
	s.Task.Status = machine.Interrupted
	recordInterrupt(s, now, code, reason, logs, phase)
}

// recordInterrupt records the interrupt diagnostics (spec: "Recording the
// Interrupt"); the counter it increments is the circuit breaker's.
func recordInterrupt(s *task.Snapshot, now time.Time, code int, reason, logs, phase string) {
	s.Session.InterruptReason = reason
	s.Session.InterruptExitCode = &code
	s.Session.InterruptAt = &now
	s.Session.InterruptLogs = logs
	s.Session.InterruptPhase = phase
	s.Session.ConsecutiveInterruptions++
}

// exitReason names an exit code the way a human reads it.
func exitReason(code int) string {
	switch {
	case code == 137:
		return "OOM killed or SIGKILL (exit code 137)"
	case code == 143:
		return "terminated by SIGTERM (exit code 143)"
	case code > 128:
		return fmt.Sprintf("killed by signal %d (exit code %d)", code-128, code)
	case code < 0:
		return "exit code unknown"
	}
	return fmt.Sprintf("exited with code %d", code)
}

// interrupt marks a working task whose supervisor is gone without a
// response. What the turn left on disk is recorded as an agent turn, so a
// commit made just before the crash is not invisible; an agent the dead
// supervisor left running is stopped, so a resume never puts two agents
// in one worktree.
func (r *Reconciler) interrupt(ctx context.Context, id string, pd proto.Dir, sessionID string, seq int) (*Action, error) {
	var act *Action
	unlock, err := r.Env.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Everything judged before the lock is judged again under it: another
	// reconciler may have interrupted and resumed the task meanwhile, and
	// its new supervisor may be starting. Only the turn judged dead is
	// interrupted, and only while no supervisor holds the task.
	sn, err := r.load(id)
	if err != nil {
		return nil, err
	}
	if !judged(sn, sessionID, seq) || r.supervised(id) || r.now().Sub(lastStart(sn, pd)) < r.grace() {
		return nil, nil
	}
	if _, ok := currentResponse(pd, sn.Session); ok {
		return nil, nil // a response arrived meanwhile; the next sweep records it
	}
	st := supervisorStatus(pd, sn.Session)
	// No supervisor holds the task, so whatever carries its turn marker
	// was left by a dead one: end it before a resume starts another.
	stray := proc.KillMarkedIn(proto.TurnMarker(id), proto.TurnScope(r.Env.Repo.LazyDir()))
	// A git the dead turn was running (the agent's commit, the
	// supervisor's upstream merge) leaves index.lock behind, and every
	// later turn, revert and resume would fail on it.
	unlocked, undone := false, ""
	if local, err := r.Env.Owned(sn); err == nil {
		unlocked = r.git().ClearKilledIndexLock(ctx, local.Worktree)
		// An ask that died could not put back what its agent wrote.
		if sn.Session.TurnKind == "ask" && st.ReadOnly != nil && st.Seq == seq {
			undone = r.git().UndoReadOnly(ctx, local.Worktree, *st.ReadOnly, proto.KeptRef(id, seq))
		}
	}
	logs := lastLogLines(pd.Path(proto.LogFile))
	if sup := lastLogLines(pd.Path(proto.SupervisorLogFile)); sup != "" {
		logs += "\n--- supervisor stderr ---\n" + sup
	}
	_, _, err = r.store().Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if !judged(s, sessionID, seq) {
			act = nil
			return nil, nil
		}
		now := r.now().UTC().Truncate(time.Second)
		code := supervisorExit(pd)
		reason := "the supervisor exited without writing a response"
		if st.PID > 0 {
			reason = fmt.Sprintf("the supervisor (pid %d) exited without writing a response during its %s phase", st.PID, st.Phase)
		}
		if code >= 0 {
			reason = exitReason(code) + ": " + reason
		}
		if len(stray) > 0 {
			reason += fmt.Sprintf(" (agent processes of the turn, %s, were still running and were killed)", pidList(stray))
		}
		if unlocked {
			reason += "; the index.lock a killed git left in its worktree was removed"
		}
		if undone != "" {
			reason += " " + undone
		}
		turn := task.Turn{Role: task.RoleAgent, Kind: "agent", Content: "[system] " + reason, At: now, Session: s.Session.ID, ExitCode: &code, Error: reason}
		if local, err := r.Env.Owned(s); err == nil && st.BaseSHA != "" && st.Seq == s.Session.Turn && s.Session.TurnKind != "ask" {
			turn.Commits, _ = r.git().Commits(ctx, local.Worktree, st.BaseSHA)
			turn.ChangedFiles, _ = r.git().ChangedFiles(ctx, local.Worktree, st.BaseSHA)
			// Flag passes over files already approved.
			s.Violations.Flag(allowpath.Outside(s.Task.AllowedPaths, turn.ChangedFiles), st.BaseSHA)
		}
		s.AddTurn(turn)
		s.Task.Substate = ""
		if k := s.Session.TurnKind; k == "sync" || k == "pre-accept" {
			// A sync or pre-accept turn is status-neutral even when it dies:
			// the task goes back to where it was.
			s.Task.Status = session.ParkBack(s)
			reason = k + " ended: " + reason
		} else {
			// Any other turn, an ask included (spec: "if the agent crashes
			// mid-ask the task lands in interrupted like any other turn").
			if k == "ask" {
				reason = "ask ended: " + reason
			}
			markInterrupted(s, now, code, reason, logs, st.Phase)
		}
		act = &Action{TaskID: id, Slug: s.Task.Slug, From: machine.Working, To: s.Task.Status, Why: reason}
		return &task.Op{Name: "reconcile", Actor: machine.System, Reason: reason}, nil
	})
	if err != nil {
		return nil, err // the closure ran, but nothing was written
	}
	return act, nil
}

// judged says whether s is still the working turn a sweep judged.
func judged(s *task.Snapshot, session string, seq int) bool {
	return s.Task.Status == machine.Working && s.Session != nil && s.Session.ID == session && s.Session.Turn == seq
}

// supervisorExit reads the exit status the launching shell recorded, or
// -1 when none was (the shell died too, or there was no shell). The shell
// writes it just after the supervisor dies, so a missing record is given
// a moment to appear.
func supervisorExit(pd proto.Dir) int {
	var b []byte
	var err error
	for wait := 0; wait < 20; wait++ {
		if b, err = os.ReadFile(pd.Path(proto.SupervisorExitFile)); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return -1
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || code < 0 {
		return -1
	}
	return code
}

func lastLogLines(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return proto.Tail(string(b))
}
