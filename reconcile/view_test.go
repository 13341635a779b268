package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// settle ages the files the task refs and the merged-branch sweep's refs
// are stamped by, as the passage of time would: a stamp read within the
// timestamp tick of a change is never trusted, so a pass right after one
// lists again, and runs the merged-branch sweep.
func settle(tb testing.TB, f *fixture) {
	tb.Helper()
	old := time.Now().Add(-time.Hour)
	c := f.repo.CommonDir
	for _, p := range []string{filepath.Join(c, "packed-refs"), filepath.Join(c, "refs", "lazy", "tasks"), filepath.Join(f.repo.GitDir, "HEAD"),
		filepath.Join(c, "refs", "heads", "main"), filepath.Join(c, "refs", "heads", "lazy")} {
		if err := os.Chtimes(p, old, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
			tb.Fatal(err)
		}
	}
}

// counts is a reconciler's counters at one moment.
type counts struct{ lists, scanned, visits, mergeLooks, forgeLooks, loads int64 }

func countsOf(r *Reconciler) counts {
	return counts{r.lists.Load(), r.scanned.Load(), r.visits.Load(), r.mergedMem.looks.Load(), r.forgeMem.looks.Load(), r.loads.Load()}
}

func (c counts) minus(o counts) counts {
	return counts{c.lists - o.lists, c.scanned - o.scanned, c.visits - o.visits, c.mergeLooks - o.mergeLooks, c.forgeLooks - o.forgeLooks, c.loads - o.loads}
}

// steadyPass runs one pass that must do nothing and returns what it
// counted.
func steadyPass(t *testing.T, r *Reconciler) counts {
	t.Helper()
	before := countsOf(r)
	actions, err := r.Pass(context.Background())
	if err != nil || len(actions) != 0 {
		t.Fatalf("a steady-state pass acted: %v %v", actions, err)
	}
	return countsOf(r).minus(before)
}

// TestSteadyPassVisitsOnlyLiveTasks counts what a pass looks at: while
// no task ref moves, it lists nothing and visits only the tasks whose
// status can change without a human (here three running turns and a
// working and an interrupted task of another host), however many parked
// tasks there are, and the merged-branch sweep looks at none of the
// parked ones while no ref it read moved. More parked tasks cost one
// listing, on the pass after they were created, and nothing after.
func TestSteadyPassVisitsOnlyLiveTasks(t *testing.T) {
	testrepo.FullLane(t)
	f := newFixture(t)
	f.create(t, 30)
	f.activate(t, 3)
	foreign := f.backlog[:2]
	f.backlog = f.backlog[2:]
	walk(t, f.store, foreign[0], machine.Working)
	walk(t, f.store, foreign[1], machine.Working, machine.Interrupted)
	const live = 5
	r := f.reconciler()
	for round, more := range []int{0, 200} {
		f.create(t, more)
		settle(t, f)
		first := steadyPass(t, r)
		if first.lists != 1 || first.visits != live {
			t.Fatalf("round %d: the first pass after a ref moved counted %+v, want one listing and %d visits", round, first, live)
		}
		for pass := 0; pass < 3; pass++ {
			c := steadyPass(t, r)
			if c != (counts{visits: live}) {
				t.Fatalf("round %d, steady pass %d counted %+v, want only %d visits", round, pass, c, live)
			}
		}
	}
	if n := r.loads.Load(); n != 0 {
		t.Fatalf("%d snapshot loads in steady-state passes, want 0", n)
	}
}

// TestPassPicksUpARefMovedElsewhere: a task another process sets working
// (here another Store on the same repository, which shares nothing with
// the reconciler) is judged on the next pass: its ref moved, so the pass
// lists again, and its dead supervisor is found.
func TestPassPicksUpARefMovedElsewhere(t *testing.T) {
	f := newFixture(t)
	f.create(t, 20)
	f.activate(t, 2)
	settle(t, f)
	r := f.reconciler()
	r.StartGrace = 1 // nanosecond: a turn without a supervisor is dead at once
	steadyPass(t, r)
	if c := steadyPass(t, r); c.lists != 0 {
		t.Fatalf("a steady pass listed: %+v", c)
	}
	id := f.backlog[0]
	startElsewhere(t, f, id)
	passInterrupts(t, r, id)
}

