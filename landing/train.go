package landing

import (
	"context"

	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/task"
)

// The merge queue is package queue's; what stays here is accept's side
// of it, until accept moves to a capability of its own: the train's
// Lander over Accept and the gate, and how accept's errors say why an
// entry left.

// Accepting is one task of AcceptMany and how its accept went.
type Accepting = queue.Accepting[*AcceptResult]

// AcceptMany accepts tasks in the order given, as one queue per target
// branch, through the queue's train (queue.AcceptMany): speculatively
// gated ahead of the accepts when the gate allows parallel runs and is
// not skipped.
func (e *Service) AcceptMany(ctx context.Context, names []string, narrate func(name string) Narrator, opts AcceptOptions) []Accepting {
	return queue.AcceptMany(ctx, e.queue(), names, trainLander{e: e, narrate: narrate, opts: opts}, !opts.SkipGate)
}

// trainLander is the queue's Lander: e's Accept with one run's
// narration and options.
type trainLander struct {
	e       *Service
	narrate func(name string) Narrator
	opts    AcceptOptions
}

func (l trainLander) Accept(ctx context.Context, name string) (*AcceptResult, error) {
	var n Narrator
	if l.narrate != nil {
		n = l.narrate(name)
	}
	return l.e.Accept(ctx, name, n, l.opts)
}

func (l trainLander) Gate(ctx context.Context, into, tip string) (queue.Gate, error) {
	gp, err := l.e.Gates().gateAt(ctx, into, tip)
	if err != nil || !gp.enabled() {
		return nil, err
	}
	return trainGate{e: l.e, gp: gp, into: into, opts: l.opts}, nil
}

// trainGate is the gate of a train's target, run speculatively.
type trainGate struct {
	e    *Service
	gp   *gatePlan
	into string
	opts AcceptOptions
}

func (g trainGate) Parallel() int { return g.gp.Parallel }

// Batch is lazy.gate.batch; 0 for auto, which the queue resolves.
func (g trainGate) Batch() int {
	if g.gp.BatchAuto {
		return 0
	}
	return g.gp.Batch
}

// Vouch marks tree passed by a batch's run: the run passed on a tree
// that holds this one's entries and more, which is what lets a batch's
// entries land one by one without a run each (as bors and Mergify land
// a batch that passed).
func (g trainGate) Vouch(tree, run string) {
	if _, ok := g.e.Gates().passedBefore(tree, g.gp.cmds); !ok && task.ValidID(run) {
		g.e.Gates().markPassed(tree, g.gp.cmds, run)
	}
}

func (g trainGate) Candidate(ctx context.Context, base, branch, slug string) (queue.Candidate, error) {
	c, err := g.e.Gates().buildCandidate(ctx, base, branch, slug, g.into)
	if err != nil {
		return queue.Candidate{}, err
	}
	return queue.Candidate{Base: c.base, Tree: c.tree, Commit: c.commit, BranchTip: c.branchTip}, nil
}

func (g trainGate) PassedBefore(tree string) (string, bool) {
	return g.e.Gates().passedBefore(tree, g.gp.cmds)
}

func (g trainGate) Run(ctx context.Context, sn *task.Snapshot, c queue.Candidate) (string, bool, error) {
	run, err := g.e.Gates().gateRun(ctx, sn, g.gp, &candidate{base: c.Base, tree: c.Tree, commit: c.Commit, branchTip: c.BranchTip, batch: c.Batch}, g.into, g.opts, true)
	return run.ID, run.Passed, err
}

// forgedResult is what an accept through the forge did, as its queue entry
// leaves (nil when it returned nothing).
func forgedResult(res *AcceptResult) *queue.Forged {
	if res == nil {
		return nil
	}
	return &queue.Forged{Commit: res.Commit, Pending: res.Pending}
}

// QueueOutcome says a failed gate leaves the queue as failed.
func (g *GateError) QueueOutcome() (string, string) { return queue.LeftFailed, g.Error() }

// QueueOutcome says a conflict leaves the queue as one.
func (c *ConflictError) QueueOutcome() (string, string) { return queue.LeftConflict, c.Error() }

// QueueOutcome says a change to protected paths leaves the queue to wait
// for a human's approval.
func (p *ProtectedError) QueueOutcome() (string, string) { return queue.LeftProtected, p.QueueWhy() }
