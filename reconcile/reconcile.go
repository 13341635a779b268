// Package reconcile moves tasks one valid step toward what the protocol
// files and processes say is true. It is level-triggered and idempotent:
// every step takes the task lock and writes by compare-and-swap, and
// re-checks what it saw under the lock, so two reconcilers at once never
// double-apply.
//
// This is the working-task sweep of the spec: a response recorded and
// the task parked, a live supervisor left alone, a dead one without a
// response marked interrupted. The other sweeps, auto-resume and the
// circuit breaker arrive with the crash-recovery work.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/ops"
	"github.com/lazyorch/lazy/proto"
)

// StartGrace is how long a newly working task is left alone before a
// missing supervisor counts as a crash (spec: "Grace period").
const StartGrace = 30 * time.Second

// Action is one thing a sweep did.
type Action struct {
	TaskID string         `json:"task_id"`
	Slug   string         `json:"slug"`
	From   machine.Status `json:"from"`
	To     machine.Status `json:"to"`
	Why    string         `json:"why"`
}

// Reconciler sweeps one repository.
type Reconciler struct {
	Env *ops.Env // actor should be System
	Now func() time.Time
}

// Sweep judges every working task in entries owned by this host. It costs
// in proportion to the working tasks, not to all tasks.
func (r *Reconciler) Sweep(ctx context.Context, entries []gitstore.Entry) ([]Action, error) {
	var actions []Action
	var errs []error
	for _, e := range entries {
		if e.Err != nil || e.Status != machine.Working {
			continue
		}
		a, err := r.sweepWorking(ctx, e.ID)
		if err != nil {
			errs = append(errs, fmt.Errorf("reconcile %s: %w", e.ID, err))
			continue
		}
		if a != nil {
			actions = append(actions, *a)
		}
	}
	return actions, errors.Join(errs...)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) sweepWorking(ctx context.Context, id string) (*Action, error) {
	store := r.Env.Store
	sn, err := store.Load(id)
	if err != nil {
		return nil, err
	}
	if sn.Task.Status != machine.Working || sn.Session == nil || sn.Session.Host != store.Host() {
		return nil, nil // another host judges its own sessions
	}
	pd := proto.ForTask(store.Repo().LazyDir(), id)
	var resp proto.Response
	rerr := pd.Read(proto.ResponseFile, &resp)
	if rerr == nil && resp.Session == sn.Session.ID && resp.Seq == sn.Session.Turn {
		return r.record(ctx, id, &resp)
	}
	var st proto.Status
	if err := pd.Read(proto.StatusFile, &st); err == nil && st.Session == sn.Session.ID && alive(st.PID) {
		return nil, nil
	}
	if r.now().Sub(lastStart(sn)) < StartGrace {
		return nil, nil
	}
	return r.interrupt(ctx, id, pd)
}

