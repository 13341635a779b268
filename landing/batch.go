package landing

import (
	"context"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// SetAside gives back a task a batched train (lazy.gate.batch) isolated
// as its batch's culprit, as a failed accept does, without running the
// gate again: only when the run named is this train's failed run on
// tree, recorded on the task, and tree is exactly what its accept would
// gate now (the target as the entries ahead of it left it). Otherwise it
// does nothing and reports false, and the task is accepted as any
// other.
func (l trainLander) SetAside(ctx context.Context, name, runID, tree string) (*AcceptResult, bool, error) {
	return l.setAside(ctx, name, runID, tree, func(cand string) (string, bool) { return "", cand == tree })
}

// setAside is SetAside, with same deciding whether the candidate tree its
// accept would gate now stands for tree, the one the run failed on (and
// saying how, for the narrator).
func (l trainLander) setAside(ctx context.Context, name, runID, tree string, same func(cand string) (string, bool)) (*AcceptResult, bool, error) {
	e := l.e
	id, err := e.Store.Resolve(name)
	if err != nil {
		return nil, false, nil
	}
	sn, err := e.Store.Load(id)
	if err != nil || sn.Task.Status != machine.Blocked || sn.Session == nil || sn.Task.Gate == nil {
		return nil, false, nil
	}
	var run *task.GateRun
	for i := range sn.Task.Gate.Runs {
		if r := sn.Task.Gate.Runs[i]; r.ID == runID {
			run = &r
		}
	}
	if run == nil || run.Passed || run.Tree != tree {
		return nil, false, nil
	}
	local, err := e.Owned(sn)
	if err != nil {
		return nil, false, nil
	}
	into, err := e.BaseBranch(ctx, sn, e.Dir())
	if err != nil {
		return nil, false, nil
	}
	tip, err := e.Gates().git().BranchCommit(ctx, e.Dir(), into)
	if err != nil {
		return nil, false, nil
	}
	c, err := e.Gates().buildCandidate(ctx, tip, local.Branch, sn.Task.Slug, into)
	if err != nil {
		return nil, false, nil
	}
	how, ok := same(c.tree)
	if !ok {
		return nil, false, nil
	}
	// The run is no longer an assumption about the queue ahead: it is the
	// tree this task's accept lands.
	run.Speculative = false
	e.Gates().noteGate(sn, *run)
	if l.narrate != nil {
		if n := l.narrate(name); n != nil {
			switch {
			case how != "":
				n.Note("the gate " + how + "; not running it again")
			case sn.Task.Gate.Batched != nil:
				n.Note("the gate " + sn.Task.Gate.Batched.String() + "; not running it again")
			}
		}
	}
	return nil, true, e.handBack(ctx, &GateError{Task: sn.Task.Slug, Run: *run, Batch: sn.Task.Gate.Batched}, l.opts)
}
