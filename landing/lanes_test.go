package landing

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gate"
	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// TestLanesLandApartFromAFailingLane: with lanes docs and api, five tasks
// accepted together: d1 (docs, fails the gate, whose run is held until
// the test lets it end), a1 (api), d2 (docs, behind d1), s (docs and api)
// and a2 (api, behind s). a1 lands while d1's gate still runs: a failure
// in docs never holds api. d1 is given back on its one run; d2 is gated
// again without d1 and lands; s waits for both lanes and lands after d2;
// a2 lands on its lane's run, unrun again, since main moved only in docs
// meanwhile. main never holds d1's file, and each task records its lane.
func TestLanesLandApartFromAFailingLane(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	flag := filepath.Join(t.TempDir(), "release")
	r := newGateRepo(t, "if test -e docs/bad.md; then while ! test -e "+flag+"; do sleep 0.02; done; echo 'docs/bad.md is here'; exit 1; fi")
	testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "docs=docs/")
	testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "api=api/")
	// d1's file holds what a1's does: a diff that detected renames would
	// see main's move from d1 to a1 as one path, a1's, and take d2's
	// failing run on d1's tree for its own.
	d1 := r.task(t, "d1", map[string]string{"docs/bad.md": "package api\n"})
	a1 := r.task(t, "a1", map[string]string{"api/a.go": "package api\n"})
	d2 := r.task(t, "d2", map[string]string{"docs/ok.md": "ok\n"})
	s := r.task(t, "s", map[string]string{"docs/s.md": "s\n", "api/s.go": "package api\n"})
	a2 := r.task(t, "a2", map[string]string{"api/b.go": "package api\n"})
	ids := []string{d1.Task.ID, a1.Task.ID, d2.Task.ID, s.Task.ID, a2.Task.ID}
	start := r.tip(t)

	done := make(chan []Accepting, 1)
	go func() { done <- r.e.AcceptMany(ctx, ids, nil, AcceptOptions{}) }()
	awaitOnMain(t, r, "api/a.go", done)
	if got := r.load(t, d1.Task.ID); got.Task.Status != machine.Blocked || len(got.Task.Gate.Runs) != 0 {
		t.Fatalf("d1's gate should still be running when a1 lands: %s, %d runs", got.Task.Status, len(got.Task.Gate.Runs))
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	results := <-done

	var ge *GateError
	for i, res := range results {
		switch {
		case i == 0 && !errors.As(res.Err, &ge):
			t.Fatalf("d1: %v", res.Err)
		case i != 0 && res.Err != nil:
			t.Fatalf("task %d: %v", i, res.Err)
		}
	}
	// main's commits, oldest first: which task each is, and never d1's file.
	var order []string
	for _, c := range strings.Fields(testrepo.Git(t, r.dir, "log", "--reverse", "--format=%H", start+"..main")) {
		if files := testrepo.Git(t, r.dir, "ls-tree", "-r", "--name-only", c); strings.Contains(files, "docs/bad.md") {
			t.Fatalf("main moved to %s, which holds the failing docs/bad.md", c)
		}
		order = append(order, strings.TrimSpace(testrepo.Git(t, r.dir, "log", "-1", "--format=%s", c)))
	}
	at := func(title string) int {
		return slices.IndexFunc(order, func(s string) bool { return strings.Contains(s, title) })
	}
	if len(order) != 4 || at("a1") != 0 || at("d2") < 0 || at("s") < at("d2") || at("a2") < at("s") {
		t.Fatalf("main's commits %q: want a1 first, then d2, s after d2 and a2 after s", order)
	}
	runs := func(sn string) int { return len(r.load(t, sn).Task.Gate.Runs) }
	if runs(d1.Task.ID) != 1 || runs(a1.Task.ID) != 1 || runs(a2.Task.ID) != 1 {
		t.Fatalf("gate runs: d1 %d, a1 %d, a2 %d; want one each (given back, landed, landed on its lane's run)", runs(d1.Task.ID), runs(a1.Task.ID), runs(a2.Task.ID))
	}
	if got := r.load(t, a2.Task.ID); !strings.Contains(testrepo.Git(t, r.dir, "log", "-1", "--format=%B", "main"), got.Task.Gate.Runs[0].ID) {
		t.Fatalf("a2's commit does not name its lane's run %s", got.Task.Gate.Runs[0].ID)
	}
	for id, lane := range map[string]string{d1.Task.ID: "docs", a1.Task.ID: "api", d2.Task.ID: "docs", s.Task.ID: "docs+api", a2.Task.ID: "api"} {
		if got := r.load(t, id).Task.Gate.Lane; got != lane {
			t.Fatalf("%s went through lane %q, want %q", r.load(t, id).Task.Slug, got, lane)
		}
	}
	if got := r.load(t, d1.Task.ID); got.Task.Status != machine.Blocked {
		t.Fatalf("d1 is %s", got.Task.Status)
	}
	q := r.e.queue().Queues()
	if len(q) != 1 || len(q[0].Left) != 5 {
		t.Fatalf("queue: %+v", q)
	}
	for _, l := range q[0].Left {
		if l.Lane == "" {
			t.Fatalf("left without its lane: %+v", l)
		}
	}
	if sum := queue.LaneSummary(q[0]); !strings.Contains(sum, "lane docs:") || !strings.Contains(sum, "lane api:") {
		t.Fatalf("summary %q", sum)
	}
}