// lastStart bounds when the current turn began from below: the task's
// last update, which for a working task is the op that launched the turn
// (or a later comment, which only lengthens the grace).
func lastStart(sn *gitstore.Snapshot) time.Time {
	if sn.Session == nil {
		return time.Time{}
	}
	return sn.Task.UpdatedAt
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// record turns a response into an agent turn and parks the task.
func (r *Reconciler) record(ctx context.Context, id string, resp *proto.Response) (*Action, error) {
	var act *Action
	unlock, err := r.Env.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	_, _, err = r.Env.Store.Update(ctx, id, func(s *gitstore.Snapshot) (*gitstore.Op, error) {
		if s.Task.Status != machine.Working || s.Session == nil || s.Session.ID != resp.Session || s.Session.Turn != resp.Seq {
			act = nil
			return nil, nil // someone else recorded it, or it is not ours
		}
		now := r.now().UTC().Truncate(time.Second)
		code := resp.ExitCode
		turn := gitstore.Turn{Role: gitstore.RoleAgent, Kind: "agent", Content: resp.Result, At: now, Session: resp.Session,
			Commits: resp.Commits, ChangedFiles: resp.ChangedFiles, ExitCode: &code, Error: resp.Error, FailureClass: resp.FailureClass, Attempts: resp.Attempts}
		from := s.Task.Status
		if resp.AgentSessionID != "" {
			s.Session.AgentSessionID = resp.AgentSessionID // resume with the latest id seen
		}
		var why string
		neutral := s.Session.TurnKind == "ask" || s.Session.TurnKind == "sync"
		if s.Session.TurnKind == "sync" {
			turn.Kind = "sync"
		}
		switch {
		case neutral && resp.Status != proto.Completed:
			// An ask or sync restores the status it came from on an agent
			// error too; only a dead supervisor (no response) interrupts.
			s.AddTurn(turn)
			s.Task.Status = machine.Park(s.PendingViolations())
			why = s.Session.TurnKind + " ended with an error: " + reasonFor(resp)
		case resp.Status == proto.Completed:
			s.AddTurn(turn)
			// Feedback is consumed only when a response completes normally.
			if err := s.EditTurns(func(t *gitstore.Turn) bool {
				if t.FeedbackDelivery != gitstore.FeedbackPending {
					return false
				}
				t.FeedbackDelivery = gitstore.FeedbackConsumed
				return true
			}); err != nil {
				return nil, err
			}
			s.Session.ConsecutiveInterruptions = 0
			s.Task.Status = machine.Park(s.PendingViolations())
			why = fmt.Sprintf("agent turn completed (%d commits)", len(resp.Commits))
		case resp.FailureClass != "" && resp.FailureClass != "unknown":
			// The supervisor stopped on a classified condition (fatal, or
			// a transient past its cap): a human must look, and blocked is
			// what keeps auto-resume from relaunching into it.
			s.AddTurn(turn)
			s.Session.InterruptReason = resp.FailureClass + ": " + resp.FailureReason
			s.Task.Status = machine.Park(s.PendingViolations())
			why = "agent failure the supervisor stopped on: " + s.Session.InterruptReason
		default:
			s.AddTurn(turn)
			markInterrupted(s, now, resp.ExitCode, reasonFor(resp), resp.StderrTail)
			why = "agent turn failed: " + s.Session.InterruptReason
		}
		act = &Action{TaskID: id, Slug: s.Task.Slug, From: from, To: s.Task.Status, Why: why}
		return &gitstore.Op{Name: "reconcile", Actor: machine.System, Reason: why}, nil
	})
	return act, err
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

func markInterrupted(s *gitstore.Snapshot, now time.Time, code int, reason, logs string) {
	s.Task.Status = machine.Interrupted
	s.Session.InterruptReason = reason
	s.Session.InterruptExitCode = &code
	s.Session.InterruptAt = &now
	s.Session.InterruptLogs = logs
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
// response.
func (r *Reconciler) interrupt(ctx context.Context, id string, pd proto.Dir) (*Action, error) {
	var act *Action
	unlock, err := r.Env.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	logs := lastLogLines(pd.Path(proto.LogFile))
	if sup := lastLogLines(pd.Path(proto.SupervisorLogFile)); sup != "" {
		logs += "\n--- supervisor stderr ---\n" + sup
	}
	_, _, err = r.Env.Store.Update(ctx, id, func(s *gitstore.Snapshot) (*gitstore.Op, error) {
		if s.Task.Status != machine.Working || s.Session == nil {
			act = nil
			return nil, nil
		}
		var resp proto.Response
		if pd.Read(proto.ResponseFile, &resp) == nil && resp.Session == s.Session.ID && resp.Seq == s.Session.Turn {
			act = nil
			return nil, nil // a response arrived meanwhile; the next sweep records it
		}
		now := r.now().UTC().Truncate(time.Second)
		markInterrupted(s, now, -1, "the supervisor exited without writing a response", logs)
		act = &Action{TaskID: id, Slug: s.Task.Slug, From: machine.Working, To: machine.Interrupted, Why: s.Session.InterruptReason}
		return &gitstore.Op{Name: "reconcile", Actor: machine.System, Reason: s.Session.InterruptReason}, nil
	})
	return act, err
}

func lastLogLines(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return proto.Tail(string(b))
}
