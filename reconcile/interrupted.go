package reconcile

import (
	"context"
	"time"

	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
)

// sweepInterrupted handles one interrupted task of this host. A completed
// response for its current turn, written after the task was marked
// interrupted, is recorded (interrupted -> working -> blocked), never
// lost. Otherwise the task is auto-resumed if the circuit breaker and the
// other guards allow it; an interrupt recorded by a process that could
// not launch (or that died before it did) is picked up here too.
func (r *Reconciler) sweepInterrupted(ctx context.Context, id string) ([]Action, error) {
	// Without a response to record, the task waits for a supervisor
	// still running, or for a human when nothing may auto-resume it:
	// neither needs its snapshot.
	if !exists(r.proto(id).Path(proto.ResponseFile)) && (r.Env.Launch == nil || r.NoAutoResume || r.supervised(id)) {
		return nil, nil
	}
	sn, err := r.load(id)
	if err != nil {
		return nil, err
	}
	if sn.Task.Status != machine.Interrupted || !r.Env.Owns(sn) {
		return nil, nil
	}
	pd := r.proto(id)
	if resp, ok := currentResponse(pd, sn.Session); ok && resp.Status == "completed" {
		step, err := r.lifecycle().ReviveLateResponse(ctx, id, resp.Session, resp.Seq)
		first := stepAction(step)
		if err != nil || first == nil {
			return nil, err // on an error the step was not written
		}
		a, err := r.record(ctx, id, resp)
		return append(one(first), one(a)...), err
	}
	if r.supervised(id) {
		return nil, nil // it may still answer; the sweep above records it
	}
	return r.resumer().autoResumeFrom(ctx, sn)
}

// resumer owns the retry ladder: an interrupted task auto-resumed
// within the circuit breaker (lifecycle judges the breaker and the
// other guards, and re-checks under the task lock), and a task held by
// a usage limit resumed once the limit resets. With no launcher, or
// lazy.autoResume off, both wait for a human. It holds only what those
// decisions read: the lifecycle steps, task records, whether a
// supervisor runs, whose sessions are this host's, and the clock.
type resumer struct {
	// off: no launcher, or lazy.autoResume false.
	off bool
	// lifecycle is called only when a decision needs it: Env.Lifecycle
	// builds the services anew on each call.
	lifecycle func() Lifecycle
	snapshots snapshotLoader
	turns     turnProbe
	owner     sessionOwner
	now       func() time.Time
}

// turnProbe tells whether a supervisor of a task runs (the
// Reconciler: it holds the task's supervisor lock).
type turnProbe interface {
	supervised(id string) bool
}

// sessionOwner tells whether this host runs a task's session
// (wire.Env).
type sessionOwner interface {
	Owns(sn *task.Snapshot) bool
}

// resumer returns the reconciler's retry ladder for one sweep.
func (r *Reconciler) resumer() *resumer {
	return &resumer{off: r.Env.Launch == nil || r.NoAutoResume, lifecycle: r.lifecycle, snapshots: r, turns: r, owner: r.Env, now: r.now}
}

// autoResume resumes task id when allowed (spec: "Circuit Breaker Check").
// A refusal is not an error: the task waits, interrupted, for a human.
func (rs *resumer) autoResume(ctx context.Context, id string) ([]Action, error) {
	if rs.off {
		return nil, nil
	}
	sn, err := rs.snapshots.load(id)
	if err != nil {
		return nil, err
	}
	return rs.autoResumeFrom(ctx, sn)
}

// autoResumeFrom is autoResume judged first on a snapshot the caller
// just loaded; the resume itself re-checks under the task lock.
func (rs *resumer) autoResumeFrom(ctx context.Context, sn *task.Snapshot) ([]Action, error) {
	id := sn.Task.ID
	if rs.off {
		return nil, nil
	}
	if rs.lifecycle().AutoResumeRefusal(sn) != "" {
		return nil, nil
	}
	if rs.turns.supervised(id) {
		return nil, nil
	}
	sn, err := rs.lifecycle().AutoResume(ctx, id)
	if sn == nil {
		if rs.lifecycle().AutoResumeRefusal(mustLoad(rs.snapshots, id)) != "" {
			return nil, nil // refused under the lock: someone else acted first
		}
		return nil, err
	}
	a := Action{TaskID: id, Slug: sn.Task.Slug, From: machine.Interrupted, To: machine.Working, Why: "auto-resumed after an interruption"}
	return []Action{a}, err
}

// mustLoad reloads a snapshot for a re-check; a failed load reads as a
// snapshot that refuses everything.
func mustLoad(snapshots snapshotLoader, id string) *task.Snapshot {
	sn, err := snapshots.load(id)
	if err != nil {
		return &task.Snapshot{}
	}
	return sn
}

// sweepLimit resumes a task of this host whose usage limit has reset. It
// is not an auto-resume after an interruption: the circuit breaker
// neither counts nor resets it; lazy.autoResume off leaves it for a
// human (lazy unblock) as it does interrupted tasks.
func (rs *resumer) sweepLimit(ctx context.Context, id string) ([]Action, error) {
	if rs.off || rs.turns.supervised(id) {
		return nil, nil
	}
	sn, err := rs.snapshots.load(id)
	if err != nil {
		return nil, err
	}
	now := rs.now()
	if !lifecycle.LimitDue(sn, now) || !rs.owner.Owns(sn) {
		return nil, nil
	}
	from := sn.Task.Status
	sn, err = rs.lifecycle().ResumeAfterLimit(ctx, id, now)
	if sn == nil {
		if !lifecycle.LimitDue(mustLoad(rs.snapshots, id), now) {
			return nil, nil // someone else acted first
		}
		return nil, err
	}
	a := Action{TaskID: id, Slug: sn.Task.Slug, From: from, To: sn.Task.Status, Why: "resumed: the usage limit reset"}
	return []Action{a}, err
}