// TestALaneIsGitsDiffNotTheAgents: an agent that renames an api file into
// docs/ and adds a symlink docs/l pointing into api/ touches, as git
// reports it, api/x.go (the rename's old name), docs/x.go and docs/l: the
// entry spans both lanes and waits for each; nothing it says decides it.
func TestALaneIsGitsDiffNotTheAgents(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "true")
	testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "docs=docs/")
	testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "api=api/")
	seed := r.task(t, "seed", map[string]string{"api/x.go": "package api\n", "api/y.go": "package api\n"})
	if res := r.e.AcceptMany(ctx, []string{seed.Task.ID}, nil, AcceptOptions{}); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	sn := r.task(t, "docs only, it says (see docs/../api)", map[string]string{"docs/readme.md": "x\n"})
	local, err := r.e.Owned(sn)
	if err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, local.Worktree, "mv", "api/x.go", "docs/x.go")
	if err := os.Symlink("../api/y.go", filepath.Join(local.Worktree, "docs", "l")); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, local.Worktree, "add", ".")
	testrepo.Git(t, local.Worktree, "commit", "-q", "-m", "move")
	tip := r.tip(t)
	g, err := (trainLander{e: r.e}).Gate(ctx, "main", tip)
	if err != nil || g == nil {
		t.Fatal(g, err)
	}
	lg := g.(queue.LaneGate)
	paths, truncated, err := lg.Changed(ctx, tip, local.Branch)
	if err != nil || truncated {
		t.Fatal(paths, truncated, err)
	}
	slices.Sort(paths)
	if strings.Join(paths, " ") != "api/x.go docs/l docs/readme.md docs/x.go" {
		t.Fatalf("changed %q", paths)
	}
	plan := queue.PlanLanes(lg.Lanes(), []queue.LaneEntry{{Paths: paths}})
	if plan.Name(0) != "docs+api" {
		t.Fatalf("lanes %q", plan.Name(0))
	}
}

// diffGit is landingGit that also compares two trees: the paths it says
// differ.
type diffGit struct {
	*landingGit
	names []string
}

func (g *diffGit) ChangedPaths(context.Context, string, string, string) ([]string, error) {
	return g.names, nil
}

