package queue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// gateBatches gates a train in batches of size entries, bisecting a
// batch that fails (Bisect), ahead of the accepts. A car that does not
// merge onto the train ahead is left out, as its accept will say. What
// passed is marked for the accepts; the culprits are added to aside.
// auto, when lazy.gate.batch auto chose size, says why on each gating
// entry.
func (q *Service) gateBatches(ctx context.Context, into, tip string, cars []*trainCar, g Gate, size int, auto string, aside map[string]setAside) {
	var in []*trainCar
	q.chain(ctx, into, tip, cars, g, func(car *trainCar, _ Candidate) { in = append(in, car) })
	if len(in) < 2 {
		return
	}
	for k, v := range q.bisectTrain(ctx, batchTrain{into: into, tip: tip, auto: auto}, in, g, size) {
		if v.run != "" && !v.passed {
			aside[in[k].name] = setAside{run: v.run, tree: v.tree}
		}
	}
}

// batchTrain is where a batched train runs: on target into at commit
// tip, in lane (lazy.gate.lanes; "" for a train without lanes), with
// auto saying why lazy.gate.batch auto chose its size ("" for a number).
type batchTrain struct {
	into, tip, lane, auto string
}

// place names batch b of of in this train, as the queue's details say it.
func (bt batchTrain) place(b, of int) string { return task.BatchPlace(b, of, bt.lane) }

// batchVerdict is what a batched train decided for one of its cars: it
// passed (its tree, the train's entries that passed up to it, is vouched
// for by run) or it is the culprit (run failed on tree twice); run is ""
// when the bisection could not decide it.
type batchVerdict struct {
	run, tree string
	passed    bool
}

// bisectTrain gates the cars in (each merging onto the one before it
// from bt.tip) in batches of size entries, bisecting a batch that fails
// (Bisect), and returns what it decided for each car, at its index. Each
// run is recorded on the task whose tree it is (the last one merged);
// each decision on its task (gate_record.batched) and its queue entry.
// What passed is marked (Gate.Vouch): a landing entry's tree is vouched
// for by the run that passed on a tree holding it and every entry landing
// before it.
func (q *Service) bisectTrain(ctx context.Context, bt batchTrain, in []*trainCar, g Gate, size int) []batchVerdict {
	out := make([]batchVerdict, len(in))
	chain := &chainCache{g: g, tip: bt.tip, cars: in, built: map[string]Candidate{}}
	runs := map[int]string{}
	auto := bt.auto
	if auto != "" {
		auto = "; " + auto
	}
	// ahead are the runs started beside a confirming run (Test.Then), by
	// the tree they gate; each is waited for before this returns.
	ahead := map[string]*aheadRun{}
	defer func() {
		for _, a := range ahead {
			<-a.done
		}
	}()
	res, err := Bisect(len(in), size, func(t Test) (bool, error) {
		c, err := chain.build(ctx, t.Entries)
		if err != nil {
			return false, err
		}
		for _, e := range t.Entries[len(t.Entries)-t.New:] {
			if t.Confirm {
				in[e].ticket.Set(Gating, fmt.Sprintf("isolated in %s, round %d: its tree is gated once more before it is sent back (a flaky failure would send back a good task)",
					bt.place(t.Batch, t.Of), t.Round))
				continue
			}
			in[e].ticket.Set(Gating, fmt.Sprintf("in %s, round %d: %d entries gated as one tree on %s at %s%s",
				bt.place(t.Batch, t.Of), t.Round, len(t.Entries), bt.into, short(bt.tip), auto))
		}
		if id, ok := g.PassedBefore(c.Tree); ok {
			runs[t.Index] = id
			return true, nil
		}
		if a := ahead[c.Tree]; a != nil {
			<-a.done
			delete(ahead, c.Tree)
			if a.err == nil {
				runs[t.Index] = a.run
				return a.passed, nil
			}
		}
		c.Batch = &task.GateBatch{Batch: t.Batch, Of: t.Of, Round: t.Round, Entries: len(t.Entries), Part: t.New, Lane: bt.lane}
		if t.Confirm && len(t.Then) > 0 && g.Parallel() > 1 {
			q.startAhead(ctx, chain, g, bt, t, ahead)
		}
		run, passed, err := g.Run(ctx, in[t.Last()].sn, c)
		if err != nil {
			return false, err
		}
		runs[t.Index] = run
		return passed, nil
	})
	if err != nil {
		for _, e := range res.Undecided {
			in[e].ticket.Set(Waiting, "the batch could not be gated ("+session.OneLine(err.Error())+"); its accept gates it on its own")
		}
	}
	then := "; lands when the entries ahead have"
	if bt.lane != "" {
		then = "; lands when the lane ahead has"
	}
	now := q.now().UTC().Truncate(time.Second)
	for k, e := range res.Landed {
		v := res.Vouched[e]
		c, cerr := chain.build(ctx, res.Landed[:k+1])
		if cerr != nil {
			continue
		}
		run := runs[v.Index]
		g.Vouch(c.Tree, run)
		// The accept asks for this machine's mark of the tree, which an
		// earlier pass may have set first.
		if id, ok := g.PassedBefore(c.Tree); ok {
			run = id
		}
		out[e] = batchVerdict{run: run, tree: c.Tree, passed: true}
		q.decided(ctx, in[e], task.BatchOutcome{Outcome: task.BatchPassed, Target: bt.into, Batch: v.Batch, Of: v.Of, Round: v.Round, Run: runs[v.Index], At: now, Lane: bt.lane},
			then)
	}
	for _, cu := range res.Culprits {
		c, cerr := chain.build(ctx, res.Verdicts[cu.Failed].Entries)
		if cerr != nil {
			continue
		}
		car := in[cu.Entry]
		out[cu.Entry] = batchVerdict{run: runs[cu.Failed], tree: c.Tree}
		q.decided(ctx, car, task.BatchOutcome{Outcome: task.BatchIsolated, Target: bt.into, Batch: cu.Batch, Of: cu.Of, Round: cu.Round, Run: runs[cu.Failed], At: now, Lane: bt.lane},
			"; set aside, the entries behind it land without it")
	}
	return out
}

