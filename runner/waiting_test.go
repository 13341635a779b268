package runner

import (
	"context"
	"testing"
	"time"

	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/pool"
)

// TestWaitingCountIsWhatARunnerCouldClaim: the figure a scaler reads
// counts a backlog task no claim holds, one under a claim lazy did not
// accept (it holds nothing), one whose lease ran out and one released;
// it leaves out a task held live, one started outside the pool, one that
// waits for another, one parked for a human and a task never pooled.
// It is the number of tasks a runner with every label would find
// eligible, so the scaler and the runners agree.
func TestWaitingCountIsWhatARunnerCouldClaim(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	claim := func(id string, c pool.Claim, problem string) {
		c.Task = id
		x.p.claims[id] = pool.Held{Claim: c, Commit: x.p.commit(), Problem: problem}
	}
	plain := x.pooled(t, "plain", PoolMark{Labels: []string{"gpu"}})
	hostile := x.pooled(t, "hostile", PoolMark{})
	claim(hostile.Task.ID, pool.Claim{Runner: "mallory"}, "its lease runs out too late")
	expired := x.pooled(t, "expired", PoolMark{})
	walk(t, x.e, expired.Task.ID, machine.Working)
	claim(expired.Task.ID, pool.Claim{Runner: "gone", Generation: 2, Expires: x.now.Add(-time.Second)}, "")
	released := x.pooled(t, "released", PoolMark{})
	claim(released.Task.ID, pool.Claim{Runner: "human", Generation: 4, Expires: x.now.Add(time.Hour), Released: true}, "")
	want := 4

	held := x.pooled(t, "held", PoolMark{})
	claim(held.Task.ID, pool.Claim{Runner: "other", Generation: 3, Expires: x.now.Add(time.Minute)}, "")
	outside := x.pooled(t, "outside", PoolMark{})
	walk(t, x.e, outside.Task.ID, machine.Working)
	first, err := x.e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "first"})
	if err != nil {
		t.Fatal(err)
	}
	after, err := x.e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "after", After: []string{first.Task.Slug}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.s.MarkForPool(ctx, after.Task.Slug, PoolMark{}); err != nil {
		t.Fatal(err)
	}
	parked := x.pooled(t, "parked", PoolMark{})
	walk(t, x.e, parked.Task.ID, machine.Working, machine.Blocked)
	claim(parked.Task.ID, pool.Claim{Runner: "gone", Generation: 1, Expires: x.now.Add(-time.Hour)}, "")

	n, err := x.s.WaitingCount(x.p.claims, x.now)
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Errorf("WaitingCount = %d, want %d (plain, hostile, expired, released)", n, want)
	}
	for _, sn := range []struct {
		name string
		id   string
		want bool
	}{
		{"plain", plain.Task.ID, true}, {"hostile", hostile.Task.ID, true}, {"expired", expired.Task.ID, true}, {"released", released.Task.ID, true},
		{"held", held.Task.ID, false}, {"outside", outside.Task.ID, false}, {"after", after.Task.ID, false}, {"parked", parked.Task.ID, false}, {"first", first.Task.ID, false},
	} {
		if got := x.s.WaitsForRunner(x.e.mustLoad(t, sn.id), x.p.claims, x.now); got != sn.want {
			t.Errorf("WaitsForRunner(%s) = %v, want %v", sn.name, got, sn.want)
		}
	}

	r := x.runner(t, Options{Labels: []string{"gpu"}})
	r.claims = x.p.claims
	if got := len(r.eligible()); got != n {
		t.Errorf("a runner with every label finds %d tasks eligible; the scaler's figure is %d", got, n)
	}

	// Once a runner holds one live, the figure drops by one.
	claim(plain.Task.ID, pool.Claim{Runner: "r1", Generation: 1, Expires: x.now.Add(time.Minute)}, "")
	if n, err := x.s.WaitingCount(x.p.claims, x.now); err != nil || n != want-1 {
		t.Errorf("after a live claim: WaitingCount = %d, %v; want %d", n, err, want-1)
	}
}