// TestALanesRunStandsOnlyForTreesThatDifferOutsideIt: a lane's verdict
// stands for the tree an accept lands only when git's diff of the two
// trees names no path the lane's entries changed and (with named lanes)
// none the lane's globs match: the target moved inside the lane (a
// commit made outside lazy, or another lane's spanning entry) means the
// lane's tree is not what lands, and it is gated anew. A git that cannot
// compare trees never lets a verdict stand for another tree.
func TestALanesRunStandsOnlyForTreesThatDifferOutsideIt(t *testing.T) {
	named := queue.LaneRun{Lane: "docs", Rule: gate.LaneRule{Named: []gate.Lane{{Name: "docs", Globs: []string{"docs/"}}, {Name: "api", Globs: []string{"api/"}}}},
		Paths: []string{"docs/a.md"}, Run: "r", Passed: true, Tree: candTree}
	byDiff := named
	byDiff.Rule = gate.LaneRule{ByDiff: true}
	for _, tc := range []struct {
		name  string
		lr    queue.LaneRun
		diff  []string
		ok    bool
		n     int
		plain bool // a git without DiffNames
	}{
		{"another lane's paths", named, []string{"api/x.go", "go.mod"}, true, 2, false},
		{"a path of the lane's globs", named, []string{"api/x.go", "docs/other.md"}, false, 0, false},
		{"a path the lane changed", named, []string{"docs/a.md"}, false, 0, false},
		{"by diff, a path no entry of the lane changed", byDiff, []string{"docs/other.md"}, true, 1, false},
		{"by diff, a path the lane changed", byDiff, []string{"api/x.go", "docs/a.md"}, false, 0, false},
		{"a git that cannot compare trees", named, []string{"api/x.go"}, false, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &landingGit{}
			e := New(&session.Env{Store: memstore.New(memstore.WithHost("seam")), Repo: &gitrepo.Location{CommonDir: t.TempDir()}, Actor: machine.Human})
			if tc.plain {
				e.Worktrees = g
			} else {
				e.Worktrees = &diffGit{landingGit: g, names: tc.diff}
			}
			n, ok := e.Gates().sameInLane(context.Background(), candTree, squashSHA, tc.lr)
			if ok != tc.ok || n != tc.n {
				t.Fatalf("sameInLane = %d, %v; want %d, %v", n, ok, tc.n, tc.ok)
			}
			if n, ok := e.Gates().sameInLane(context.Background(), candTree, candTree, tc.lr); !ok || n != 0 {
				t.Fatalf("the same tree: %d, %v", n, ok)
			}
		})
	}
}

// TestALaneRegatesWhenTheTargetMovedInsideIt: a commit made on main
// outside lazy, in api/, while api's train waits to accept a2: a2's
// lane's run is not what would land, so its accept gates it again (two
// runs) before main moves. d1, in docs, lands on its lane's one run,
// since main moved only in api/ meanwhile.
func TestALaneRegatesWhenTheTargetMovedInsideIt(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "true")
	testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "docs=docs/")
	testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "api=api/")
	a1 := r.task(t, "a1", map[string]string{"api/a.go": "package api\n"})
	a2 := r.task(t, "a2", map[string]string{"api/b.go": "package api\n"})
	d1 := r.task(t, "d1", map[string]string{"docs/x.md": "x\n"})
	narrate := func(name string) Narrator {
		if name != a2.Task.ID {
			return nil
		}
		// Under main's accept lock, as a human's commit would not be: the
		// docs lane's accept may be moving main's checkout right now.
		release, err := r.e.Recovery().lockDestination(ctx, "main", nil)
		if err != nil {
			t.Error(err)
			return nil
		}
		defer release()
		write(t, r.dir, "api/sneak.go", "package api\n")
		testrepo.Git(t, r.dir, "add", "api/sneak.go")
		testrepo.Git(t, r.dir, "commit", "-q", "-m", "outside lazy")
		return nil
	}
	for i, res := range r.e.AcceptMany(ctx, []string{a1.Task.ID, a2.Task.ID, d1.Task.ID}, narrate, AcceptOptions{}) {
		if res.Err != nil {
			t.Fatalf("task %d: %v", i, res.Err)
		}
	}
	runs := func(id string) int { return len(r.load(t, id).Task.Gate.Runs) }
	if runs(a1.Task.ID) != 1 || runs(a2.Task.ID) != 2 || runs(d1.Task.ID) != 1 {
		t.Fatalf("gate runs: a1 %d, a2 %d, d1 %d; want 1, 2 (gated again), 1", runs(a1.Task.ID), runs(a2.Task.ID), runs(d1.Task.ID))
	}
	if last := r.load(t, a2.Task.ID).Task.Gate.Runs[1]; !last.Passed || last.Speculative {
		t.Fatalf("a2's second run %+v", last)
	}
	files := testrepo.Git(t, r.dir, "ls-tree", "-r", "--name-only", "main")
	for _, f := range []string{"api/a.go", "api/b.go", "api/sneak.go", "docs/x.md"} {
		if !strings.Contains(files, f) {
			t.Fatalf("main lacks %s:\n%s", f, files)
		}
	}
}

