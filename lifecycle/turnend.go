package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/internal/allowpath"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// The end of a working task's turn, as the reconciler finds it on this
// machine: the supervisor's response is recorded (RecordResponse), or
// a supervisor that died without one interrupts the task
// (InterruptDead). The reconciler reads the protocol files and hands
// over what they say; these steps judge the task again and write it.

// turnResume is the record of how a turn met the agent's session, from
// the supervisor's word: every field bounded (the reason quotes the
// CLI), so a record never carries more than a line of each.
func turnResume(r *proto.Resume) *task.Resume {
	return &task.Resume{Resumed: clip(r.Resumed, 128), NewSession: clip(r.NewSession, 128), Reason: clip(r.Reason, 300)}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// RecordResponse records the response of task id's current turn as an
// agent turn and parks the task (or interrupts it, when the turn failed
// in a way auto-resume may retry), at now; a task that is no longer
// working on that turn (someone else recorded it) is left alone, a nil
// Step. It takes the task lock.
func (l *Service) RecordResponse(ctx context.Context, id string, resp *proto.Response, now time.Time) (*Step, error) {
	unlock, err := l.Env.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var step *Step
	recorded, _, err := l.Env.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Working || s.Session == nil || s.Session.ID != resp.Session || s.Session.Turn != resp.Seq {
			step = nil
			return nil, nil // someone else recorded it, or it is not ours
		}
		now := now.UTC().Truncate(time.Second)
		code := resp.ExitCode
		turn := task.Turn{Role: task.RoleAgent, Kind: "agent", Content: resp.Result, At: now, Session: resp.Session,
			Commits: resp.Commits, ChangedFiles: resp.ChangedFiles, ExitCode: &code, Error: resp.Error, FailureClass: resp.FailureClass, Attempts: resp.Attempts}
		from := s.Task.Status
		if resp.AgentSessionID != "" {
			// Resume with the latest id seen; the local record is what the
			// next turn's argv trusts.
			_ = l.Env.Sessions().SetAgentSession(id, s.Session.ID, resp.AgentSessionID)
			s.Session.AgentSessionID = resp.AgentSessionID
		}
		var why string
		neutral := NeutralKind(s.Session.TurnKind)
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
		if r := resp.Resume; r != nil {
			turn.Resume = turnResume(r)
			if s.Task.Gate != nil {
				s.Task.Gate.NoteResume(resp.Seq, turn.Resume)
			}
		}
		if t := resp.Tools; t != nil {
			turn.Tools = &task.Tools{Calls: t.Calls, Failed: t.Failed}
		}
		if u := resp.Usage; u != nil {
			use, model, pricedBy := l.spending().TurnUsage(s, u)
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
					sum, serr := l.spending().SumTurns(s)
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
				if err := l.Env.Budgets().Ledger().Add(budget.Entry{Task: id, Session: resp.Session, Seq: resp.Seq, At: now, CostUSD: use.CostUSD}); err != nil {
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
			s.Task.Hold = l.budgetHold(s, now, resp.FailureReason)
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
			if lines, _ := l.Env.Budgets().Lines(s, now); lines != nil {
				if line, ok := budget.Tightest(lines); ok && line.Over() {
					s.Task.Hold = session.BudgetHold(line, now)
					why += "; " + s.Task.Hold.Reason
				}
			}
		}
		step = &Step{ID: id, Slug: s.Task.Slug, From: from, To: s.Task.Status, Why: why, Neutral: neutral}
		return &task.Op{Name: "reconcile", Actor: machine.System, Reason: why}, nil
	})
	if err != nil {
		return nil, err // the closure ran, but nothing was written
	}
	if step != nil && recorded != nil && recorded.Task.Hold != nil {
		// The hold goes into the log right after the turn that met it.
		l.Env.NoteHold(recorded)
	}
	return step, nil
}

// Spending is what recording a turn asks of the spending capability:
// spending.Service, which package wire hands lifecycle (spending's tests
// build on lifecycle, so lifecycle does not import it).
type Spending interface {
	// TurnUsage is a turn's usage as the record keeps it (held to what
	// one turn can spend, priced when the CLI reported no cost), its
	// model, and what priced it.
	TurnUsage(s *task.Snapshot, u *proto.Usage) (use task.Usage, model, pricedBy string)
	// SumTurns adds up the usage of sn's turns that lazy believes.
	SumTurns(sn *task.Snapshot) (task.Usage, error)
}

// unpriced is the Spending of a lifecycle given none: usage kept as the
// CLI reported it, held to what one turn can spend and never priced,
// and totals summed from the store.
type unpriced struct{ store task.Store }

func (unpriced) TurnUsage(s *task.Snapshot, u *proto.Usage) (task.Usage, string, string) {
	use := task.Usage{CostUSD: u.CostUSD, InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens, OutputTokens: u.OutputTokens}
	model := u.Model
	if model == "" {
		model = s.Session.Model
	}
	if use.CheckTurn() {
		use.CostUSD = task.RoundUSD(use.CostUSD)
	}
	return use, model, ""
}

