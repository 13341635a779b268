package queue

import (
	"context"
	"fmt"
	"sync"

	"github.com/lazyorch/lazy/gate"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// A train with lanes (lazy.gate.lanes): the entries are split by the
// paths their changes touch (PlanLanes), and each lane is a train of its
// own: its entries are gated speculatively stacked only on one another,
// and accepted in order as their own runs end, while the other lanes'
// trains run beside it (an entry behind one that did not land is gated
// again outside the target's accept lock), so a failure in one lane
// never holds another. An entry whose change spans
// several lanes is in each of their trains, and is accepted only once
// every one of them has reached it: it never bypasses an entry ahead of
// it in any of its lanes. With lazy.gate.batch, each lane's train is
// batched and bisected on its own (runLaneBatched), by the same
// bisection as a train without lanes (bisectTrain), so a lane's culprit
// is isolated in that lane and never holds another.
//
// What holds: the target still only moves through an accept, under its
// accept lock, onto the target's tip at that moment. The tree it moves
// to either passed the gate itself, or is a tree that passed in the
// entry's lane with only paths outside that lane changed since (what the
// other lanes landed meanwhile): the landing side checks this on git's
// own diff of the two trees, and regates otherwise. What lanes give up,
// as every partitioned queue does, is a test of the lanes together: a
// change in one lane that breaks another lane's checks is only caught by
// the next gate run that holds both.

// LaneGate is a Gate that can split a train into lanes. A Gate without
// these methods has no lanes.
type LaneGate interface {
	// Lanes is lazy.gate.lanes.
	Lanes() gate.LaneRule
	// Changed lists the paths branch changed since it forked from tip, as
	// git names them (a rename is both its names); truncated when there
	// were more than git was asked for.
	Changed(ctx context.Context, tip, branch string) (paths []string, truncated bool, err error)
}

// LaneRun is what a lane's train knows of one entry when its turn to be
// accepted comes: its lane, what that lane's entries up to it changed,
// and the speculative run on its tree in the lane (Run "" when none ran).
type LaneRun struct {
	// Lane is the entry's lane; Rule the lanes it was planned by.
	Lane string
	Rule gate.LaneRule
	// Paths are the paths the lane's entries up to and with this one
	// changed, as git named them: the tree that landed may differ from
	// the lane's tree only outside these (and outside the lane's globs).
	Paths []string
	// Run is the speculative run on Tree, the target's tip as the train
	// began plus the lane's entries up to this one; Passed its verdict.
	Run    string
	Passed bool
	Tree   string
}

// LaneLander is a Lander that accepts an entry with what its lane's
// train found (landing's): it lands the lane's passing tree unrun, or
// gives a failing one back unrun, when the target moved meanwhile only
// outside the lane, and otherwise accepts it as Accept does. A Lander
// without it has its trains run without lanes.
type LaneLander[R any] interface {
	AcceptInLane(ctx context.Context, name string, lane LaneRun) (R, error)
}

// laneCar is a car in one lane's train: its candidate there, and the
// verdict of the speculative run on tree (its candidate's, or in a
// batched lane the tree of the lane's entries that passed up to it).
// aside says the lane's batch isolated it as a culprit: its accept is
// expected to give it back, and the trees behind it were built without
// it.
type laneCar struct {
	*trainCar
	index  int
	cand   *Candidate
	run    string
	passed bool
	tree   string
	aside  bool
}

// acceptLanes runs the trains of names whose target has lanes, each
// lane beside the others, and returns which names it accepted (their
// results in out, at their index in names). Names it leaves are
// accepted as a train without lanes.
func acceptLanes[R any](ctx context.Context, q *Service, names []string, l Lander[R], out []Accepting[R]) map[string]bool {
	ll, ok := l.(LaneLander[R])
	if !ok {
		return nil
	}
	at := map[string]int{}
	for i, n := range names {
		at[n] = i
	}
	done := map[string]bool{}
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
		g, err := l.Gate(ctx, into, tip)
		if err != nil || g == nil {
			continue
		}
		lg, ok := g.(LaneGate)
		if !ok || !lg.Lanes().Enabled() {
			continue
		}
		rule := lg.Lanes()
		entries := make([]LaneEntry, len(cars))
		for i, car := range cars {
			paths, truncated, err := lg.Changed(ctx, tip, car.branch)
			entries[i] = LaneEntry{Paths: paths, Truncated: truncated || err != nil}
		}
		plan := PlanLanes(rule, entries)
		if len(plan.Lanes) < 2 {
			continue
		}
		var recent []Left
		if g.Batch() == 0 {
			recent = q.readLeftOf(into)
		}
		runLanes(ctx, q, into, tip, cars, entries, plan, rule, g, recent, l, ll, func(car *trainCar, res R, err error) {
			out[at[car.name]] = Accepting[R]{Name: car.name, Result: res, Err: err}
			q.leftBehind(car.name, err)
		})
		for _, car := range cars {
			done[car.name] = true
		}
	}
	return done
}

