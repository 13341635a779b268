package reconcile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// TestSteadyPassLoadsNothing counts full snapshot loads: a pass over
// running turns of this host, working and interrupted tasks of another
// host (no local session record), and parked tasks loads no snapshot,
// however many parked tasks there are. Before, every working task was
// loaded on every pass, and every interrupted one twice.
func TestSteadyPassLoadsNothing(t *testing.T) {
	testrepo.FullLane(t)
	f := newFixture(t)
	f.create(t, 20)
	f.activate(t, 3)
	foreign := f.backlog[:2]
	f.backlog = f.backlog[2:]
	walk(t, f.store, foreign[0], machine.Working)
	walk(t, f.store, foreign[1], machine.Working, machine.Interrupted)
	r := f.reconciler()
	ctx := context.Background()
	for round, more := range []int{0, 40} {
		f.create(t, more)
		for pass := 0; pass < 2; pass++ {
			actions, err := r.Sweep(ctx, f.list(t))
			if err != nil || len(actions) != 0 {
				t.Fatalf("round %d: a steady-state pass acted: %v %v", round, actions, err)
			}
		}
		if n := r.loads.Load(); n != 0 {
			t.Fatalf("round %d: %d snapshot loads in steady-state passes, want 0", round, n)
		}
	}
}

// TestDeadSupervisorIsStillJudged is the other side of the probes: a
// working task of this host whose supervisor holds no lock is loaded and,
// past the start grace, interrupted.
func TestDeadSupervisorIsStillJudged(t *testing.T) {
	f := newFixture(t)
	f.create(t, 3)
	id := f.backlog[0]
	walk(t, f.store, id, machine.Working)
	f.own(t, id)
	r := f.reconciler()
	r.StartGrace = 1 // nanosecond: the turn is past its grace at once
	actions, err := r.Sweep(context.Background(), f.list(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(actions) != 1 || actions[0].TaskID != id || actions[0].To != machine.Interrupted {
		t.Fatalf("actions = %+v, want %s interrupted", actions, id)
	}
	if r.loads.Load() == 0 {
		t.Fatal("the dead supervisor's task was judged without loading it")
	}
}

// TestMergeSeenThroughTheMemo: a reconciler that remembered "not merged"
// for a parked task still finishes it on the pass after its branch is
// merged, because the memo is keyed by the target's tip. Pass, which
// skips the sweep while nothing it read moved, looks at no candidate on
// the passes before the merge and still sees it.
func TestMergeSeenThroughTheMemo(t *testing.T) {
	for _, pass := range []bool{false, true} {
		name := "Sweep"
		if pass {
			name = "Pass"
		}
		t.Run(name, func(t *testing.T) { testMergeSeenThroughTheMemo(t, pass) })
	}
}

func testMergeSeenThroughTheMemo(t *testing.T, pass bool) {
	f := newFixture(t)
	f.create(t, 2)
	id := f.backlog[0]
	walk(t, f.store, id, machine.Working)
	sn, err := f.store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	branch := worktree.Branch(sn.Task.Slug)
	testrepo.Git(t, f.dir, "checkout", "-q", "-b", branch)
	testrepo.Git(t, f.dir, "commit", "-q", "--allow-empty", "-m", "work")
	work := testrepo.Git(t, f.dir, "rev-parse", "HEAD")
	testrepo.Git(t, f.dir, "checkout", "-q", "main")
	if _, _, err := f.store.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
		s.AddTurn(task.Turn{Role: task.RoleAgent, Kind: "agent", Content: "done", Commits: []string{work}})
		s.Task.Status = machine.Blocked
		return &task.Op{Name: "walk", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	// Old enough that the memo trusts the stamp of the lazy/ branches.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(f.repo.CommonDir, "refs", "heads", "lazy"), old, old); err != nil {
		t.Fatal(err)
	}
	settle(t, f)
	r := f.reconciler()
	ctx := context.Background()
	sweep := func() ([]Action, error) {
		if pass {
			return r.Pass(ctx)
		}
		return r.Sweep(ctx, f.list(t))
	}
	for i := 0; i < 2; i++ {
		looked := r.mergedMem.looks.Load()
		if actions, err := sweep(); err != nil || len(actions) != 0 {
			t.Fatalf("pass %d before the merge acted: %v %v", i, actions, err)
		}
		if looked = r.mergedMem.looks.Load() - looked; pass && i > 0 && looked != 0 {
			t.Fatalf("pass %d before the merge looked at %d candidates, want 0: nothing it read moved", i, looked)
		}
	}
	if len(r.mergedMem.memo.byTarget) != 1 {
		t.Fatalf("the memo holds %d targets, want main's", len(r.mergedMem.memo.byTarget))
	}
	testrepo.Git(t, f.dir, "merge", "-q", "--no-ff", "-m", "merge outside lazy", branch)
	actions, err := sweep()
	if err != nil {
		t.Fatal(err)
	}
	if len(actions) != 2 || actions[1].To != machine.Complete {
		t.Fatalf("actions after the merge = %+v, want zombie then complete", actions)
	}
}

// TestAMergedAttemptSettlesItsGroup: an attempt whose branch was merged
// outside lazy is finished by the merged-branch sweep, and so is its
// group: it completes naming the attempt, and the other attempt is
// closed with "attempt 1 was chosen", as lazy accept GROUP --attempt 1
// would have left them.
func TestAMergedAttemptSettlesItsGroup(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	group, err := f.store.Create(task.CreateSpec{Title: "two ways", Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for k := 1; k <= 2; k++ {
		a, err := f.store.Create(task.CreateSpec{Title: "two ways", Slug: fmt.Sprintf("two-ways-a%d", k), AttemptOf: group.Task.ID, Attempt: k, Actor: machine.Human})
		if err != nil {
			t.Fatal(err)
		}
		walk(t, f.store, a.Task.ID, machine.Working, machine.Blocked)
		ids = append(ids, a.Task.ID)
	}
	if _, _, err := f.store.Update(ctx, group.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Attempts = ids
		return &task.Op{Name: "attempts", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	branch := worktree.Branch("two-ways-a1")
	testrepo.Git(t, f.dir, "checkout", "-q", "-b", branch)
	testrepo.Git(t, f.dir, "commit", "-q", "--allow-empty", "-m", "attempt 1's work")
	work := strings.TrimSpace(testrepo.Git(t, f.dir, "rev-parse", "HEAD"))
	testrepo.Git(t, f.dir, "checkout", "-q", "main")
	if _, _, err := f.store.Update(ctx, ids[0], func(s *task.Snapshot) (*task.Op, error) {
		s.AddTurn(task.Turn{Role: task.RoleAgent, Kind: "agent", Content: "done", Commits: []string{work}})
		return &task.Op{Name: "walk", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, f.dir, "merge", "-q", "--no-ff", "-m", "merge outside lazy", branch)

	actions, err := f.reconciler().Sweep(ctx, f.list(t))
	if err != nil {
		t.Fatal(err)
	}
	last := actions[len(actions)-1]
	if last.TaskID != group.Task.ID || last.From != machine.Backlog || last.To != machine.Complete || last.Why != "attempt 1 (two-ways-a1) landed" {
		t.Fatalf("actions = %+v, want the group completed last", actions)
	}
	g, _ := f.store.Load(group.Task.ID)
	if g.Task.Status != machine.Complete || g.Task.Outcome != task.OutcomeAccepted {
		t.Fatalf("group %s %s", g.Task.Status, g.Task.Outcome)
	}
	a2, _ := f.store.Load(ids[1])
	if a2.Task.Status != machine.Abandoned || a2.Task.Reason != "attempt 1 was chosen" {
		t.Fatalf("attempt 2: %s %q", a2.Task.Status, a2.Task.Reason)
	}
	// The next pass finds nothing more to settle.
	if again, err := f.reconciler().Sweep(ctx, f.list(t)); err != nil || len(again) != 0 {
		t.Fatalf("a second pass acted: %+v %v", again, err)
	}
}