// aheadRun is a gate run started beside a confirming run.
type aheadRun struct {
	done   chan struct{}
	run    string
	passed bool
	err    error
}

// startAhead starts, beside the confirming test t, the test that follows
// when the confirmation fails: what passed, without the isolated entry,
// plus t.Then, as round 1 of the next search. Its result waits in ahead
// for the bisection to ask for that tree; when the confirmation passes
// instead (the gate was flaky), the run is one more, recorded like any.
func (q *Service) startAhead(ctx context.Context, chain *chainCache, g Gate, bt batchTrain, t Test, ahead map[string]*aheadRun) {
	entries := append(slices.Clone(t.Entries[:len(t.Entries)-1]), t.Then...)
	c, err := chain.build(ctx, entries)
	if err != nil || ahead[c.Tree] != nil {
		return
	}
	if _, ok := g.PassedBefore(c.Tree); ok {
		return
	}
	c.Batch = &task.GateBatch{Batch: t.Batch, Of: t.Of, Round: 1, Entries: len(entries), Part: len(t.Then), Lane: bt.lane}
	for _, e := range t.Then {
		chain.cars[e].ticket.Set(Gating, fmt.Sprintf("in %s, round 1: %d entries gated as one tree, beside the run confirming the entry ahead",
			bt.place(t.Batch, t.Of), len(entries)))
	}
	a := &aheadRun{done: make(chan struct{})}
	ahead[c.Tree] = a
	sn := chain.cars[entries[len(entries)-1]].sn
	go func() {
		defer close(a.done)
		a.run, a.passed, a.err = g.Run(ctx, sn, c)
	}()
}

// decided records what a batch decided for car: on its task, where
// lazy show reads it, and on its queue entry, which lazy queue shows and
// the log of entries that left keeps.
func (q *Service) decided(ctx context.Context, car *trainCar, o task.BatchOutcome, then string) {
	_, _, _ = q.Env.Store.Update(ctx, car.sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Gate == nil {
			s.Task.Gate = &task.GateRecord{}
		}
		s.Task.Gate.Batched = &o
		return &task.Op{Name: "gate-batch", Actor: q.Env.Actor, Reason: o.String()}, nil
	})
	car.ticket.en.Batch = &o
	car.ticket.Set(Waiting, o.String()+then)
}

// chainCache builds the candidate trees of a batched train: the target's
// tip with some of its entries merged in order, each prefix built once.
type chainCache struct {
	g     Gate
	tip   string
	cars  []*trainCar
	built map[string]Candidate
}

// build is the candidate of tip with entries merged in order.
func (cc *chainCache) build(ctx context.Context, entries []int) (Candidate, error) {
	base := cc.tip
	var c Candidate
	var key strings.Builder
	for _, e := range entries {
		key.WriteString(strconv.Itoa(e) + ",")
		got, ok := cc.built[key.String()]
		if !ok {
			car := cc.cars[e]
			var err error
			if got, err = cc.g.Candidate(ctx, base, car.branch, car.sn.Task.Slug); err != nil {
				return Candidate{}, fmt.Errorf("merge %s onto the batch ahead: %w", car.sn.Task.Slug, err)
			}
			cc.built[key.String()] = got
		}
		c, base = got, got.Commit
	}
	return c, nil
}