// startElsewhere sets backlog task id working through a Store of its
// own, as another lazy process would, with no supervisor: its turn is
// dead.
func startElsewhere(t *testing.T, f *fixture, id string) {
	t.Helper()
	other, err := gitrepo.Discover(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	walk(t, gitstore.Open(other, gitstore.WithHost("bench")), id, machine.Working)
	f.own(t, id)
}

// passInterrupts runs a pass that must list once and find task id's
// turn dead.
func passInterrupts(t *testing.T, r *Reconciler, id string) {
	t.Helper()
	before := countsOf(r)
	actions, err := r.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(actions) != 1 || actions[0].TaskID != id || actions[0].To != machine.Interrupted {
		t.Fatalf("actions = %+v, want %s interrupted", actions, id)
	}
	if c := countsOf(r).minus(before); c.lists != 1 {
		t.Fatalf("the pass counted %+v, want one listing", c)
	}
}

// TestPassDistrustsAStampWithinItsTick: a ref moved within the timestamp
// tick of the listing can leave the stamp as it was; a stamp that recent
// is never trusted, so the next pass lists again and sees the move. The
// tick is played by setting the directory's time back.
func TestPassDistrustsAStampWithinItsTick(t *testing.T) {
	f := newFixture(t)
	f.create(t, 5)
	r := f.reconciler()
	r.StartGrace = 1
	dir := filepath.Join(f.repo.CommonDir, "refs", "lazy", "tasks")
	recent := time.Now()
	if err := os.Chtimes(dir, recent, recent); err != nil {
		t.Fatal(err)
	}
	stamp, _, err := gitstore.RefStamp(f.repo, gitstore.TasksPrefix)
	if err != nil {
		t.Fatal(err)
	}
	steadyPass(t, r)
	id := f.backlog[0]
	walk(t, f.store, id, machine.Working)
	f.own(t, id)
	if err := os.Chtimes(dir, recent, recent); err != nil {
		t.Fatal(err)
	}
	if again, _, err := gitstore.RefStamp(f.repo, gitstore.TasksPrefix); err != nil || again != stamp {
		t.Skipf("this file system changed more than the directory's time (%v): the stamp moved anyway", err)
	}
	actions, err := r.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(actions) != 1 || actions[0].TaskID != id {
		t.Fatalf("actions = %+v, want %s interrupted: a stamp from within the tick was trusted", actions, id)
	}
}

// TestForgeSweepWalksOnlyWhenDue: on a kept view, the forge sweep walks
// the submitted tasks when a forge they follow is due, and skips them on
// the passes in between.
func TestForgeSweepWalksOnlyWhenDue(t *testing.T) {
	f := newFixture(t)
	f.create(t, 4)
	id := f.backlog[0]
	walk(t, f.store, id, machine.Working, machine.Submitted)
	if _, _, err := f.store.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Forge = &task.ForgeRecord{Kind: "github", Remote: "origin", Head: "lazy/x", Base: "main", Number: 7, URL: "https://github.com/o/r/pull/7"}
		return &task.Op{Name: "walk", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	settle(t, f)
	now := time.Now()
	r := f.reconciler()
	r.Now = func() time.Time { return now }
	r.Forge = &ForgeSync{Interval: time.Hour}
	ctx := context.Background()
	// The first pass asks the forge, which this repository lacks (no
	// remote): an error, so the next pass walks again, and then stays.
	if a, err := r.Pass(ctx); err == nil {
		t.Fatalf("a forge sync without a remote did not fail: %v %+v", a, countsOf(r))
	}
	for pass := 0; pass < 3; pass++ {
		before := countsOf(r)
		if actions, err := r.Pass(ctx); err != nil || len(actions) != 0 {
			t.Fatalf("pass %d while the forge is not due: %v %v", pass, actions, err)
		}
		c := countsOf(r).minus(before)
		if want := int64(0); pass > 0 && c.forgeLooks != want {
			t.Fatalf("pass %d while the forge is not due walked %d tasks, want %d", pass, c.forgeLooks, want)
		}
		if c.lists != 0 || c.loads != 0 {
			t.Fatalf("pass %d listed or loaded: %+v", pass, c)
		}
	}
	now = now.Add(time.Hour)
	before := countsOf(r)
	if _, err := r.Pass(ctx); err == nil {
		t.Fatal("the forge was not asked again once due")
	}
	if c := countsOf(r).minus(before); c.forgeLooks != 1 {
		t.Fatalf("the pass with the forge due walked %d tasks, want 1", c.forgeLooks)
	}
}

// TestTransientRecordIsListedAgain: a listing with a record that could
// not be read for now (an object a concurrent repack moved) is not kept
// across passes, since the record is read again though its ref stays; a
// lasting error (a corrupt record, cached by List) does not stop it.
func TestTransientRecordIsListedAgain(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("task x: %w", gitstore.ErrMissingObject), true},
		{fmt.Errorf("read: %w", fs.ErrNotExist), true},
		{errors.New("task x is corrupt: task.json is missing"), false},
	} {
		v := newView([]task.Entry{{ID: "0123456789abcdef", Err: c.err}}, 1)
		if v.transient != c.want || len(v.live) != 0 {
			t.Errorf("%v: transient = %v, live %v", c.err, v.transient, v.live)
		}
	}
}