// barrier is a spanning entry's meeting point: the last of its lanes to
// reach it accepts it; the others wait for that.
type barrier struct {
	mu      sync.Mutex
	waiting int
	done    chan struct{}
}

// runLanes runs one target's lanes, each on a goroutine of its own, and
// reports each car's accept as it ends (report is called from those
// goroutines, once per car). recent are the entries that left the
// target's queue, read when lazy.gate.batch is auto (each lane picks its
// own batch size).
func runLanes[R any](ctx context.Context, q *Service, into, tip string, cars []*trainCar, entries []LaneEntry, plan LanesPlan, rule gate.LaneRule, g Gate, recent []Left, l Lander[R], ll LaneLander[R], report func(*trainCar, R, error)) {
	bars := map[int]*barrier{}
	for i, car := range cars {
		name := plan.Name(i)
		car.ticket = q.Enter(car.sn, into)
		car.ticket.en.Lane = name
		detail := "in lane " + name
		if plan.Spans(i) {
			bars[i] = &barrier{waiting: len(plan.Of[i]), done: make(chan struct{})}
			detail = "in lanes " + name + ": waits until each of them reaches it"
		}
		car.ticket.Set(Waiting, detail)
		q.noteLane(ctx, car, name)
	}
	var wg sync.WaitGroup
	for _, lane := range plan.Lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc := &laneAccepts[R]{ctx: ctx, q: q, into: into, lane: lane.Name, rule: rule, entries: entries, bars: bars, g: g, l: l, ll: ll, report: report}
			size, why := g.Batch(), ""
			if size == 0 {
				a := AutoBatchInLane(recent, lane.Name, len(lane.Entries))
				size, why = a.Size, a.Why
			}
			if size > 1 {
				runLaneBatched(ctx, q, batchTrain{into: into, tip: tip, lane: lane.Name, auto: why}, cars, lane, size, acc)
				return
			}
			runLane(ctx, into, tip, cars, lane, acc)
		}()
	}
	wg.Wait()
}

// runLane is one lane's train: its entries stacked on tip and gated
// speculatively (up to lazy.gate.parallel at once, in this lane alone),
// then accepted in order.
func runLane[R any](ctx context.Context, into, tip string, cars []*trainCar, lane LanePlan, acc *laneAccepts[R]) {
	g, bars := acc.g, acc.bars
	lcs := make([]*laneCar, len(lane.Entries))
	base, ahead := tip, 0
	for k, i := range lane.Entries {
		lc := &laneCar{trainCar: cars[i], index: i}
		lcs[k] = lc
		c, err := g.Candidate(ctx, base, lc.branch, lc.sn.Task.Slug)
		if err != nil {
			continue // it does not merge onto the lane ahead: its accept says why
		}
		base, lc.cand, lc.tree = c.Commit, &c, c.Tree
		if bars[i] == nil {
			lc.ticket.Set(Gating, fmt.Sprintf("speculatively in lane %s, on %s at %s + %d ahead in the lane", lane.Name, into, short(tip), ahead))
		}
		ahead++
	}
	// Each entry is accepted as soon as its own run has ended: the lane
	// lands its first entries while later ones are still gated.
	ready := make([]chan struct{}, len(lcs))
	for k := range ready {
		ready[k] = make(chan struct{})
	}
	sem := make(chan struct{}, max(1, g.Parallel()))
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k, lc := range lcs {
			// A spanning entry is gated again when it is accepted, on what
			// every one of its lanes landed: its tree in one lane says nothing.
			if lc.cand == nil || bars[lc.index] != nil {
				close(ready[k])
				continue
			}
			if id, ok := g.PassedBefore(lc.cand.Tree); ok {
				lc.run, lc.passed = id, true
				close(ready[k])
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; close(ready[k]); wg.Done() }()
				run, passed, err := g.Run(ctx, lc.sn, *lc.cand)
				switch {
				case err != nil:
					lc.ticket.Set(Waiting, "in lane "+lane.Name+": the speculative gate run was not recorded: "+session.OneLine(err.Error()))
				case passed:
					lc.run, lc.passed = run, true
					lc.ticket.Set(Waiting, "in lane "+lane.Name+": passed the gate speculatively (run "+run+"); lands when the lane ahead has")
				default:
					lc.run = run
					lc.ticket.Set(Waiting, "in lane "+lane.Name+": failed the gate speculatively (run "+run+")")
				}
			}()
		}
	}()
	for k, lc := range lcs {
		<-ready[k]
		acc.accept(lc)
	}
}

