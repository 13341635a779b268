package queue

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gate"
	"github.com/lazyorch/lazy/task"
)

// The tests in this file run a train split into lanes (lazy.gate.lanes)
// and batched (lazy.gate.batch) on the queue's seams, as queue_test.go's
// do: the store in memory, no git on PATH, and the accept step, its gate
// and the target branch faked by laneWorld, which lands as landing does
// (a lane's verdict stands for the tree that lands only when the two
// differ in paths outside the lane) and keeps its own record of every
// run and every move of the target, against which the tests check.

// laneWorld is a target branch, its gate and its accept step. A tree is
// named by the commits merged on the start: "tree:" + start + "+a+b".
// Task slug x of lane l changes the one path l/x.
type laneWorld struct {
	t     *testing.T
	q     *Service
	start string
	rule  gate.LaneRule
	lane  map[string]string // slug -> its lane ("" for one spanning both)
	bad   map[string]bool   // slug -> every tree holding it fails
	batch int               // lazy.gate.batch; 0 for auto
	// parallel is lazy.gate.parallel (0 counts as 1).
	parallel int
	// hold, when set, is called as each gate run starts; it may wait.
	hold func(slug string, c Candidate)

	mu     sync.Mutex
	target string            // the target's tip: start + the slugs landed
	flaky  map[string]int    // tree -> how many of its next runs fail whatever it holds
	marks  map[string]string // tree -> the run this machine marked it passed by
	runs   []worldRun
	moves  []worldMove
	landed map[string]int
	aside  []string
	order  []string // the slug of each accept that ended, in order
}

// worldRun is one gate run: on tree, for slug's task, in lane (the
// candidate's batch says which), and how it ended.
type worldRun struct {
	id, slug, tree, lane string
	batch                *task.GateBatch
	passed               bool
}

// worldMove is one move of the target: to the tree of commit to, landing
// slug, on the strength of the run named on tree (the lane's, or its own).
type worldMove struct {
	slug, to, run, tree string
}

func newLaneWorld(t *testing.T, f *fixture, lanes map[string]string, bad ...string) *laneWorld {
	w := &laneWorld{t: t, q: f.q, start: "a000000000000000000000000000000000000000", lane: lanes, bad: map[string]bool{},
		flaky: map[string]int{}, marks: map[string]string{}, landed: map[string]int{},
		rule: gate.LaneRule{Named: []gate.Lane{{Name: "docs", Globs: []string{"docs/"}}, {Name: "api", Globs: []string{"api/"}}}}}
	w.target = w.start
	for _, b := range bad {
		w.bad[b] = true
	}
	f.q.Worktrees = w
	return w
}

// slugs are the tasks a tree or commit holds, in the order merged.
func (w *laneWorld) slugs(tree string) []string {
	_, rest, _ := strings.Cut(strings.TrimPrefix(tree, "tree:"), "+")
	if rest == "" {
		return nil
	}
	return strings.Split(rest, "+")
}

func (w *laneWorld) paths(slug string) []string {
	if l := w.lane[slug]; l != "" {
		return []string{l + "/" + slug}
	}
	return []string{"docs/" + slug, "api/" + slug}
}

func (w *laneWorld) BranchCommit(_ context.Context, _, branch string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if branch != "main" {
		return "", fmt.Errorf("no branch %s", branch)
	}
	return w.target, nil
}

func (w *laneWorld) Gate(_ context.Context, into, tip string) (Gate, error) {
	if into != "main" || tip != w.start {
		return nil, fmt.Errorf("gate of %s at %s", into, tip)
	}
	return w, nil
}

func (w *laneWorld) Parallel() int { return max(1, w.parallel) }
func (w *laneWorld) Batch() int    { return w.batch }
func (w *laneWorld) Lanes() gate.LaneRule {
	return w.rule
}

func (w *laneWorld) Changed(_ context.Context, _, branch string) ([]string, bool, error) {
	return w.paths(strings.TrimPrefix(branch, "lazy/")), false, nil
}

func (w *laneWorld) Vouch(tree, run string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.marks[tree]; !ok {
		w.marks[tree] = run
	}
}

func (w *laneWorld) Candidate(_ context.Context, base, branch, slug string) (Candidate, error) {
	if branch != "lazy/"+slug {
		return Candidate{}, fmt.Errorf("branch %s", branch)
	}
	return Candidate{Base: base, Tree: "tree:" + base + "+" + slug, Commit: base + "+" + slug}, nil
}