func (p unpriced) SumTurns(sn *task.Snapshot) (task.Usage, error) {
	return task.SumTurns(p.store, sn)
}

func (l *Service) spending() Spending {
	if l.Spending == nil {
		return unpriced{l.Env.Store}
	}
	return l.Spending
}

// budgetHold is the hold of a turn the CLI stopped at its budget: the
// tightest budget's figures now that the turn's cost is counted, or the
// CLI's own words if no budget reads as spent (one was raised meanwhile).
func (l *Service) budgetHold(s *task.Snapshot, now time.Time, reason string) *task.Hold {
	if lines, err := l.Env.Budgets().Lines(s, now); err == nil {
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

// NeutralKind says whether a turn kind is status-neutral: the task parks
// back where it was whatever the turn's outcome, and is never interrupted
// into an auto-resumed work turn.
func NeutralKind(k string) bool { return k == "ask" || k == "sync" || k == "pre-accept" }

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
		r = ExitReason(resp.ExitCode)
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

// ExitReason names an exit code the way a human reads it.
func ExitReason(code int) string {
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

// DeadTurn is what the reconciler found of a turn whose supervisor died
// without writing a response, read from the protocol files and cleaned
// up before the record is written.
type DeadTurn struct {
	// Session and Seq are the turn judged dead.
	Session string
	Seq     int
	// Now is when it was judged.
	Now time.Time
	// Status is the dead supervisor's status.json (zero when none).
	Status proto.Status
	// ExitCode is the supervisor's exit status its launching shell
	// recorded, or -1.
	ExitCode int
	// Killed names the agent processes of the turn that were still
	// running and were killed ("pid 41", "pids 41, 42"), "" for none.
	Killed string
	// Unlocked: the index.lock a killed git left was removed.
	Unlocked bool
	// Undone is what putting back a dead ask's writes said, "" for
	// nothing.
	Undone string
	// Logs is the tail of the turn's logs.
	Logs string
	// Diffed says Commits and ChangedFiles were read from the worktree
	// since Status.BaseSHA (a work turn of this machine's worktree).
	Diffed                bool
	Commits, ChangedFiles []string
}

// InterruptDead records the dead turn d of task id as an agent turn of
// the system and interrupts the task (a sync or pre-accept turn parks
// back where it was); a task no longer working on that turn is left
// alone, a nil Step. It takes the task lock.
func (l *Service) InterruptDead(ctx context.Context, id string, d DeadTurn) (*Step, error) {
	unlock, err := l.Env.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return l.InterruptDeadLocked(ctx, id, d)
}

// InterruptDeadLocked is InterruptDead for a caller that already holds
// the task lock (the reconciler judges and cleans up the dead turn
// under it); file locks are per open file, so taking it again here
// would wait for ever.
func (l *Service) InterruptDeadLocked(ctx context.Context, id string, d DeadTurn) (*Step, error) {
	var step *Step
	_, _, err := l.Env.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if !Judged(s, d.Session, d.Seq) {
			step = nil
			return nil, nil
		}
		now := d.Now.UTC().Truncate(time.Second)
		code := d.ExitCode
		st := d.Status
		reason := "the supervisor exited without writing a response"
		if st.PID > 0 {
			reason = fmt.Sprintf("the supervisor (pid %d) exited without writing a response during its %s phase", st.PID, st.Phase)
		}
		if code >= 0 {
			reason = ExitReason(code) + ": " + reason
		}
		if d.Killed != "" {
			reason += fmt.Sprintf(" (agent processes of the turn, %s, were still running and were killed)", d.Killed)
		}
		if d.Unlocked {
			reason += "; the index.lock a killed git left in its worktree was removed"
		}
		if d.Undone != "" {
			reason += " " + d.Undone
		}
		turn := task.Turn{Role: task.RoleAgent, Kind: "agent", Content: "[system] " + reason, At: now, Session: s.Session.ID, ExitCode: &code, Error: reason}
		if d.Diffed {
			turn.Commits, turn.ChangedFiles = d.Commits, d.ChangedFiles
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
			markInterrupted(s, now, code, reason, d.Logs, st.Phase)
		}
		step = &Step{ID: id, Slug: s.Task.Slug, From: machine.Working, To: s.Task.Status, Why: reason}
		return &task.Op{Name: "reconcile", Actor: machine.System, Reason: reason}, nil
	})
	if err != nil {
		return nil, err // the closure ran, but nothing was written
	}
	return step, nil
}

// Judged says whether s is still the working turn (seq of session) a
// sweep judged.
func Judged(s *task.Snapshot, session string, seq int) bool {
	return s.Task.Status == machine.Working && s.Session != nil && s.Session.ID == session && s.Session.Turn == seq
}