// runLaneBatched is one lane's train under lazy.gate.batch: the lane's
// entries are gated in batches and a failing batch is bisected in the
// lane (bisectTrain, as a train without lanes is), on trees holding only
// the lane's own entries; then each is accepted in order with its
// verdict: a passing entry lands on the run that vouched for it, a
// culprit is given back on its confirming run, both unrun when the
// target moved meanwhile only outside the lane. An entry spanning lanes
// cuts the lane in two: the entries before it are bisected on tip, it is
// accepted once each of its lanes reaches it, and the entries after it
// are bisected on the target as it then is (a tree without it would say
// nothing of theirs once it landed).
func runLaneBatched[R any](ctx context.Context, q *Service, bt batchTrain, cars []*trainCar, lane LanePlan, size int, acc *laneAccepts[R]) {
	base := bt.tip
	for k := 0; k < len(lane.Entries); {
		var seg []*laneCar
		for ; k < len(lane.Entries) && acc.bars[lane.Entries[k]] == nil; k++ {
			seg = append(seg, &laneCar{trainCar: cars[lane.Entries[k]], index: lane.Entries[k]})
		}
		if len(seg) > 0 {
			if base == "" {
				base, _ = q.worktrees().BranchCommit(ctx, q.Env.Dir(), bt.into)
			}
			q.gateLaneBatch(ctx, bt, base, seg, acc.g, size)
			// Its trees are built on base: nothing ahead of it is missing.
			acc.stale = false
			for _, lc := range seg {
				acc.accept(lc)
			}
		}
		if k < len(lane.Entries) {
			acc.accept(&laneCar{trainCar: cars[lane.Entries[k]], index: lane.Entries[k]})
			k++
			base = ""
		}
	}
}

// gateLaneBatch bisects seg, a run of a lane's entries, on base: each
// stacked on the one before it (one that does not merge is left out, as
// its accept will say), and each given what the bisection decided.
func (q *Service) gateLaneBatch(ctx context.Context, bt batchTrain, base string, seg []*laneCar, g Gate, size int) {
	if base == "" {
		return // no target to build on: each accept gates its own tree
	}
	var in []*trainCar
	var inLane []*laneCar
	tip := base
	for _, lc := range seg {
		c, err := g.Candidate(ctx, tip, lc.branch, lc.sn.Task.Slug)
		if err != nil {
			lc.ticket.Set(Waiting, "in lane "+bt.lane+": does not merge onto the lane ahead; its accept will say why")
			continue
		}
		tip, lc.cand = c.Commit, &c
		in, inLane = append(in, lc.trainCar), append(inLane, lc)
	}
	bt.tip = base
	for k, v := range q.bisectTrain(ctx, bt, in, g, size) {
		lc := inLane[k]
		lc.run, lc.passed, lc.tree, lc.aside = v.run, v.passed, v.tree, v.run != "" && !v.passed
	}
}