// TestLanesByDiffLandApart: with lazy.gate.lanes diff, a task that fails
// in docs/ and one in api/ touch no common path, so they are two lanes:
// a1 lands while d1's gate still runs, and main never holds d1's file.
func TestLanesByDiffLandApart(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	flag := filepath.Join(t.TempDir(), "release")
	r := newGateRepo(t, "if test -e docs/bad.md; then while ! test -e "+flag+"; do sleep 0.02; done; exit 1; fi")
	r.config(t, "lazy.gate.lanes", "diff")
	// d1's file holds what a1's does: a diff that detected renames would
	// see main's move from d1 to a1 as one path, a1's, and take d2's
	// failing run on d1's tree for its own.
	d1 := r.task(t, "d1", map[string]string{"docs/bad.md": "package api\n"})
	a1 := r.task(t, "a1", map[string]string{"api/a.go": "package api\n"})
	done := make(chan []Accepting, 1)
	go func() { done <- r.e.AcceptMany(ctx, []string{d1.Task.ID, a1.Task.ID}, nil, AcceptOptions{}) }()
	awaitOnMain(t, r, "api/a.go", done)
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	results := <-done
	var ge *GateError
	if !errors.As(results[0].Err, &ge) || results[1].Err != nil {
		t.Fatalf("d1: %v; a1: %v", results[0].Err, results[1].Err)
	}
	if files := testrepo.Git(t, r.dir, "ls-tree", "-r", "--name-only", "main"); strings.Contains(files, "docs/bad.md") {
		t.Fatalf("main holds docs/bad.md:\n%s", files)
	}
	if d, a := r.load(t, d1.Task.ID).Task.Gate.Lane, r.load(t, a1.Task.ID).Task.Gate.Lane; d != "docs" || a != "api" {
		t.Fatalf("lanes %q and %q", d, a)
	}
}

