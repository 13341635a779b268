package landing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gate"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/task"
)

// TestABatchOfFiveBisectsToTheCulpritAndLandsTheRest: with
// lazy.gate.batch 5, five tasks accepted together, the fourth failing the
// gate, cost 5 gate runs (the batch; the first three, which pass; the
// first four, which fail and isolate the fourth; the first four again,
// which confirm it; the first three and the fifth, which pass). The four good tasks land in order,
// each commit naming a run that passed on a tree holding it; main never
// gains the culprit's file; the culprit stays blocked for a human with
// the failure and the words of its isolation, and lazy queue's log says
// the same.
func TestABatchOfFiveBisectsToTheCulpritAndLandsTheRest(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	gate := "test ! -e bad.txt"
	r := newGateRepo(t, gate)
	r.config(t, "lazy.gate.batch", "5")
	var ids []string
	for i := range 5 {
		name := fmt.Sprintf("t%d.txt", i)
		if i == 3 {
			name = "bad.txt"
		}
		sn := r.task(t, fmt.Sprintf("task %d", i), map[string]string{name: "x\n"})
		ids = append(ids, sn.Task.ID)
	}
	start := r.tip(t)
	results := r.e.AcceptMany(ctx, ids, nil, AcceptOptions{})
	var ge *GateError
	for i, res := range results {
		switch {
		case i == 3 && (!errors.As(res.Err, &ge) || ge.Batch == nil || !strings.Contains(res.Err.Error(), "failed in batch 1 of 1, isolated in round 3")):
			t.Fatalf("culprit: %v", res.Err)
		case i != 3 && res.Err != nil:
			t.Fatalf("task %d: %v", i, res.Err)
		}
	}
	log := strings.Fields(testrepo.Git(t, r.dir, "log", "--reverse", "--format=%T", start+"..main"))
	if len(log) != 4 {
		t.Fatalf("main gained %d commits, want 4", len(log))
	}
	for _, tree := range log {
		if _, ok := r.e.Gates().passedBefore(tree, []string{gate}); !ok {
			t.Fatalf("main moved to tree %s, which no run vouched for", tree)
		}
	}
	if out := testrepo.Git(t, r.dir, "ls-tree", "--name-only", "main"); strings.Contains(out, "bad.txt") || !strings.Contains(out, "t4.txt") {
		t.Fatalf("main's files:\n%s", out)
	}
	runs := 0
	for i, id := range ids {
		sn := r.load(t, id)
		runs += len(sn.Task.Gate.Runs)
		b := sn.Task.Gate.Batched
		switch {
		case i == 3 && (sn.Task.Status != machine.Blocked || b == nil || b.Outcome != task.BatchIsolated || b.Round != 3):
			t.Fatalf("the culprit is %s, %+v", sn.Task.Status, b)
		case i != 3 && (sn.Task.Status != machine.Complete || b == nil || b.Outcome != task.BatchPassed):
			t.Fatalf("task %d is %s, %+v", i, sn.Task.Status, b)
		}
		for _, run := range sn.Task.Gate.Runs {
			if run.Batch == nil || run.Batch.Of != 1 {
				t.Fatalf("task %d's run %+v is not placed in its batch", i, run)
			}
		}
	}
	if runs != 5 {
		t.Fatalf("%d gate runs, want 5", runs)
	}
	q := r.e.queue().Queues()
	if len(q) != 1 || len(q[0].Left) != 5 {
		t.Fatalf("queue: %+v", q)
	}
	for i, l := range q[0].Left {
		want := queue.LeftLanded
		if i == 3 {
			want = queue.LeftFailed
		}
		if l.Outcome != want || l.Batch == nil {
			t.Fatalf("left[%d] = %+v", i, l)
		}
	}
}

// TestABatchCulpritGoesBackToItsAgent: with lazy.gate.autoFix, the
// culprit a batch isolated is handed to its agent with the failure, as a
// failed accept is, and waits in the queue as fixing; the others land.
func TestABatchCulpritGoesBackToItsAgent(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "test ! -e bad.txt || { echo 'bad.txt is here'; exit 1; }")
	r.config(t, "lazy.gate.batch", "3")
	r.config(t, "lazy.gate.autoFix", "true")
	var launched []string
	r.e.Launch = func(id string) error { launched = append(launched, id); return nil }
	a := r.task(t, "task a", map[string]string{"a.txt": "a\n"})
	b := r.task(t, "task b", map[string]string{"bad.txt": "b\n"})
	c := r.task(t, "task c", map[string]string{"c.txt": "c\n"})
	results := r.e.AcceptMany(ctx, []string{a.Task.ID, b.Task.ID, c.Task.ID}, nil, AcceptOptions{})
	var ge *GateError
	if results[0].Err != nil || results[2].Err != nil || !errors.As(results[1].Err, &ge) || !ge.Fixing || ge.Batch == nil {
		t.Fatalf("a: %v; b: %v; c: %v", results[0].Err, results[1].Err, results[2].Err)
	}
	got := r.load(t, b.Task.ID)
	if got.Task.Status != machine.Working || len(launched) != 1 || launched[0] != b.Task.ID || got.Task.Gate.FixRounds != 1 {
		t.Fatalf("b is %s, launched %v, gate %+v", got.Task.Status, launched, got.Task.Gate)
	}
	turns, err := r.e.Store.Turns(got)
	if err != nil {
		t.Fatal(err)
	}
	if fb := turns[len(turns)-1].Content; !strings.Contains(fb, "bad.txt is here") {
		t.Fatalf("feedback: %q", fb)
	}
	if en, ok := r.e.queue().InQueue(b.Task.ID); !ok || en.State != queue.Fixing {
		t.Fatalf("b's entry: %+v %v", en, ok)
	}
	if out := testrepo.Git(t, r.dir, "ls-tree", "--name-only", "main"); strings.Contains(out, "bad.txt") || !strings.Contains(out, "c.txt") {
		t.Fatalf("main's files:\n%s", out)
	}
}

// lazy.gate.batch auto reaches the queue as 0, which it resolves from
// the target's recent outcomes (queue.AutoBatch); a number as itself.
func TestTrainGateBatchSaysAutoAsZero(t *testing.T) {
	auto := trainGate{gp: &gatePlan{Settings: gate.Settings{Batch: 1, BatchAuto: true}}}
	eight := trainGate{gp: &gatePlan{Settings: gate.Settings{Batch: 8}}}
	if auto.Batch() != 0 || eight.Batch() != 8 {
		t.Fatalf("auto %d, 8 %d", auto.Batch(), eight.Batch())
	}
}
