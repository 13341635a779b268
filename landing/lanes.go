package landing

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/gate"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/queue"
)

// Lanes (lazy.gate.lanes): accept's side of a train split into lanes.
// The queue runs each lane's train beside the others (queue.LaneRun); an
// entry's accept may then take its lane's verdict for the tree it lands
// when that tree differs from the one its lane gated only in paths
// outside the lane: paths neither the lane's entries up to it changed nor
// (with named lanes) the lane's globs match. Both trees are compared by
// git itself (diff of the two trees, names as git reports them), never by
// what a task or its agent says it touched; anything else is gated anew.

// Lanes is lazy.gate.lanes, as the gate at the train's target reads it.
func (g trainGate) Lanes() gate.LaneRule { return g.gp.Lanes }

// Changed lists the paths branch changed since it forked from tip: git's
// own names, a rename as both its names.
func (g trainGate) Changed(ctx context.Context, tip, branch string) ([]string, bool, error) {
	head, err := g.e.Gates().git().BranchCommit(ctx, g.e.Dir(), branch)
	if err != nil {
		return nil, false, err
	}
	return g.e.Gates().git().RangeFiles(ctx, g.e.Dir(), tip, head)
}

// AcceptInLane accepts a task with its lane's verdict: a failing run on
// a tree the accept's own differs from only outside the lane gives the
// failure back unrun (as a batch's culprit is), a passing one lands
// unrun (localAccept.gate checks it again under the accept lock); any
// other is an Accept.
func (l trainLander) AcceptInLane(ctx context.Context, name string, lr queue.LaneRun) (*AcceptResult, error) {
	if lr.Run != "" && !lr.Passed {
		res, done, err := l.setAside(ctx, name, lr.Run, lr.Tree, func(cand string) (string, bool) {
			n, ok := l.e.Gates().sameInLane(ctx, lr.Tree, cand, lr)
			return laneHow("failed", lr, n), ok
		})
		if done {
			return res, err
		}
	}
	opts := l.opts
	if lr.Run != "" && lr.Passed {
		opts.lane = &lr
	}
	var n Narrator
	if l.narrate != nil {
		n = l.narrate(name)
	}
	return l.e.Accept(ctx, name, n, opts)
}

// laneHow says how a lane's verdict stands for the tree an accept lands.
func laneHow(verdict string, lr queue.LaneRun, n int) string {
	if n == 0 {
		return fmt.Sprintf("%s in lane %s on this exact tree (run %s)", verdict, lr.Lane, lr.Run)
	}
	return fmt.Sprintf("%s in lane %s (run %s) on a tree this one differs from only in %s outside the lane, which %s",
		verdict, lr.Lane, lr.Run, words.Count(n, "path", "paths"), "the target gained meanwhile")
}

// treeDiffer is the git that compares two trees, every path by its own
// name (no rename detection: a file deleted in one lane and one of the
// same content added in another are two paths); a git without it (a
// test's fake) never takes a lane's verdict for another tree.
type treeDiffer interface {
	ChangedPaths(ctx context.Context, repoDir, from, to string) ([]string, error)
}

// sameInLane reports whether tree cand stands for tree gated in lr's
// lane: git finds them equal in every path the lane's entries up to this
// one changed and in every path the lane's globs match. n is how many
// paths differ (all outside the lane).
func (e *Gates) sameInLane(ctx context.Context, gated, cand string, lr queue.LaneRun) (n int, ok bool) {
	if gated == cand {
		return 0, true
	}
	d, ok := e.git().(treeDiffer)
	if !ok || gated == "" || cand == "" {
		return 0, false
	}
	names, err := d.ChangedPaths(ctx, e.Dir(), gated, cand)
	if err != nil || len(names) == 0 {
		return 0, false
	}
	mine := map[string]bool{}
	for _, p := range lr.Paths {
		mine[p] = true
	}
	for _, p := range names {
		if mine[p] || !lr.Rule.ByDiff && lr.Rule.LaneOf(p) == lr.Lane {
			return 0, false
		}
	}
	return len(names), true
}

// laneVouched is the lane's passing verdict for the tree this accept
// lands, when it stands: the candidate on the target's tip now, and the
// run that passed in the lane. The run must be this machine's own mark
// of a pass on the lane's tree with this very gate's commands (a gate
// the other lane changed is run anew).
func (a *localAccept) laneVouched(ctx context.Context) (*candidate, string, bool) {
	lr := a.opts.lane
	if lr == nil || !lr.Passed {
		return nil, "", false
	}
	g := a.e.Gates()
	if id, ok := g.passedBefore(lr.Tree, a.gp.cmds); !ok || id != lr.Run {
		return nil, "", false
	}
	c, err := g.buildCandidate(ctx, a.pre.intoSHA, a.pre.branch, a.sn.Task.Slug, a.pre.into)
	if err != nil {
		return nil, "", false
	}
	if _, ok := g.passedBefore(c.tree, a.gp.cmds); ok {
		return nil, "", false // the gate's own reuse says it
	}
	n, ok := g.sameInLane(ctx, lr.Tree, c.tree, *lr)
	if !ok {
		return nil, "", false
	}
	return c, laneHow("passed", *lr, n), true
}