// awaitOnMain polls until main holds file, failing if the train ends
// first or it takes a minute.
func awaitOnMain(t *testing.T, r *gateRepo, file string, done <-chan []Accepting) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(testrepo.Git(t, r.dir, "ls-tree", "-r", "--name-only", "main"), file) {
		select {
		case res := <-done:
			t.Fatalf("the train ended before %s landed: %+v", file, res)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not land while the other lane's gate ran", file)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestALanesRegateHoldsNoOtherLane: when an entry ahead in its lane did
// not land, the lane gates the next entry again on main as it is now
// outside main's accept lock: api's a2 lands while docs' d2 is gated
// again (held by the test), which an accept gating d2 under the lock
// would forbid.
func TestALanesRegateHoldsNoOtherLane(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	f1, f2, fa, regating := filepath.Join(dir, "f1"), filepath.Join(dir, "f2"), filepath.Join(dir, "fa"), filepath.Join(dir, "regating")
	wait := func(f string) string { return "while ! test -e " + f + "; do sleep 0.02; done" }
	r := newGateRepo(t, "if test -e docs/bad.md; then "+wait(f1)+"; exit 1; fi; "+
		"if test -e docs/d2.md; then touch "+regating+"; "+wait(f2)+"; fi; "+
		"if test -e api/b.go; then "+wait(fa)+"; fi")
	testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "docs=docs/")
	testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "api=api/")
	d1 := r.task(t, "d1", map[string]string{"docs/bad.md": "bad\n"})
	d2 := r.task(t, "d2", map[string]string{"docs/d2.md": "d2\n"})
	a1 := r.task(t, "a1", map[string]string{"api/a.go": "package api\n"})
	a2 := r.task(t, "a2", map[string]string{"api/b.go": "package api\n"})
	done := make(chan []Accepting, 1)
	go func() {
		done <- r.e.AcceptMany(ctx, []string{d1.Task.ID, d2.Task.ID, a1.Task.ID, a2.Task.ID}, nil, AcceptOptions{})
	}()
	touch := func(f string) {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	awaitOnMain(t, r, "api/a.go", done)
	touch(f1) // d1 fails; d2's lane run, on d1's tree, fails too
	deadline := time.Now().Add(60 * time.Second)
	for _, err := os.Stat(regating); err != nil; _, err = os.Stat(regating) {
		if time.Now().After(deadline) {
			t.Fatal("d2 was not gated again")
		}
		time.Sleep(20 * time.Millisecond)
	}
	touch(fa) // a2's run passes while d2's second run is held
	awaitOnMain(t, r, "api/b.go", done)
	touch(f2)
	results := <-done
	var ge *GateError
	if !errors.As(results[0].Err, &ge) || results[1].Err != nil || results[2].Err != nil || results[3].Err != nil {
		t.Fatalf("results %+v", results)
	}
	if n := len(r.load(t, d2.Task.ID).Task.Gate.Runs); n != 2 {
		t.Fatalf("d2 ran the gate %d times, want 2 (its lane's, then again without d1)", n)
	}
}

// TestBatchesBisectInEachLaneOnRealTrees: lanes docs and api with
// lazy.gate.batch 3, each lane's batch of three holding a culprit in the
// middle (docs/bad.md, api/bad.go). Each lane bisects its own: 5 runs a
// lane (its batch; the first two, which fail; the first, which passes;
// the first two again, confirming the culprit; the first and third),
// and no accept runs the gate again: each good task lands on its lane's
// batch run, though main moved meanwhile in the other lane (git's diff of
// the lane's tree and the tree that lands names only the other lane's
// paths). main never holds a culprit's file, each commit names a run
// that passed on a tree holding every file of its lane that it holds,
// and each culprit is given back isolated in round 3 of its lane.
func TestBatchesBisectInEachLaneOnRealTrees(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "test ! -e docs/bad.md && test ! -e api/bad.go")
	r.config(t, "lazy.gate.batch", "3")
	testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "docs=docs/")
	testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "api=api/")
	files := []string{"docs/d0.md", "api/a0.go", "docs/bad.md", "api/bad.go", "docs/d2.md", "api/a2.go"}
	var ids []string
	for _, f := range files {
		ids = append(ids, r.task(t, f, map[string]string{f: "x\n"}).Task.ID)
	}
	start := r.tip(t)
	results := r.e.AcceptMany(ctx, ids, nil, AcceptOptions{})
	var ge *GateError
	for i, res := range results {
		bad := strings.Contains(files[i], "bad")
		switch {
		case bad && (!errors.As(res.Err, &ge) || !strings.Contains(res.Err.Error(), "isolated in round 3")):
			t.Fatalf("%s: %v", files[i], res.Err)
		case !bad && res.Err != nil:
			t.Fatalf("%s: %v", files[i], res.Err)
		}
	}
	runs := map[string]task.GateRun{}
	for i, id := range ids {
		sn := r.load(t, id)
		lane := strings.Split(files[i], "/")[0]
		if b := sn.Task.Gate.Batched; b == nil || b.Lane != lane || (strings.Contains(files[i], "bad") != (b.Outcome == task.BatchIsolated)) {
			t.Fatalf("%s's record: %+v", files[i], b)
		}
		for _, run := range sn.Task.Gate.Runs {
			if run.Batch == nil || run.Batch.Lane != lane {
				t.Fatalf("%s's run %+v is not placed in its lane's batch", files[i], run)
			}
			runs[run.ID] = run
		}
	}
	if len(runs) != 10 {
		t.Fatalf("%d gate runs, want 5 in each lane", len(runs))
	}
	commits := strings.Fields(testrepo.Git(t, r.dir, "log", "--reverse", "--format=%H", start+"..main"))
	if len(commits) != 4 {
		t.Fatalf("main gained %d commits, want 4", len(commits))
	}
	for _, c := range commits {
		held := testrepo.Git(t, r.dir, "ls-tree", "-r", "--name-only", c)
		if strings.Contains(held, "bad") {
			t.Fatalf("main moved to %s, which holds a culprit:\n%s", c, held)
		}
		msg := testrepo.Git(t, r.dir, "log", "-1", "--format=%B", c)
		var run task.GateRun
		for id, rr := range runs {
			if strings.Contains(msg, id) {
				run = rr
			}
		}
		if !run.Passed {
			t.Fatalf("commit %s names no run that passed:\n%s", c, msg)
		}
		lane := run.Batch.Lane + "/"
		ran := testrepo.Git(t, r.dir, "ls-tree", "-r", "--name-only", run.Tree)
		for _, f := range strings.Fields(held) {
			if strings.HasPrefix(f, lane) && !strings.Contains(ran, f) {
				t.Fatalf("commit %s holds %s, which the tree %s its run passed on lacks", c, f, run.Tree)
			}
		}
	}
}

