package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// Lander is the accept step a train consumes: package landing's, bound by its caller to one run's options and
// narration. R is what an accept that landed returns.
type Lander[R any] interface {
	// Accept lands the task name, in its turn: it takes its place in the
	// queue itself (Enter) and gates the tree it lands, unrun when a
	// speculative run passed that tree already.
	Accept(ctx context.Context, name string) (R, error)
	// Gate is the gate of an accept into into at commit tip, as a train
	// runs it ahead of the accepts; nil when it has nothing to run.
	Gate(ctx context.Context, into, tip string) (Gate, error)
	// SetAside takes the place of Accept for a task a batched train
	// isolated as its batch's culprit: the gate failed (run) on tree. If
	// tree is what its accept would gate now, it gives the failure back
	// as a failed accept does (to the agent with lazy.gate.autoFix, else
	// parked for a human) without running the gate again, and reports
	// true; when the tree differs (the target moved), it does nothing and
	// reports false, and the task is accepted as any other.
	SetAside(ctx context.Context, name, run, tree string) (R, bool, error)
}

// Gate is one target's gate as a train runs it speculatively.
type Gate interface {
	// Parallel is how many runs of it may go at once.
	Parallel() int
	// Batch is how many entries it gates as one tree (lazy.gate.batch);
	// 0 for auto: the queue picks it from its recent outcomes (AutoBatch).
	Batch() int
	// Vouch marks tree as passed by run: a batch's run that passed on a
	// tree holding it and every entry landing before it.
	Vouch(tree, run string)
	// Candidate merges branch onto base (the train ahead), touching no
	// checkout; an error when it does not merge.
	Candidate(ctx context.Context, base, branch, slug string) (Candidate, error)
	// PassedBefore returns the run that passed this gate on tree
	// already, if one did.
	PassedBefore(tree string) (string, bool)
	// Run runs the gate on task sn's candidate and records the run,
	// speculative; passed says whether it passed.
	Run(ctx context.Context, sn *task.Snapshot, c Candidate) (run string, passed bool, err error)
}

// Candidate is a tree a gate runs on: base with a task's branch merged
// onto it, committed provisionally.
type Candidate struct {
	Base, Tree, Commit, BranchTip string
	// Batch places the run in a batched train; nil for one entry's tree.
	Batch *task.GateBatch
}

// Accepting is one task of AcceptMany and how its accept went.
type Accepting[R any] struct {
	Name   string
	Result R
	Err    error
}

// AcceptMany accepts tasks in the order given through l, as one queue
// per target branch; one that fails does not hold back those after it.
// When speculate is set (the gate is not skipped) and the gate allows
// parallel runs (lazy.gate.parallel > 1), it first gates the whole train
// speculatively: each task's tree is built on the target plus every task
// ahead of it, and up to that many gates run at once. Then each task is
// accepted in turn, which lands the tree that passed without running the
// gate again, or, if the tree changed because an entry ahead failed or
// left, gates it anew. The target only ever moves to a tree whose gate
// passed.
//
// With lazy.gate.batch above 1 the train is gated in batches instead
// (see Bisect): each batch as one tree, a failing one bisected until its
// culprit is isolated; the good entries then land unrun, and a culprit
// is set aside (Lander.SetAside) without its gate running again. A
// train split into lanes (lazy.gate.lanes) batches each lane on its own.
func AcceptMany[R any](ctx context.Context, q *Service, names []string, l Lander[R], speculate bool) []Accepting[R] {
	out := make([]Accepting[R], len(names))
	var laned map[string]bool
	if speculate {
		// With lazy.gate.lanes, a target's train runs as lanes beside one
		// another (lanetrain.go); what it leaves goes the way below.
		laned = acceptLanes(ctx, q, names, l, out)
	}
	var rest []string
	var at []int
	for i, name := range names {
		if !laned[name] {
			rest, at = append(rest, name), append(at, i)
		}
	}
	var aside map[string]setAside
	if speculate {
		aside = q.speculate(ctx, rest, l.Gate)
	}
	for k, name := range rest {
		var res R
		var err error
		done := false
		if a, ok := aside[name]; ok {
			res, done, err = l.SetAside(ctx, name, a.run, a.tree)
		}
		if !done {
			res, err = l.Accept(ctx, name)
		}
		out[at[k]] = Accepting[R]{Name: name, Result: res, Err: err}
		q.leftBehind(name, err)
	}
	return out
}

// setAside is a batch's culprit: the run that failed on its tree.
type setAside struct{ run, tree string }

