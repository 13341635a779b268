package reconcile

import (
	"context"

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
	return r.autoResumeFrom(ctx, sn)
}

// autoResume resumes task id when allowed (spec: "Circuit Breaker Check").
// A refusal is not an error: the task waits, interrupted, for a human.
func (r *Reconciler) autoResume(ctx context.Context, id string) ([]Action, error) {
	if r.Env.Launch == nil || r.NoAutoResume {
		return nil, nil
	}
	sn, err := r.load(id)
	if err != nil {
		return nil, err
	}
	return r.autoResumeFrom(ctx, sn)
}

// autoResumeFrom is autoResume judged first on a snapshot the caller
// just loaded; the resume itself re-checks under the task lock.
func (r *Reconciler) autoResumeFrom(ctx context.Context, sn *task.Snapshot) ([]Action, error) {
	id := sn.Task.ID
	if r.Env.Launch == nil || r.NoAutoResume {
		return nil, nil
	}
	if r.lifecycle().AutoResumeRefusal(sn) != "" {
		return nil, nil
	}
	if r.supervised(id) {
		return nil, nil
	}
	sn, err := r.lifecycle().AutoResume(ctx, id)
	if sn == nil {
		if r.lifecycle().AutoResumeRefusal(mustLoad(r, id)) != "" {
			return nil, nil // refused under the lock: someone else acted first
		}
		return nil, err
	}
	a := Action{TaskID: id, Slug: sn.Task.Slug, From: machine.Interrupted, To: machine.Working, Why: "auto-resumed after an interruption"}
	return []Action{a}, err
}

// mustLoad reloads a snapshot for a re-check; a failed load reads as a
// snapshot that refuses everything.
func mustLoad(r *Reconciler, id string) *task.Snapshot {
	sn, err := r.load(id)
	if err != nil {
		return &task.Snapshot{}
	}
	return sn
}

// sweepLimit resumes a task of this host whose usage limit has reset. It
// is not an auto-resume after an interruption: the circuit breaker
// neither counts nor resets it; lazy.autoResume off leaves it for a
// human (lazy unblock) as it does interrupted tasks.
func (r *Reconciler) sweepLimit(ctx context.Context, id string) ([]Action, error) {
	if r.Env.Launch == nil || r.NoAutoResume || r.supervised(id) {
		return nil, nil
	}
	sn, err := r.load(id)
	if err != nil {
		return nil, err
	}
	now := r.now()
	if !lifecycle.LimitDue(sn, now) || !r.Env.Owns(sn) {
		return nil, nil
	}
	from := sn.Task.Status
	sn, err = r.lifecycle().ResumeAfterLimit(ctx, id, now)
	if sn == nil {
		if !lifecycle.LimitDue(mustLoad(r, id), now) {
			return nil, nil // someone else acted first
		}
		return nil, err
	}
	a := Action{TaskID: id, Slug: sn.Task.Slug, From: from, To: sn.Task.Status, Why: "resumed: the usage limit reset"}
	return []Action{a}, err
}