// laneAccepts accepts one lane's entries in order, each with what its
// lane's train found, and knows what the lane has accepted so far.
type laneAccepts[R any] struct {
	ctx     context.Context
	q       *Service
	into    string
	lane    string
	rule    gate.LaneRule
	entries []LaneEntry
	bars    map[int]*barrier
	g       Gate
	l       Lander[R]
	ll      LaneLander[R]
	report  func(*trainCar, R, error)

	// paths are what the lane's entries accepted so far changed;
	// truncated says one of them changed more than git listed.
	paths     []string
	truncated bool
	// stale: an entry ahead in the lane did not go as the lane's trees
	// assumed (one they hold did not land, or a culprit they leave out
	// did), so the trees gated behind it are not what lands.
	stale bool
}

// accept accepts lc, in its turn: a spanning entry once every lane it
// spans has reached it (the last to reach it accepts it), any other with
// its lane's verdict, gated again on the target first when the lane's
// trees went stale.
func (a *laneAccepts[R]) accept(lc *laneCar) {
	ctx := a.ctx
	a.paths = append(a.paths, a.entries[lc.index].Paths...)
	a.truncated = a.truncated || a.entries[lc.index].Truncated
	if b := a.bars[lc.index]; b != nil {
		b.mu.Lock()
		b.waiting--
		last := b.waiting == 0
		b.mu.Unlock()
		if !last {
			<-b.done
			return
		}
		lc.ticket.Set(Waiting, "every lane it spans has reached it")
		res, err := a.l.Accept(ctx, lc.name)
		a.report(lc.trainCar, res, err)
		a.stale = a.stale || err != nil
		close(b.done)
		return
	}
	lr := LaneRun{Lane: a.lane, Rule: a.rule, Paths: append([]string(nil), a.paths...)}
	if lc.run != "" && lc.cand != nil && !a.truncated {
		lr.Run, lr.Passed, lr.Tree = lc.run, lc.passed, lc.tree
	}
	if a.stale && !a.truncated {
		regateInLane(ctx, a.q, a.into, a.lane, lc, a.g, &lr)
	}
	res, err := a.ll.AcceptInLane(ctx, lc.name, lr)
	a.report(lc.trainCar, res, err)
	a.stale = a.stale || (err != nil) != lc.aside || lc.cand == nil
}

// regateInLane gates lc again on the target as it is now, outside the
// target's accept lock, when an entry ahead of it in the lane did not
// land: the lane's own run was on a tree holding that entry, and its
// accept would otherwise gate it under the lock, holding every other
// lane's landings meanwhile. lr takes the new run; if the target moves
// again before the accept, only outside the lane, the run still stands
// (LaneLander checks it), else the accept gates it once more.
func regateInLane(ctx context.Context, q *Service, into, lane string, lc *laneCar, g Gate, lr *LaneRun) {
	now, err := q.worktrees().BranchCommit(ctx, q.Env.Dir(), into)
	if err != nil {
		return
	}
	c, err := g.Candidate(ctx, now, lc.branch, lc.sn.Task.Slug)
	if err != nil {
		return // it does not merge: its accept says why
	}
	if id, ok := g.PassedBefore(c.Tree); ok {
		lr.Run, lr.Passed, lr.Tree = id, true, c.Tree
		return
	}
	lc.ticket.Set(Gating, fmt.Sprintf("in lane %s, again on %s at %s: an entry ahead in the lane did not land", lane, into, short(now)))
	run, passed, err := g.Run(ctx, lc.sn, c)
	if err != nil {
		lr.Run = ""
		return
	}
	lr.Run, lr.Passed, lr.Tree = run, passed, c.Tree
}

// noteLane records on car's task the lane its accept goes through,
// where lazy show reads it.
func (q *Service) noteLane(ctx context.Context, car *trainCar, lane string) {
	_, _, _ = q.Env.Store.Update(ctx, car.sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Gate == nil {
			s.Task.Gate = &task.GateRecord{}
		}
		if s.Task.Gate.Lane == lane {
			return nil, nil
		}
		s.Task.Gate.Lane = lane
		return &task.Op{Name: "gate-lane", Actor: q.Env.Actor, Reason: "lane " + lane}, nil
	})
}