// trainCar is one task of a speculative train.
type trainCar struct {
	name   string
	sn     *task.Snapshot
	branch string
	ticket *Ticket
	cand   *Candidate
}

// gateAt is Lander.Gate.
type gateAt func(ctx context.Context, into, tip string) (Gate, error)

// speculate gates each target's train ahead of the accepts, in
// parallel, or in batches; what passed is marked, so the accepts land it
// unrun, and it returns the culprits batches isolated. It is only an
// optimisation: whatever goes wrong here, the accepts gate every tree
// themselves.
func (q *Service) speculate(ctx context.Context, names []string, at gateAt) map[string]setAside {
	aside := map[string]setAside{}
	order, trains := q.trains(ctx, names)
	for _, into := range order {
		cars := trains[into]
		if len(cars) < 2 {
			continue
		}
		tip, err := q.worktrees().BranchCommit(ctx, q.Env.Dir(), into)
		if err != nil {
			continue
		}
		g, err := at(ctx, into, tip)
		if err != nil || g == nil {
			continue
		}
		size, why := g.Batch(), ""
		if size == 0 {
			a := AutoBatch(q.readLeftOf(into), len(cars))
			size, why = a.Size, a.Why
		}
		switch {
		case size > 1:
			q.gateBatches(ctx, into, tip, cars, g, size, why, aside)
		case g.Parallel() > 1:
			q.gateTrain(ctx, into, tip, cars, g)
		}
	}
	return aside
}

// trains groups the acceptable tasks among names by target, in order.
func (q *Service) trains(ctx context.Context, names []string) ([]string, map[string][]*trainCar) {
	e := q.Env
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
		trains[into] = append(trains[into], &trainCar{name: name, sn: sn, branch: local.Branch})
	}
	return order, trains
}

// chain enters each car in the queue and merges it onto the one ahead
// of it, from tip: the candidate trees a train gates, in order. A car
// that does not merge is left out (its accept will say why) and the
// next one merges onto the last that did; each that merged is given to
// merged with its candidate.
func (q *Service) chain(ctx context.Context, into, tip string, cars []*trainCar, g Gate, merged func(*trainCar, Candidate)) {
	base := tip
	for _, car := range cars {
		car.ticket = q.Enter(car.sn, into)
		c, err := g.Candidate(ctx, base, car.branch, car.sn.Task.Slug)
		if err != nil {
			car.ticket.Set(Waiting, "does not merge onto the train ahead; its accept will say why")
			continue
		}
		base = c.Commit
		merged(car, c)
	}
}

// gateTrain builds the chain of candidate trees on tip (a car that
// conflicts is left out of the chain, as it will leave the queue) and
// runs up to g.Parallel() gates at once.
func (q *Service) gateTrain(ctx context.Context, into, tip string, cars []*trainCar, g Gate) {
	ahead := 0
	q.chain(ctx, into, tip, cars, g, func(car *trainCar, c Candidate) {
		car.cand = &c
		car.ticket.Set(Gating, fmt.Sprintf("speculatively, on %s at %s + %d ahead", into, short(tip), ahead))
		ahead++
	})
	sem := make(chan struct{}, g.Parallel())
	var wg sync.WaitGroup
	for _, car := range cars {
		if car.cand == nil {
			continue
		}
		if _, ok := g.PassedBefore(car.cand.Tree); ok {
			car.ticket.Set(Waiting, "its tree passed the gate already")
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			run, passed, err := g.Run(ctx, car.sn, *car.cand)
			switch {
			case err != nil:
				car.ticket.Set(Waiting, "the speculative gate run was not recorded: "+session.OneLine(err.Error()))
			case passed:
				car.ticket.Set(Waiting, "passed the gate speculatively (run "+run+"); lands when the entries ahead have")
			default:
				car.ticket.Set(Waiting, "failed the gate speculatively; its accept gates it again on what actually lands ahead")
			}
		}()
	}
	wg.Wait()
}

// leftBehind takes out of the queue an entry this process put there
// whose accept failed before it took its place (a speculative train's).
func (q *Service) leftBehind(name string, err error) {
	id, rerr := q.Env.Store.Resolve(name)
	if rerr != nil {
		return
	}
	b, rerr := os.ReadFile(q.activePath(id))
	if rerr != nil {
		return
	}
	var en Entry
	if json.Unmarshal(b, &en) != nil || en.PID != os.Getpid() {
		return
	}
	t := &Ticket{q: q, en: en, path: q.activePath(id)}
	if err == nil {
		t.Leave(LeftLanded, "through the forge", "")
		return
	}
	t.LeaveWith(err, "")
}

// short is a commit id as the queue's details show it.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
