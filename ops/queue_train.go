package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// Accepting is one task of AcceptMany and how its accept went.
type Accepting struct {
	Name   string
	Result *AcceptResult
	Err    error
}

// AcceptMany accepts tasks in the order given, as one queue per target
// branch. When the gate allows parallel runs (lazy.gate.parallel > 1) it
// first gates the whole train speculatively: each task's tree is built
// on the target plus every task ahead of it, and up to that many gates
// run at once. Then each task is accepted in turn, which lands the tree
// that passed without running the gate again, or, if the tree changed
// because an entry ahead failed or left, gates it anew. The target only
// ever moves to a tree whose gate passed.
func (e *Env) AcceptMany(ctx context.Context, names []string, narrate func(name string) Narrator, opts AcceptOptions) []Accepting {
	if !opts.SkipGate {
		e.speculate(ctx, names, opts)
	}
	out := make([]Accepting, len(names))
	for i, name := range names {
		var n Narrator
		if narrate != nil {
			n = narrate(name)
		}
		res, err := e.Accept(ctx, name, n, opts)
		out[i] = Accepting{Name: name, Result: res, Err: err}
		e.leftBehind(name, err)
	}
	return out
}

// trainCar is one task of a speculative train.
type trainCar struct {
	sn     *task.Snapshot
	branch string
	ticket *queueTicket
	cand   *candidate
}

// speculate gates each target's train ahead of the accepts, in
// parallel; what passed is marked, so the accepts land it unrun. It is
// only an optimisation: whatever goes wrong here, the accepts gate
// every tree themselves.
func (e *Env) speculate(ctx context.Context, names []string, opts AcceptOptions) {
	order, trains := e.trains(ctx, names)
	for _, into := range order {
		cars := trains[into]
		if len(cars) < 2 {
			continue
		}
		tip, err := worktree.BranchCommit(ctx, e.Dir(), into)
		if err != nil {
			continue
		}
		gp, err := e.gateAt(ctx, into, tip)
		if err != nil || !gp.enabled() || gp.Parallel < 2 {
			continue
		}
		e.gateTrain(ctx, into, tip, cars, gp, opts)
	}
}

// trains groups the acceptable tasks among names by target, in order.
func (e *Env) trains(ctx context.Context, names []string) ([]string, map[string][]*trainCar) {
	var order []string
	trains := map[string][]*trainCar{}
	for _, name := range names {
		id, err := e.Store.Resolve(name)
		if err != nil {
			continue
		}
		sn, err := e.Store.Load(id)
		if err != nil || sn.Task.Status != machine.Blocked || sn.Session == nil || sn.PendingViolations() > 0 {
			continue
		}
		local, err := e.Owned(sn)
		if err != nil {
			continue
		}
		into, err := e.BaseBranch(ctx, sn, e.Dir())
		if err != nil || task.ValidBranchName(into) != nil {
			continue
		}
		if trains[into] == nil {
			order = append(order, into)
		}
		trains[into] = append(trains[into], &trainCar{sn: sn, branch: local.Branch})
	}
	return order, trains
}

// gateTrain builds the chain of candidate trees on tip (a car that
// conflicts is left out of the chain, as it will leave the queue) and
// runs up to gp.Parallel gates at once.
func (e *Env) gateTrain(ctx context.Context, into, tip string, cars []*trainCar, gp *gatePlan, opts AcceptOptions) {
	base, ahead := tip, 0
	for _, car := range cars {
		car.ticket = e.enterQueue(car.sn, into)
		c, err := e.buildCandidate(ctx, base, car.branch, car.sn.Task.Slug, into)
		if err != nil {
			car.ticket.set(QueueWaiting, "does not merge onto the train ahead; its accept will say why")
			continue
		}
		car.cand, base = c, c.commit
		car.ticket.set(QueueGating, fmt.Sprintf("speculatively, on %s at %s + %d ahead", into, short(tip), ahead))
		ahead++
	}
	sem := make(chan struct{}, gp.Parallel)
	var wg sync.WaitGroup
	for _, car := range cars {
		if car.cand == nil {
			continue
		}
		if _, ok := e.passedBefore(car.cand.tree, gp.cmds); ok {
			car.ticket.set(QueueWaiting, "its tree passed the gate already")
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			run, err := e.gateRun(ctx, car.sn, gp, car.cand, into, opts, true)
			switch {
			case err != nil:
				car.ticket.set(QueueWaiting, "the speculative gate run was not recorded: "+session.OneLine(err.Error()))
			case run.Passed:
				car.ticket.set(QueueWaiting, "passed the gate speculatively (run "+run.ID+"); lands when the entries ahead have")
			default:
				car.ticket.set(QueueWaiting, "failed the gate speculatively; its accept gates it again on what actually lands ahead")
			}
		}()
	}
	wg.Wait()
}

// leftBehind takes out of the queue an entry this process put there
// whose accept failed before it took its place (a speculative train's).
func (e *Env) leftBehind(name string, err error) {
	id, rerr := e.Store.Resolve(name)
	if rerr != nil {
		return
	}
	b, rerr := os.ReadFile(e.activePath(id))
	if rerr != nil {
		return
	}
	var en QueueEntry
	if json.Unmarshal(b, &en) != nil || en.PID != os.Getpid() {
		return
	}
	t := &queueTicket{e: e, en: en, path: e.activePath(id)}
	if err == nil {
		t.leave(LeftLanded, "through the forge", "")
		return
	}
	t.leaveWith(err, "")
}