// TestWatchedIsTheLiveAndSubmittedTasks: what a daemon needs from a
// pass's listing (its busy check and progress events) is the tasks that
// can change without a human and the submitted ones, each once.
func TestWatchedIsTheLiveAndSubmittedTasks(t *testing.T) {
	f := newFixture(t)
	f.create(t, 12)
	running := f.activate(t, 2)
	sub := f.backlog[0]
	walk(t, f.store, sub, machine.Working, machine.Submitted)
	r := f.reconciler()
	if r.Watched() != nil {
		t.Fatal("tasks watched before the first pass")
	}
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{running[0]: true, running[1]: true, sub: true}
	got := r.Watched()
	for _, e := range got {
		if !want[e.ID] {
			t.Fatalf("watched %s (%s)", e.ID, e.Status)
		}
		delete(want, e.ID)
	}
	if len(want) != 0 || len(got) != 3 {
		t.Fatalf("watched %d tasks, missing %v", len(got), want)
	}
}

// TestListingIsEveryTaskWithAGeneration: Listing hands out the whole
// kept listing; its generation stays while no ref moves and changes
// when one does.
func TestListingIsEveryTaskWithAGeneration(t *testing.T) {
	f := newFixture(t)
	f.create(t, 5)
	settle(t, f)
	r := f.reconciler()
	if e, gen := r.Listing(); e != nil || gen != 0 {
		t.Fatalf("a listing before the first pass: %d tasks, generation %d", len(e), gen)
	}
	steadyPass(t, r)
	entries, gen := r.Listing()
	if len(entries) != 5 || gen == 0 {
		t.Fatalf("%d tasks, generation %d", len(entries), gen)
	}
	steadyPass(t, r)
	if _, again := r.Listing(); again != gen {
		t.Fatalf("a steady pass changed the generation %d to %d", gen, again)
	}
	walk(t, f.store, f.backlog[0], machine.Working, machine.Blocked)
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, moved := r.Listing(); moved == gen {
		t.Fatal("a moved ref kept the generation")
	}
}

// TestPassListsAgainWhenItsListingIsOld: a ref moved without changing
// the stamp (the directory's time set back here, as a ref file rewritten
// in place would leave it) is not seen by a steady pass, but a listing
// older than keptMaxAge is read again, and then the move is judged.
func TestPassListsAgainWhenItsListingIsOld(t *testing.T) {
	f := newFixture(t)
	f.create(t, 20)
	f.activate(t, 2)
	settle(t, f)
	now := time.Now()
	r := f.reconciler()
	r.Now = func() time.Time { return now }
	r.StartGrace = 1 // nanosecond: a turn without a supervisor is dead at once
	steadyPass(t, r)
	dir := filepath.Join(f.repo.CommonDir, "refs", "lazy", "tasks")
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	id := f.backlog[0]
	startElsewhere(t, f, id)
	if err := os.Chtimes(dir, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if c := steadyPass(t, r); c.lists != 0 {
		t.Fatalf("the stamp did not move, yet the pass listed: %+v", c)
	}
	now = now.Add(keptMaxAge)
	passInterrupts(t, r, id)
}