func (w *laneWorld) PassedBefore(tree string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id, ok := w.marks[tree]
	return id, ok
}

// Run is the gate: a tree holding a bad slug fails, as does one with a
// flaky failure left; a passing tree is marked.
func (w *laneWorld) Run(_ context.Context, sn *Snapshot, c Candidate) (string, bool, error) {
	if w.hold != nil {
		w.hold(sn.Task.Slug, c)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	passed := true
	for _, s := range w.slugs(c.Tree) {
		passed = passed && !w.bad[s]
	}
	if passed && w.flaky[c.Tree] > 0 {
		w.flaky[c.Tree]--
		passed = false
	}
	id := rid(len(w.runs) + 1)
	lane := ""
	if c.Batch != nil {
		lane = c.Batch.Lane
	}
	w.runs = append(w.runs, worldRun{id: id, slug: sn.Task.Slug, tree: c.Tree, lane: lane, batch: c.Batch, passed: passed})
	if passed {
		w.marks[c.Tree] = id
	}
	return id, passed, nil
}

// sameInLane is landing's rule: the trees differ only in tasks of other
// lanes, none of whose paths the lane's entries changed.
func (w *laneWorld) sameInLane(gated, cand string, lr LaneRun) bool {
	a, b := w.slugs(gated), w.slugs(cand)
	for _, s := range append(slices.Clone(a), b...) {
		if slices.Contains(a, s) && slices.Contains(b, s) {
			continue
		}
		for _, p := range w.paths(s) {
			if slices.Contains(lr.Paths, p) || lr.Rule.LaneOf(p) == lr.Lane {
				return false
			}
		}
	}
	return true
}

// land moves the target to the target plus slug's task, and enters and
// leaves the queue as an accept that landed does.
func (w *laneWorld) land(name, slug, run, tree string) (string, error) {
	sn, err := w.q.Env.Store.Load(name)
	if err != nil {
		return "", err
	}
	w.target += "+" + slug
	w.moves = append(w.moves, worldMove{slug: slug, to: w.target, run: run, tree: tree})
	w.landed[slug]++
	w.order = append(w.order, slug)
	tk := w.q.Enter(sn, "main")
	tk.Set(Landing, "")
	tk.LeaveWith(nil, "landed-"+slug)
	return "landed-" + slug, nil
}

// Accept gates the task's tree on the target now, unless it passed
// before, and lands it if it passed.
func (w *laneWorld) Accept(ctx context.Context, name string) (string, error) {
	return w.AcceptInLane(ctx, name, LaneRun{})
}

// AcceptInLane is landing's: a lane's failing run on a tree that stands
// for this one gives the task back unrun; a passing one marked on this
// machine lands it unrun; else its tree is gated now. The target moves
// under one lock, as landing's accept lock.
func (w *laneWorld) AcceptInLane(ctx context.Context, name string, lr LaneRun) (string, error) {
	sn, err := w.q.Env.Store.Load(name)
	if err != nil {
		return "", err
	}
	slug := sn.Task.Slug
	w.mu.Lock()
	cand := "tree:" + w.target + "+" + slug
	switch {
	case lr.Run != "" && !lr.Passed && w.sameInLane(lr.Tree, cand, lr):
		for _, r := range w.runs {
			if r.id == lr.Run && (r.slug != slug || r.tree != lr.Tree || r.passed) {
				w.mu.Unlock()
				w.t.Errorf("%s was given back on run %s, which is %+v", slug, lr.Run, r)
				return "", &outcomeError{LeftFailed, "the gate failed"}
			}
		}
		w.aside = append(w.aside, slug)
		w.order = append(w.order, slug)
		w.mu.Unlock()
		return "", &outcomeError{LeftFailed, "the gate failed in its lane"}
	case lr.Run != "" && lr.Passed && w.marks[lr.Tree] == lr.Run && w.sameInLane(lr.Tree, cand, lr):
		defer w.mu.Unlock()
		return w.land(name, slug, lr.Run, lr.Tree)
	}
	if id, ok := w.marks[cand]; ok {
		defer w.mu.Unlock()
		return w.land(name, slug, id, cand)
	}
	w.mu.Unlock()
	id, passed, err := w.Run(ctx, sn, Candidate{Base: w.target, Tree: cand})
	if err != nil || !passed {
		w.mu.Lock()
		w.order = append(w.order, slug)
		w.mu.Unlock()
		return "", &outcomeError{LeftFailed, "the gate failed"}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if "tree:"+w.target+"+"+slug != cand {
		w.t.Errorf("the target moved under %s's accept", slug)
	}
	return w.land(name, slug, id, cand)
}

func (w *laneWorld) SetAside(context.Context, string, string, string) (string, bool, error) {
	w.t.Error("a laned train set a task aside outside its lane")
	return "", false, nil
}

// Snapshot is task.Snapshot, named short for the fake's signature.
type Snapshot = task.Snapshot

// checkMoves holds the target to what a train may do: each move lands
// one task on the target as it was, onto a tree holding no culprit,
// vouched for by a run that passed on a tree holding every task of the
// lane the new tree holds, differing from it only in tasks of other
// lanes; and each good task landed exactly once, no culprit ever.
func (w *laneWorld) checkMoves(t *testing.T, all []string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.moves {
		held := w.slugs(m.to)
		var run *worldRun
		for i := range w.runs {
			if w.runs[i].id == m.run {
				run = &w.runs[i]
			}
		}
		if run == nil || !run.passed {
			t.Fatalf("the target moved to %s (landing %s) on run %s, which did not pass: %+v", m.to, m.slug, m.run, run)
		}
		ran := w.slugs(run.tree)
		for _, s := range held {
			if w.bad[s] {
				t.Fatalf("the target moved to %s, which holds the culprit %s", m.to, s)
			}
			inLane := w.lane[s] == w.lane[m.slug] || w.lane[s] == "" || w.lane[m.slug] == ""
			if inLane && !slices.Contains(ran, s) {
				t.Fatalf("the target moved to %s (landing %s) on run %s on %s, which lacks %s of the lane", m.to, m.slug, m.run, run.tree, s)
			}
		}
		for _, s := range ran {
			if !slices.Contains(held, s) && (w.lane[s] != w.lane[m.slug] || w.bad[s]) {
				t.Fatalf("the target moved to %s (landing %s) on run %s on %s, which holds %s", m.to, m.slug, m.run, run.tree, s)
			}
		}
	}
	for _, s := range all {
		want := 1
		if w.bad[s] {
			want = 0
		}
		if w.landed[s] != want {
			t.Fatalf("%s landed %d times, want %d (landed: %v)", s, w.landed[s], want, w.landed)
		}
	}
}

// runsIn counts the gate runs of each lane.
func (w *laneWorld) runsIn() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := map[string]int{}
	for _, r := range w.runs {
		n[r.lane]++
	}
	return n
}

// await waits, polling, until cond holds; false after 10 s.
func await(cond func() bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// TestBatchesBisectInEachLane: lanes docs and api, lazy.gate.batch 4,
// each lane's batch holding one culprit (d2, a1), and api's gate failing
// once at random on the tree of a0 alone. Each lane batches and bisects
// its own entries: docs in 5 runs (its batch; d0+d1, which pass; d0..d2,
// which isolate d2; d0..d2 again to confirm it; d0+d1+d3), api in 9 (the
// flaky failure isolates a0, whose confirming run passes, so a0 lands and
// a new search isolates a1). docs' bisection waits, after its batch
// failed, until api has landed everything: a failure in docs never holds
// api. Every culprit is isolated within ceil(log2 4)+1 rounds of its
// lane, each good task lands once, the target moves only to trees that
// passed in their lane, and every decision names its lane. With
// lazy.gate.parallel 2 the outcome is the same, each confirming run
// started beside the run of the entries behind it: api makes one run
// more (the one beside a0's confirmation, which passed, so a new search
// starts on a0 instead), docs none.
func TestBatchesBisectInEachLane(t *testing.T) {
	for _, tc := range []struct{ parallel, docs, api int }{{1, 5, 9}, {2, 5, 10}} {
		t.Run(fmt.Sprintf("parallel %d", tc.parallel), func(t *testing.T) { batchesBisectInEachLane(t, tc.parallel, tc.docs, tc.api) })
	}
}

func batchesBisectInEachLane(t *testing.T, parallel, docsRuns, apiRuns int) {
	f := newFixture(t)
	docs, api := []string{"d0", "d1", "d2", "d3"}, []string{"a0", "a1", "a2", "a3"}
	lanes := map[string]string{}
	var all, ids []string
	for i := range docs {
		lanes[docs[i]], lanes[api[i]] = "docs", "api"
		all = append(all, docs[i], api[i])
	}
	for _, s := range all {
		ids = append(ids, f.task(t, s, "main").Task.ID)
	}
	w := newLaneWorld(t, f, lanes, "d2", "a1")
	w.batch, w.parallel = 4, parallel
	w.flaky["tree:"+w.start+"+a0"] = 1
	var details sync.Map // slug -> its entry's detail during its last run
	var docsFailed, apiDone, docsHeld bool
	w.hold = func(slug string, c Candidate) {
		if en, ok := f.q.InQueue(f.id(t, slug)); ok {
			details.Store(slug, en.Detail)
		}
		w.mu.Lock()
		docsRuns := 0
		for _, r := range w.runs {
			if r.lane == "docs" {
				docsRuns++
			}
		}
		w.mu.Unlock()
		switch {
		case lanes[slug] == "api" && len(w.slugs(c.Tree)) == 4 && c.Batch.Round == 1 && c.Batch.Part == 4:
			// api's first run waits for docs' batch to have failed.
			if !await(func() bool { w.mu.Lock(); defer w.mu.Unlock(); return docsFailed }) {
				t.Error("docs' batch did not fail while api waited")
			}
		case lanes[slug] == "docs" && docsRuns == 1:
			w.mu.Lock()
			docsFailed, docsHeld = true, true
			w.mu.Unlock()
			// docs' bisection goes on only once api has landed all it can.
			if !await(func() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.landed["a3"] == 1 }) {
				t.Error("api did not land while docs bisected: a failure in docs held api")
			}
			w.mu.Lock()
			apiDone = true
			w.mu.Unlock()
		}
	}
	res := AcceptMany(context.Background(), f.q, ids, w, true)
	if !docsHeld || !apiDone {
		t.Fatalf("docs held %v, api done %v", docsHeld, apiDone)
	}
	for i, r := range res {
		if bad := all[i] == "d2" || all[i] == "a1"; bad != (r.Err != nil) {
			t.Fatalf("%s: %v", all[i], r.Err)
		}
	}
	if n := w.runsIn(); n["docs"] != docsRuns || n["api"] != apiRuns || len(n) != 2 {
		t.Fatalf("gate runs by lane %v, want docs %d, api %d (and none outside a lane's batch)", n, docsRuns, apiRuns)
	}
	w.checkMoves(t, all)
	// api's tasks all ended before docs' first landed.
	for _, s := range api {
		if slices.Index(w.order, s) > slices.Index(w.order, "d0") {
			t.Fatalf("accepts ended in order %v: docs held api", w.order)
		}
	}
	bound := bits.Len(uint(4-1)) + 1
	for _, id := range ids {
		sn, err := f.q.Env.Store.Load(id)
		if err != nil {
			t.Fatal(err)
		}
		s, b := sn.Task.Slug, sn.Task.Gate.Batched
		if b == nil || b.Lane != lanes[s] || sn.Task.Gate.Lane != lanes[s] {
			t.Fatalf("%s's record: %+v", s, sn.Task.Gate)
		}
		switch {
		case w.bad[s] && (b.Outcome != task.BatchIsolated || b.Round > bound || b.Round != 3):
			t.Fatalf("%s's record: %+v, want isolated in round 3 (bound %d)", s, b, bound)
		case !w.bad[s] && b.Outcome != task.BatchPassed:
			t.Fatalf("%s's record: %+v", s, b)
		}
	}
	d2, err := f.q.Env.Store.Load(f.id(t, "d2"))
	if err != nil {
		t.Fatal(err)
	}
	if got := d2.Task.Gate.Batched.String(); !strings.HasPrefix(got, "failed in batch 1 of 1 of lane docs, isolated in round 3 (run ") {
		t.Fatalf("d2's outcome in words: %q", got)
	}
	if d, _ := details.Load("d3"); d == nil || !strings.HasPrefix(d.(string), "in batch 1 of 1 of lane docs, round ") {
		t.Fatalf("d3's entry while gated: %v", d)
	}
	for _, r := range w.runs {
		if r.batch == nil || r.batch.Lane != lanes[r.slug] {
			t.Fatalf("run %+v is not placed in its lane's batch", r)
		}
	}
	left := f.q.Queues()[0].Left
	if len(left) != 8 {
		t.Fatalf("left %+v", left)
	}
	for _, l := range left {
		if l.Lane != lanes[l.Slug] || l.Batch == nil || l.Batch.Lane != lanes[l.Slug] {
			t.Fatalf("%s left %+v", l.Slug, l)
		}
	}
}

// id is the task id of slug.
func (f *fixture) id(t *testing.T, slug string) string {
	t.Helper()
	id, err := f.env.Store.Resolve(slug)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestAnEntrySpanningLanesCutsTheLanesBatch: with lazy.gate.batch 4 and
// lanes docs and api, s spans both. docs' d0 is bisected on the start
// (one run), s is accepted once both lanes reach it, gated on what they
// landed, and docs' entries behind it (d1, and d2 the culprit) are
// bisected on the target as s left it, so d1's tree holds s and lands on
// its lane's run: 4 runs in docs (d0; then d1+d2, d1, and d1+d2 again
// to confirm d2), 1 in api, 1 for s.
func TestAnEntrySpanningLanesCutsTheLanesBatch(t *testing.T) {
	f := newFixture(t)
	all := []string{"d0", "a0", "s", "d1", "d2"}
	lanes := map[string]string{"d0": "docs", "a0": "api", "s": "", "d1": "docs", "d2": "docs"}
	var ids []string
	for _, s := range all {
		ids = append(ids, f.task(t, s, "main").Task.ID)
	}
	w := newLaneWorld(t, f, lanes, "d2")
	w.batch = 4
	res := AcceptMany(context.Background(), f.q, ids, w, true)
	for i, r := range res {
		if (all[i] == "d2") != (r.Err != nil) {
			t.Fatalf("%s: %v", all[i], r.Err)
		}
	}
	w.checkMoves(t, all)
	if n := w.runsIn(); n["docs"] != 4 || n["api"] != 1 || n[""] != 1 {
		t.Fatalf("gate runs by lane %v, want docs 4, api 1, one for s", n)
	}
	var d1 *worldMove
	for i := range w.moves {
		if w.moves[i].slug == "d1" {
			d1 = &w.moves[i]
		}
	}
	if d1 == nil || !slices.Contains(w.slugs(d1.tree), "s") || slices.Index(w.order, "s") > slices.Index(w.order, "d1") {
		t.Fatalf("d1 landed %+v, order %v: want it after s, on a lane tree holding s", d1, w.order)
	}
}

// TestAutoBatchesEachLaneByItsOwnHistory: with lazy.gate.batch auto,
// api's own last 10 gate outcomes (1 in 2 failed) gate each of its
// entries on its own, as a lane without batching does, while docs, with
// no history of its own, follows the target's (none of the last 20
// failed) and gates its three entries as one tree.
func TestAutoBatchesEachLaneByItsOwnHistory(t *testing.T) {
	f := newFixture(t)
	history := outcomes(10, 2)
	for i := range history {
		history[i].Lane = "api"
	}
	history = append(history, outcomes(20, 0)...)
	for _, l := range history {
		l.Target = "main"
		f.q.logLeft(l)
	}
	all := []string{"d0", "a0", "d1", "a1", "d2"}
	lanes := map[string]string{"d0": "docs", "d1": "docs", "d2": "docs", "a0": "api", "a1": "api"}
	var ids []string
	for _, s := range all {
		ids = append(ids, f.task(t, s, "main").Task.ID)
	}
	w := newLaneWorld(t, f, lanes)
	var mu sync.Mutex
	details := map[string]string{}
	w.hold = func(slug string, _ Candidate) {
		if en, ok := f.q.InQueue(f.id(t, slug)); ok {
			mu.Lock()
			details[slug] = en.Detail
			mu.Unlock()
		}
	}
	for _, r := range AcceptMany(context.Background(), f.q, ids, w, true) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	w.checkMoves(t, all)
	if n := w.runsIn(); n["docs"] != 1 || n[""] != 2 || len(n) != 2 {
		t.Fatalf("gate runs by lane %v: want docs' one batch, api's two entries on their own", n)
	}
	if d := details["d2"]; !strings.HasSuffix(d, "; lazy.gate.batch auto chose 3 in lane docs (from the target's outcomes: the lane has fewer than 5 of its own): none of the last 20 failed, 3 waiting") {
		t.Fatalf("d2's entry while gated: %q", d)
	}
	if d := details["a1"]; !strings.HasPrefix(d, "speculatively in lane api") {
		t.Fatalf("a1's entry while gated: %q", d)
	}
}
