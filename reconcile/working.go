package reconcile

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/proc"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
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
		return r.resumer().thenAutoResume(ctx, a, err)
	}
	if r.supervised(id) {
		return nil, nil
	}
	if r.now().Sub(lastStart(sn, pd)) < r.grace() {
		return nil, nil
	}
	a, err := r.interrupt(ctx, id, pd, sn.Session.ID, sn.Session.Turn)
	return r.resumer().thenAutoResume(ctx, a, err)
}

// thenAutoResume follows an interrupt with the auto-resume the circuit
// breaker allows, in the same pass.
func (rs *resumer) thenAutoResume(ctx context.Context, a *Action, err error) ([]Action, error) {
	if err != nil || a == nil || a.To != machine.Interrupted {
		return one(a), err
	}
	more, err := rs.autoResume(ctx, a.TaskID)
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

// record records a response through lifecycle, which turns it into an
// agent turn and parks the task.
func (r *Reconciler) record(ctx context.Context, id string, resp *proto.Response) (*Action, error) {
	step, err := r.lifecycle().RecordResponse(ctx, id, resp, r.now())
	return stepAction(step), err
}

// exitReason names an exit code the way a human reads it.
func exitReason(code int) string { return lifecycle.ExitReason(code) }

// neutralKind says whether a turn kind is status-neutral.
func neutralKind(k string) bool { return lifecycle.NeutralKind(k) }

// interrupt marks a working task whose supervisor is gone without a
// response. What the turn left on disk is recorded as an agent turn, so a
// commit made just before the crash is not invisible; an agent the dead
// supervisor left running is stopped, so a resume never puts two agents
// in one worktree.
func (r *Reconciler) interrupt(ctx context.Context, id string, pd proto.Dir, sessionID string, seq int) (*Action, error) {
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
	d := lifecycle.DeadTurn{Session: sessionID, Seq: seq, Status: st, Unlocked: unlocked, Undone: undone, Logs: logs}
	if len(stray) > 0 {
		d.Killed = pidList(stray)
	}
	d.ExitCode = supervisorExit(pd)
	// What the dead turn left in its worktree, read under the lock the
	// task was judged under (the record's turn is the one judged).
	if local, err := r.Env.Owned(sn); err == nil && st.BaseSHA != "" && st.Seq == sn.Session.Turn && sn.Session.TurnKind != "ask" {
		d.Diffed = true
		d.Commits, _ = r.git().Commits(ctx, local.Worktree, st.BaseSHA)
		d.ChangedFiles, _ = r.git().ChangedFiles(ctx, local.Worktree, st.BaseSHA)
	}
	d.Now = r.now()
	// The task lock is held here, and file locks are per open file: the
	// step that takes it again would wait for ever.
	step, err := r.lifecycle().InterruptDeadLocked(ctx, id, d)
	return stepAction(step), err
}

// judged says whether s is still the working turn a sweep judged.
func judged(s *task.Snapshot, session string, seq int) bool { return lifecycle.Judged(s, session, seq) }

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