// TestASpanningEntryCutsALanesBatchOnRealTrees: lanes docs and api with
// lazy.gate.batch 3; s changes both. docs batches d0 on the start, s is
// accepted once both lanes reach it (its own run, on what they landed),
// then docs batches d1 and d2 (the culprit) on main as s left it: 6 runs
// (d0; a0; s; d1+d2; d1; d1+d2 again), d1 landing on its lane's run, on a
// tree holding s's files.
func TestASpanningEntryCutsALanesBatchOnRealTrees(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "test ! -e docs/bad.md")
	r.config(t, "lazy.gate.batch", "3")
	testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "docs=docs/")
	testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "api=api/")
	d0 := r.task(t, "d0", map[string]string{"docs/d0.md": "x\n"})
	a0 := r.task(t, "a0", map[string]string{"api/a0.go": "package api\n"})
	s := r.task(t, "s", map[string]string{"docs/s.md": "s\n", "api/s.go": "package api\n"})
	d1 := r.task(t, "d1", map[string]string{"docs/d1.md": "x\n"})
	d2 := r.task(t, "d2", map[string]string{"docs/bad.md": "x\n"})
	ids := []string{d0.Task.ID, a0.Task.ID, s.Task.ID, d1.Task.ID, d2.Task.ID}
	results := r.e.AcceptMany(ctx, ids, nil, AcceptOptions{})
	var ge *GateError
	for i, res := range results {
		if (i == 4) != (res.Err != nil) || i == 4 && !errors.As(res.Err, &ge) {
			t.Fatalf("task %d: %v", i, res.Err)
		}
	}
	total := 0
	for _, id := range ids {
		total += len(r.load(t, id).Task.Gate.Runs)
	}
	if total != 6 {
		t.Fatalf("%d gate runs, want 6", total)
	}
	got := r.load(t, d1.Task.ID)
	if b := got.Task.Gate.Batched; b == nil || b.Outcome != task.BatchPassed || b.Lane != "docs" {
		t.Fatalf("d1's record: %+v", got.Task.Gate)
	}
	run := got.Task.Gate.Runs[len(got.Task.Gate.Runs)-1]
	if ran := testrepo.Git(t, r.dir, "ls-tree", "-r", "--name-only", run.Tree); !strings.Contains(ran, "docs/s.md") || !strings.Contains(ran, "docs/d1.md") {
		t.Fatalf("d1's lane run %s was on a tree without s:\n%s", run.ID, ran)
	}
	if msg := testrepo.Git(t, r.dir, "log", "-1", "--format=%B", "main"); !strings.Contains(msg, run.ID) {
		t.Fatalf("d1's commit does not name its lane's run %s:\n%s", run.ID, msg)
	}
	if files := testrepo.Git(t, r.dir, "ls-tree", "-r", "--name-only", "main"); strings.Contains(files, "bad") || !strings.Contains(files, "docs/d1.md") {
		t.Fatalf("main's files:\n%s", files)
	}
}
