package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// The tests in this file run the queue on its seams alone: the task
// store in memory, git's side of branches faked (fakeGit), the accept
// step and its gate faked (fakeLander), and PATH emptied so that any git
// process a step would start fails the test.

// fixture is a queue over a store in memory and a lazy directory of its
// own, on a clock that moves a millisecond each time it is read (so
// entries are ordered as they entered, however fast).
type fixture struct {
	env *session.Env
	q   *Service
	git *fakeGit
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	t.Setenv("PATH", t.TempDir()) // no git: nothing may need one
	env := &session.Env{
		Store: memstore.New(memstore.WithHost("queue-test")),
		Repo:  &gitrepo.Location{CommonDir: t.TempDir()},
		Actor: machine.Human,
	}
	var mu sync.Mutex
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	g := &fakeGit{tips: map[string]string{"main": "a000000000000000000000000000000000000000"}}
	q := New(env)
	q.Worktrees = g
	q.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Millisecond)
		return clock
	}
	return &fixture{env: env, q: q, git: g}
}

// task creates a task into target, blocked on a session this machine
// started (an accept's starting point).
func (f *fixture) task(t *testing.T, slug, target string) *task.Snapshot {
	t.Helper()
	sn, err := f.env.Store.Create(task.CreateSpec{Title: slug, Slug: slug, TargetBranch: target, Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []machine.Status{machine.Working, machine.Blocked} {
		sn, _, err = f.env.Store.Update(context.Background(), sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			if s.Session == nil {
				s.Session = &task.Session{ID: sessionID, Number: 1, Host: "queue-test", Turn: 1}
				s.Task.Sessions = 1
			}
			s.Task.Status = st
			return &task.Op{Name: "walk", Actor: machine.System}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := f.env.Sessions().Save(owned.Session{TaskID: sn.Task.ID, SessionID: sessionID, Agent: "exec",
		Worktree: filepath.Join(f.env.Repo.CommonDir, "wt", slug), Branch: "lazy/" + slug}); err != nil {
		t.Fatal(err)
	}
	return sn
}

func (f *fixture) setStatus(t *testing.T, id string, st machine.Status, turn int) {
	t.Helper()
	if _, _, err := f.env.Store.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Status = st
		s.Session.Turn = turn
		return &task.Op{Name: "walk", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// sessionID is every test task's session.
const sessionID = "5e55105e55105e55"

// fakeGit is the Worktree of a repository with the branches it names.
type fakeGit struct{ tips map[string]string }

func (g *fakeGit) BranchCommit(_ context.Context, _, branch string) (string, error) {
	if tip, ok := g.tips[branch]; ok {
		return tip, nil
	}
	return "", fmt.Errorf("no branch %s", branch)
}

// outcomeError is an accept's error that says why its entry left, as
// landing's gate failure, conflict and protected paths do.
type outcomeError struct{ outcome, why string }

func (o *outcomeError) Error() string                       { return "accept: " + o.why }
func (o *outcomeError) QueueOutcome() (outcome, why string) { return o.outcome, o.why }

// Entries enter in order and show in the order they entered whatever
// their state; one that moves keeps its place; each that leaves is
// logged with the outcome its error says, and what is left is listed by
// target in name order.
func TestQueueOrderAndOutcomes(t *testing.T) {
	f := newFixture(t)
	a, b, c := f.task(t, "a", "main"), f.task(t, "b", "main"), f.task(t, "c", "main")
	d := f.task(t, "d", "dev")
	ta, tb, tc := f.q.Enter(a, "main"), f.q.Enter(b, "main"), f.q.Enter(c, "main")
	td := f.q.Enter(d, "dev")
	tb.Set(Gating, "on main at a000")
	ta.Set(Landing, "")

	views := f.q.Queues()
	if len(views) != 2 || views[0].Target != "dev" || views[1].Target != "main" {
		t.Fatalf("queues: %+v", views)
	}
	var slugs, states []string
	for _, en := range views[1].Entries {
		slugs, states = append(slugs, en.Slug), append(states, en.State)
	}
	if !slices.Equal(slugs, []string{"a", "b", "c"}) || !slices.Equal(states, []string{Landing, Gating, Waiting}) {
		t.Fatalf("main's queue: %v %v", slugs, states)
	}
	if en, ok := f.q.InQueue(b.Task.ID); !ok || en.Detail != "on main at a000" || en.PID != os.Getpid() {
		t.Fatalf("b's entry: %+v %v", en, ok)
	}

	ta.LeaveWith(nil, "c0ffee")
	tb.LeaveWith(fmt.Errorf("accept b: %w", &outcomeError{LeftConflict, "conflicts in x.go"}), "ignored")
	tc.LeaveWith(errors.New("the lock\nwas lost"), "")
	td.Leave(LeftRemoved, "by hand", "")
	var nilTicket *Ticket
	nilTicket.Set(Gating, "")          // no place: nothing happens
	nilTicket.LeaveWith(nil, "c0ffee") // nor here

	views = f.q.Queues()
	main := views[1]
	if len(main.Entries) != 0 || len(main.Left) != 3 {
		t.Fatalf("main after: %+v", main)
	}
	want := []Left{
		{Slug: "a", Outcome: LeftLanded, Commit: "c0ffee"},
		{Slug: "b", Outcome: LeftConflict, Why: "conflicts in x.go"},
		{Slug: "c", Outcome: LeftError, Why: "the lock was lost"},
	}
	for i, w := range want {
		l := main.Left[i]
		if l.Slug != w.Slug || l.Outcome != w.Outcome || l.Why != w.Why || l.Commit != w.Commit || l.Target != "main" {
			t.Fatalf("left[%d] = %+v, want %+v", i, l, w)
		}
	}
}

// An entry whose accept process died leaves with an error the next time
// the queue is read; the log of entries that left keeps the newest.
func TestDeadEntriesLeaveAndTheLogIsBounded(t *testing.T) {
	f := newFixture(t)
	a := f.task(t, "a", "main")
	if err := writeEntry(f.q.activePath(a.Task.ID), Entry{Task: a.Task.ID, Slug: "a", Target: "main", State: Gating, PID: 0}); err != nil {
		t.Fatal(err)
	}
	views := f.q.Queues()
	if len(views) != 1 || len(views[0].Entries) != 0 || len(views[0].Left) != 1 || views[0].Left[0].Outcome != LeftError ||
		!strings.Contains(views[0].Left[0].Why, "ended without leaving the queue") {
		t.Fatalf("queues: %+v", views)
	}
	var log strings.Builder
	for range 2 * maxLeft {
		fmt.Fprintf(&log, "{\"task\":%q,\"slug\":\"a\",\"target\":\"main\",\"outcome\":\"landed\",\"at\":\"2026-01-02T03:04:05Z\"}\n", a.Task.ID)
	}
	if err := os.WriteFile(f.q.dir("left.jsonl"), []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f.q.Enter(a, "main").Leave(LeftLanded, "", "") // one past twice the bound: the log is rewritten
	if left := f.q.Queues()[0].Left; len(left) != maxLeft {
		t.Fatalf("%d entries left are listed, want %d", len(left), maxLeft)
	}
	if n := len(f.q.readLeft()); n != maxLeft {
		t.Fatalf("the log holds %d, want %d", n, maxLeft)
	}
}

// A task whose gate failed waits, fixing, until its agent's turn ends;
// then it is ready to re-enter (through the forge when so recorded); one
// that ended meanwhile is dropped; one taken out by hand never re-enters;
// one in flight is another process's to stop.
func TestRequeueAndDequeue(t *testing.T) {
	f := newFixture(t)
	a, b, c := f.task(t, "a", "main"), f.task(t, "b", "main"), f.task(t, "c", "main")
	for _, sn := range []*task.Snapshot{a, b, c} {
		if err := f.q.Requeue(sn, "main", 1, 2, sn == b); err != nil {
			t.Fatal(err)
		}
	}
	if ready := f.q.ReadyToRequeue(); len(ready) != 0 {
		t.Fatalf("ready before the fix turn ended: %+v", ready)
	}
	f.setStatus(t, a.Task.ID, machine.Blocked, 2)
	f.setStatus(t, b.Task.ID, machine.Blocked, 2)
	f.setStatus(t, c.Task.ID, machine.Abandoned, 2)
	ready := f.q.ReadyToRequeue()
	if len(ready) != 2 {
		t.Fatalf("ready: %+v", ready)
	}
	for _, r := range ready {
		if r.Round != 1 || r.ViaForge != (r.Task == b.Task.ID) {
			t.Fatalf("ready: %+v", ready)
		}
	}
	if _, ok := f.q.InQueue(c.Task.ID); ok {
		t.Fatal("a rejected task still waits to re-enter")
	}

	en, err := f.q.Dequeue("a")
	if err != nil || en.State != Fixing {
		t.Fatalf("dequeue: %+v %v", en, err)
	}
	if _, err := f.q.Dequeue("a"); err == nil || !strings.Contains(err.Error(), "no merge queue") {
		t.Fatalf("second dequeue: %v", err)
	}
	left := f.q.Queues()[0].Left
	if l := left[len(left)-1]; l.Outcome != LeftRemoved || l.Why != "taken out by human" {
		t.Fatalf("left: %+v", left)
	}

	t2 := f.q.ReenterThroughForge(b.Task.ID)
	if en, ok := f.q.InQueue(b.Task.ID); t2 == nil || !ok || en.State != Gating || en.Detail != "through the forge" {
		t.Fatalf("b re-entered: %+v %v", en, ok)
	}
	if _, err := f.q.Dequeue("b"); err == nil || !strings.Contains(err.Error(), "interrupt that command") {
		t.Fatalf("dequeue in flight: %v", err)
	}
	t2.LeaveThroughForge(&Forged{Commit: "c0ffee", Pending: "1 check pending"}, nil)
	left = f.q.Queues()[0].Left
	if l := left[len(left)-1]; l.Outcome != LeftLanded || l.Commit != "c0ffee" || !strings.Contains(l.Why, "1 check pending") {
		t.Fatalf("left: %+v", left)
	}
	if f.q.ReenterThroughForge(b.Task.ID) != nil {
		t.Fatal("re-entered twice")
	}
}

// fakeLander is the accept step: each accept enters the queue and leaves
// it as landing does, failing for the tasks in fail; its gate builds
// candidates as "base+slug" and passes all but the trees in failGate.
type fakeLander struct {
	q        *Service
	fail     map[string]bool // slug -> its accept fails
	conflict map[string]bool // slug -> it does not merge onto the train
	failGate map[string]bool // slug -> its speculative run fails
	passed   map[string]bool // tree -> passed before
	parallel int
	batch    int  // lazy.gate.batch; above 1, trees name their chain and a run fails on any tree holding a slug of failGate
	auto     bool // lazy.gate.batch auto: Batch says 0 (set batch above 1 too, for the trees)

	vouched map[string]string // tree -> run
	aside   []string          // slug@run of each SetAside

	order []string // the slugs of the train, in order (batch)

	mu       sync.Mutex
	accepted []string
	gates    int
	runs     []string // slug@base of each speculative run
	details  []string // the entry's detail during each speculative run
	seen     map[string]Entry
	running  int
	peak     int
}

func (l *fakeLander) Accept(_ context.Context, name string) (string, error) {
	sn, err := l.q.Env.Store.Load(name)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	l.accepted = append(l.accepted, sn.Task.Slug)
	if en, ok := l.q.InQueue(sn.Task.ID); ok {
		l.seen[sn.Task.Slug] = en
	}
	l.mu.Unlock()
	if l.fail[sn.Task.Slug] {
		// failed before it took its place: the train takes it out
		return "", &outcomeError{LeftFailed, "the gate did not pass"}
	}
	t := l.q.Enter(sn, "main")
	t.Set(Landing, "")
	t.LeaveWith(nil, "landed-"+sn.Task.Slug)
	return "landed-" + sn.Task.Slug, nil
}

func (l *fakeLander) Gate(_ context.Context, into, tip string) (Gate, error) {
	l.mu.Lock()
	l.gates++
	l.mu.Unlock()
	if into != "main" || tip != "a000000000000000000000000000000000000000" {
		return nil, fmt.Errorf("gate of %s at %s", into, tip)
	}
	return l, nil
}

func (l *fakeLander) Parallel() int { return l.parallel }

func (l *fakeLander) Batch() int {
	if l.auto {
		return 0
	}
	return max(l.batch, 1)
}

func (l *fakeLander) Vouch(tree, run string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.vouched[tree] = run
}

func (l *fakeLander) SetAside(_ context.Context, name, run, tree string) (string, bool, error) {
	sn, err := l.q.Env.Store.Load(name)
	if err != nil {
		return "", false, err
	}
	l.mu.Lock()
	l.aside = append(l.aside, sn.Task.Slug+"@"+run)
	l.mu.Unlock()
	if tree != "tree:"+chainOf(sn.Task.Slug, l) {
		return "", false, nil
	}
	return "", true, &outcomeError{LeftFailed, "the gate failed"}
}

// chainOf is the tree a batch's culprit slug is set aside on in the
// fake: the target with every other task before it that did not fail.
func chainOf(slug string, l *fakeLander) string {
	c := "a000000000000000000000000000000000000000"
	for _, s := range l.order {
		if s == slug {
			break
		}
		if !l.failGate[s] {
			c += "+" + s
		}
	}
	return c + "+" + slug
}

func (l *fakeLander) Candidate(_ context.Context, base, branch, slug string) (Candidate, error) {
	if branch != "lazy/"+slug {
		return Candidate{}, fmt.Errorf("branch %s", branch)
	}
	if l.conflict[slug] {
		return Candidate{}, &outcomeError{LeftConflict, "conflicts"}
	}
	if l.batch > 1 {
		return Candidate{Base: base, Tree: "tree:" + base + "+" + slug, Commit: base + "+" + slug}, nil
	}
	return Candidate{Base: base, Tree: "tree-" + slug, Commit: base + "+" + slug}, nil
}

func (l *fakeLander) PassedBefore(tree string) (string, bool) { return "before", l.passed[tree] }

func (l *fakeLander) Run(_ context.Context, sn *task.Snapshot, c Candidate) (string, bool, error) {
	l.mu.Lock()
	l.runs = append(l.runs, sn.Task.Slug+"@"+c.Base)
	n := len(l.runs)
	if en, ok := l.q.InQueue(sn.Task.ID); ok {
		l.details = append(l.details, en.Detail)
	}
	l.running++
	l.peak = max(l.peak, l.running)
	l.mu.Unlock()
	time.Sleep(5 * time.Millisecond) // long enough for the runs allowed at once to overlap
	l.mu.Lock()
	l.running--
	l.mu.Unlock()
	if l.batch > 1 {
		if c.Batch == nil || !strings.HasSuffix(c.Commit, "+"+sn.Task.Slug) {
			return "", false, fmt.Errorf("batch run %+v of %s", c, sn.Task.Slug)
		}
		for slug := range l.failGate {
			if strings.Contains(c.Commit+"+", "+"+slug+"+") {
				return rid(n), false, nil
			}
		}
		return rid(n), true, nil
	}
	return "run-" + sn.Task.Slug, !l.failGate[sn.Task.Slug], nil
}

// rid is the id of the fake's nth batch run.
func rid(n int) string { return fmt.Sprintf("%016d", n) }

func newLander(q *Service, parallel int) *fakeLander {
	return &fakeLander{q: q, parallel: parallel, fail: map[string]bool{}, conflict: map[string]bool{}, failGate: map[string]bool{},
		passed: map[string]bool{}, seen: map[string]Entry{}, vouched: map[string]string{}}
}

// Tasks are accepted in the order given; one that fails does not hold
// back those after it, and the entry the train put in the queue for it
// leaves with the outcome its error says.
func TestAFailingEntryDoesNotBlockTheRest(t *testing.T) {
	f := newFixture(t)
	var ids []string
	for _, s := range []string{"a", "b", "c"} {
		ids = append(ids, f.task(t, s, "main").Task.ID)
	}
	l := newLander(f.q, 2)
	l.fail["b"] = true
	res := AcceptMany(context.Background(), f.q, ids, l, true)
	if !slices.Equal(l.accepted, []string{"a", "b", "c"}) {
		t.Fatalf("accepted in order %v", l.accepted)
	}
	if len(res) != 3 || res[0].Result != "landed-a" || res[0].Err != nil || res[1].Err == nil || res[2].Result != "landed-c" || res[2].Err != nil {
		t.Fatalf("results: %+v", res)
	}
	for i, r := range res {
		if r.Name != ids[i] {
			t.Fatalf("result %d is %s", i, r.Name)
		}
	}
	q := f.q.Queues()
	if len(q) != 1 || len(q[0].Entries) != 0 || len(q[0].Left) != 3 {
		t.Fatalf("queue: %+v", q)
	}
	for i, want := range []string{LeftLanded, LeftFailed, LeftLanded} {
		if q[0].Left[i].Outcome != want {
			t.Fatalf("left[%d] = %+v, want %s", i, q[0].Left[i], want)
		}
	}
}

// A train with parallel gates is gated ahead of its accepts: each tree
// on the target plus every task ahead that merges (one that conflicts is
// left out of the chain), a tree that passed before not run again, no
// more runs at once than the gate allows; each accept finds its entry
// saying how its speculative run went, in the place it entered.
func TestATrainIsGatedSpeculativelyInOrder(t *testing.T) {
	f := newFixture(t)
	var ids []string
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		ids = append(ids, f.task(t, s, "main").Task.ID)
	}
	l := newLander(f.q, 2)
	l.conflict["b"] = true
	l.failGate["c"] = true
	l.passed["tree-e"] = true
	AcceptMany(context.Background(), f.q, ids, l, true)

	slices.Sort(l.runs)
	tip := "a000000000000000000000000000000000000000"
	if want := []string{"a@" + tip, "c@" + tip + "+a", "d@" + tip + "+a+c"}; !slices.Equal(l.runs, want) {
		t.Fatalf("speculative runs %v, want %v", l.runs, want)
	}
	if l.peak > 2 || l.peak < 1 {
		t.Fatalf("%d runs at once", l.peak)
	}
	for slug, want := range map[string]string{
		"a": "passed the gate speculatively (run run-a)",
		"b": "does not merge onto the train ahead",
		"c": "failed the gate speculatively",
		"d": "passed the gate speculatively (run run-d)",
		"e": "its tree passed the gate already",
	} {
		if en := l.seen[slug]; en.State != Waiting || !strings.HasPrefix(en.Detail, want) {
			t.Fatalf("%s's entry as its accept began: %+v, want %q", slug, en, want)
		}
	}
	if !l.seen["a"].Entered.Before(l.seen["e"].Entered) {
		t.Fatalf("a entered at %v, e at %v", l.seen["a"].Entered, l.seen["e"].Entered)
	}
}

// No train is gated ahead when the gate is skipped, allows one run at
// a time, or there is one task per target; the accepts alone gate.
func TestNoSpeculationWithoutAParallelTrain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		parallel  int
		speculate bool
		targets   []string
		gates     int
	}{
		{"skipped", 2, false, []string{"main", "main"}, 0},
		{"one at a time", 1, true, []string{"main", "main"}, 1},
		{"one per target", 2, true, []string{"main", "dev"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			var ids []string
			for i, into := range tc.targets {
				ids = append(ids, f.task(t, fmt.Sprintf("t%d", i), into).Task.ID)
			}
			l := newLander(f.q, tc.parallel)
			res := AcceptMany(context.Background(), f.q, ids, l, tc.speculate)
			if l.gates != tc.gates || len(l.runs) != 0 || len(l.seen) != 0 {
				t.Fatalf("gates %d, runs %v, entries seen %v", l.gates, l.runs, l.seen)
			}
			for _, r := range res {
				if r.Err != nil {
					t.Fatal(r.Err)
				}
			}
		})
	}
}

// With two gate runs at once (lazy.gate.parallel 2), the run confirming
// a batch's culprit and the run of the entries behind it (on what passed,
// without the culprit) start together, so the confirmation costs a run
// but no round of waiting: 6 runs, the last two side by side, and the
// same outcome as one at a time.
func TestABatchConfirmsItsCulpritBesideTheNextRound(t *testing.T) {
	f := newFixture(t)
	slugs := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var ids []string
	for _, s := range slugs {
		ids = append(ids, f.task(t, s, "main").Task.ID)
	}
	l := newLander(f.q, 2)
	l.batch, l.order = 8, slugs
	l.failGate["f"] = true
	res := AcceptMany(context.Background(), f.q, ids, l, true)
	tip := "a000000000000000000000000000000000000000"
	if len(l.runs) != 6 || !slices.Contains(l.runs[4:], "f@"+tip+"+a+b+c+d+e") || !slices.Contains(l.runs[4:], "h@"+tip+"+a+b+c+d+e+g") {
		t.Fatalf("runs %v", l.runs)
	}
	if l.peak != 2 {
		t.Fatalf("%d runs at once, want the confirmation beside the next round", l.peak)
	}
	if !slices.Equal(l.accepted, []string{"a", "b", "c", "d", "e", "g", "h"}) || len(l.aside) != 1 || !strings.HasPrefix(l.aside[0], "f@") {
		t.Fatalf("accepted %v, set aside %v", l.accepted, l.aside)
	}
	if res[5].Err == nil || res[7].Err != nil {
		t.Fatalf("results %+v", res)
	}
}

// A batched train (lazy.gate.batch 8) of 8 tasks, the sixth failing,
// costs 6 gate runs, not 8: the batch, then its halves down to the
// culprit, the culprit's tree once more to confirm it (a flaky gate must
// not send a good task back), then the rest without it. Each good task's accept finds its
// tree vouched for and its entry saying so; the culprit is set aside,
// not accepted; every decision is on the task's record and in the log
// of entries that left.
func TestABatchedTrainBisectsToTheCulprit(t *testing.T) {
	f := newFixture(t)
	slugs := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var ids []string
	for _, s := range slugs {
		ids = append(ids, f.task(t, s, "main").Task.ID)
	}
	l := newLander(f.q, 1)
	l.batch, l.order = 8, slugs
	l.failGate["f"] = true
	res := AcceptMany(context.Background(), f.q, ids, l, true)

	tip := "a000000000000000000000000000000000000000"
	want := []string{"h@" + tip + "+a+b+c+d+e+f+g", "d@" + tip + "+a+b+c", "f@" + tip + "+a+b+c+d+e",
		"e@" + tip + "+a+b+c+d", "f@" + tip + "+a+b+c+d+e", "h@" + tip + "+a+b+c+d+e+g"}
	if !slices.Equal(l.runs, want) {
		t.Fatalf("runs %v, want %v", l.runs, want)
	}
	if !slices.Equal(l.accepted, []string{"a", "b", "c", "d", "e", "g", "h"}) || !slices.Equal(l.aside, []string{"f@" + rid(5)}) {
		t.Fatalf("accepted %v, set aside %v", l.accepted, l.aside)
	}
	if res[5].Err == nil || res[6].Err != nil || res[6].Result != "landed-g" {
		t.Fatalf("results %+v", res)
	}
	// Every landing tree is vouched for by the run that passed on it or
	// on a tree holding it.
	if l.vouched["tree:"+tip+"+a"] != rid(2) || l.vouched["tree:"+tip+"+a+b+c+d"] != rid(2) || l.vouched["tree:"+tip+"+a+b+c+d+e"] != rid(4) || l.vouched["tree:"+tip+"+a+b+c+d+e+g"] != rid(6) || len(l.vouched) != 7 {
		t.Fatalf("vouched %v", l.vouched)
	}
	if en := l.seen["g"]; en.State != Waiting || !strings.HasPrefix(en.Detail, "passed in batch 1 of 1, round 1 (run "+rid(6)+"); lands") {
		t.Fatalf("g's entry: %+v", en)
	}
	sn, err := f.q.Env.Store.Load(ids[5])
	if err != nil {
		t.Fatal(err)
	}
	if b := sn.Task.Gate.Batched; b == nil || b.String() != "failed in batch 1 of 1, isolated in round 4 (run "+rid(5)+")" {
		t.Fatalf("f's record: %+v", sn.Task.Gate)
	}
	left := f.q.Queues()[0].Left
	if len(left) != 8 {
		t.Fatalf("left %+v", left)
	}
	for _, l := range left {
		switch {
		case l.Slug == "f" && (l.Outcome != LeftFailed || l.Batch == nil || l.Batch.Outcome != task.BatchIsolated || l.Batch.Round != 4):
			t.Fatalf("f left %+v", l)
		case l.Slug != "f" && (l.Outcome != LeftLanded || l.Batch == nil || l.Batch.Outcome != task.BatchPassed):
			t.Fatalf("%s left %+v", l.Slug, l)
		}
	}
}

// With lazy.gate.batch auto the train's batch size follows the target's
// recent gate outcomes (AutoBatch), and the gating entries say so: no
// history gates all 8 as one tree; 2 failures in the last 20 gate 3 at a
// time; 1 in 2 gates each on its own (no batch, no speculative run at
// lazy.gate.parallel 1).
func TestAutoBatchFollowsTheRecentFailureRate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		history []Left
		runs    int
		why     string
	}{
		{"no history", nil, 1, "lazy.gate.batch auto chose 8: no gate outcomes yet"},
		{"1 in 10", outcomes(20, 10), 3, "lazy.gate.batch auto chose 3: 2 of the last 20 failed"},
		{"1 in 2", outcomes(20, 2), 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for _, l := range tc.history {
				l.Target = "main"
				f.q.logLeft(l)
			}
			f.q.logLeft(Left{Task: "00000000000000ff", Target: "dev", Outcome: LeftFailed}) // another target's: not counted
			slugs := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
			var ids []string
			for _, s := range slugs {
				ids = append(ids, f.task(t, s, "main").Task.ID)
			}
			l := newLander(f.q, 1)
			l.batch, l.auto, l.order = 8, true, slugs
			for _, r := range AcceptMany(context.Background(), f.q, ids, l, true) {
				if r.Err != nil {
					t.Fatal(r.Err)
				}
			}
			if len(l.runs) != tc.runs {
				t.Fatalf("runs %v, want %d", l.runs, tc.runs)
			}
			for _, d := range l.details {
				if !strings.HasSuffix(d, "; "+tc.why) {
					t.Fatalf("gating detail %q, want it to end with %q", d, tc.why)
				}
			}
			if !slices.Equal(l.accepted, slugs) {
				t.Fatalf("accepted %v", l.accepted)
			}
		})
	}
}

// A culprit whose tree is not what its accept would gate (the target
// moved) is accepted as any other task.
func TestABatchCulpritOnAnotherTreeIsAccepted(t *testing.T) {
	f := newFixture(t)
	slugs := []string{"a", "b", "c"}
	var ids []string
	for _, s := range slugs {
		ids = append(ids, f.task(t, s, "main").Task.ID)
	}
	l := newLander(f.q, 1)
	l.batch, l.order = 4, []string{"x", "a", "b", "c"} // as if x landed meanwhile
	l.failGate["b"] = true
	AcceptMany(context.Background(), f.q, ids, l, true)
	if !slices.Equal(l.accepted, []string{"a", "b", "c"}) || len(l.aside) != 1 {
		t.Fatalf("accepted %v, set aside %v", l.accepted, l.aside)
	}
}
