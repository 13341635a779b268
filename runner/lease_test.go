package runner

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/pool"
	"github.com/lazyorch/lazy/task"
)

// clock is a clock the test moves while the renewer reads it.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// poll waits for cond, failing the test after 10 s.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (r *runner) renewCount() int { r.mu.Lock(); defer r.mu.Unlock(); return r.renewals }

// TestALeaseRenewsWhileTheRoundsGitWorkHangs: the round's pull hangs
// for good while the clock runs through three leases; the renewer, on
// its own ticker, keeps the claim live the whole time, and after the
// hang the round goes on with the claim still its own.
func TestALeaseRenewsWhileTheRoundsGitWorkHangs(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	sn := x.pooled(t, "long", PoolMark{})
	c := &clock{now: x.now}
	r := x.runner(t, Options{Lease: 3 * time.Minute, Poll: time.Minute, Now: c.Now, RenewEvery: time.Millisecond})
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	gen := x.p.claim(sn.Task.ID).Generation
	x.e.sync.block = make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- r.round(ctx) }()
	r.startRenewer(ctx)
	defer r.stopRenewer()
	for range 10 { // 10 minutes: over three leases
		now := c.add(time.Minute)
		n := r.renewCount()
		poll(t, "the renewer renews", func() bool { return r.renewCount() > n+1 })
		if h := x.p.claim(sn.Task.ID); !h.Live(now) || h.Runner != r.id || h.Generation != gen {
			t.Fatalf("at %s the claim is %+v: the lease ran out while the round hung", now.Format(time.TimeOnly), h)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the round ended though its pull hangs: %v", err)
	default:
	}
	close(x.e.sync.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := r.holds(sn.Task.ID); !ok {
		t.Fatalf("the runner let its task go after the hang: %v", x.said)
	}
}

// TestARenewalThatFindsItsClaimTakenEndsTheTurn: a human releases the
// claim (the next generation) while the round hangs; the renewer's next
// push is refused, the task is dropped here at once, and the released
// claim stays as the human left it.
func TestARenewalThatFindsItsClaimTakenEndsTheTurn(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	sn := x.pooled(t, "freed", PoolMark{})
	r := x.runner(t, Options{Lease: 3 * time.Minute, Poll: time.Minute, RenewEvery: time.Millisecond})
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	h := x.p.claim(sn.Task.ID)
	freed, err := x.p.Free(ctx, h, "human-host", x.now)
	if err != nil {
		t.Fatal(err)
	}
	r.startRenewer(ctx)
	defer r.stopRenewer()
	poll(t, "the renewer drops the task", func() bool { _, ok := r.holds(sn.Task.ID); return !ok })
	r.stopRenewer()
	if now := x.p.claim(sn.Task.ID); now != freed {
		t.Fatalf("the claim after the lost renewal is %+v, want the human's %+v", now, freed)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !slices.ContainsFunc(x.said, func(m string) bool { return strings.HasPrefix(m, "lost freed") }) {
		t.Fatalf("the runner did not say it lost the task: %v", x.said)
	}
}

// TestARoundsPushCrossingARenewalIsNotALoss: a renewal moves the claim
// between the round's read of it and its fenced push; the push is tried
// again on the renewed claim and lands.
func TestARoundsPushCrossingARenewalIsNotALoss(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	sn := x.pooled(t, "crossed", PoolMark{})
	r := x.runner(t, Options{Lease: 3 * time.Minute, Poll: time.Minute})
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	tries := 0
	err := r.claimPush(ctx, sn.Task.ID, false, func(h pool.Held) (pool.Held, error) {
		tries++
		if tries == 1 {
			r.renewNow(ctx) // the renewer, between the read and the push
		}
		return x.p.Fenced(ctx, h, r.o.Lease, x.now, nil)
	})
	if err != nil || tries != 2 {
		t.Fatalf("the push crossing a renewal: %v after %d tries, want it to land on the second", err, tries)
	}
	if _, ok := r.holds(sn.Task.ID); !ok {
		t.Fatal("the runner let its task go")
	}
}

// signalOnStart ends the runner's ctx as its first turn starts: SIGTERM
// mid-turn.
func (x *seam) signalOnStart(cancel context.CancelFunc) { x.l.onStart = cancel }

// TestSIGTERMDuringATurnHandsItBackAtItsGeneration: the signal comes
// while a turn runs that does not end within --grace: the runner stops
// it (parked, its work kept), pushes its record fenced by its claim,
// releases the claim at the generation it holds, tells the pool it
// stopped, takes nothing new, and returns nil.
func TestSIGTERMDuringATurnHandsItBackAtItsGeneration(t *testing.T) {
	x := newSeam(t)
	sn := x.pooled(t, "cut", PoolMark{})
	other := x.pooled(t, "other", PoolMark{})
	id := sn.Task.ID
	// An earlier holder released it at generation 4.
	x.p.claims[id] = pool.Held{Claim: pool.Claim{Task: id, Runner: "gone", Generation: 4, Released: true}, Commit: x.p.commit()}
	x.p.claims[other.Task.ID] = pool.Held{Claim: pool.Claim{Task: other.Task.ID, Runner: "gone", Generation: 1, Released: true}, Commit: x.p.commit()}
	// "cut" goes first.
	if _, _, err := x.e.Store.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Pool.Priority = 5
		return &task.Op{Name: "test", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	x.signalOnStart(cancel)
	err := x.s.RunPool(ctx, x.options(Options{Lease: 3 * time.Minute, Poll: time.Minute, MaxTasks: 2, Grace: 50 * time.Millisecond}))
	if err != nil {
		t.Fatalf("a clean hand-back failed: %v\nsaid %v", err, x.said)
	}
	h := x.p.claim(id)
	if !h.Released || h.Generation != 5 || h.Runner != "ops-test" {
		t.Fatalf("the claim after SIGTERM is %+v, want released at generation 5 by ops-test", h)
	}
	if !slices.Contains(x.l.calls, "stop "+id) {
		t.Fatalf("the turn past its grace was not stopped: %v", x.l.calls)
	}
	if st := x.e.mustLoad(t, id).Task.Status; st != machine.Blocked {
		t.Fatalf("the task is %s after the hand-back, want blocked (parked, its work kept)", st)
	}
	pushedRecord := false
	for _, ups := range x.p.pushed {
		for _, u := range ups {
			pushedRecord = pushedRecord || (u.Ref == x.e.sync.TaskRef(id) && u.New == x.e.mustLoad(t, id).Commit.String())
		}
	}
	if !pushedRecord {
		t.Fatalf("the stopped task's record was not pushed for the next runner: %v", x.p.pushed)
	}
	if slices.Contains(x.p.calls, "take "+other.Task.ID) {
		t.Fatalf("a stopping runner claimed a new task: %v", x.p.calls)
	}
	if last := x.p.calls[len(x.p.calls)-1]; last != "renew 0 stopped=true" {
		t.Fatalf("the pool was not told the runner stopped holding nothing: %v", x.p.calls)
	}
}

// TestSIGTERMLetsATurnFinishWithinItsGrace: a turn that parks within
// --grace is not stopped; it is handed back as it parked.
func TestSIGTERMLetsATurnFinishWithinItsGrace(t *testing.T) {
	x := newSeam(t)
	sn := x.pooled(t, "quick", PoolMark{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	x.signalOnStart(cancel)
	reconcile := func(_ context.Context, id string) {
		if ctx.Err() != nil && x.e.mustLoad(t, id).Task.Status == machine.Working {
			walk(t, x.e, id, machine.Blocked) // the turn ended and parked
		}
	}
	if err := x.s.RunPool(ctx, x.options(Options{Lease: 3 * time.Minute, Poll: time.Minute, Grace: time.Minute, Reconcile: reconcile})); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(x.l.calls, "stop "+sn.Task.ID) {
		t.Fatalf("a turn that finished within its grace was stopped: %v", x.l.calls)
	}
	if h := x.p.claim(sn.Task.ID); !h.Released || h.Generation != 1 {
		t.Fatalf("the claim is %+v, want released at generation 1", h)
	}
}

// TestAFencedRunnerCannotReleaseTheNewHoldersClaim: another runner took
// the task over at the next generation; the old holder's release and its
// hand-back at stop are refused, the new holder's claim stays whole,
// and the stop says what it could not hand back.
func TestAFencedRunnerCannotReleaseTheNewHoldersClaim(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	sn := x.pooled(t, "taken", PoolMark{})
	id := sn.Task.ID
	r := x.runner(t, Options{})
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	mine, _ := r.holds(id)
	theirs := pool.Held{Claim: pool.Claim{Task: id, Runner: "runner-b", Generation: mine.Generation + 1, Expires: x.now.Add(time.Hour)}, Commit: x.p.commit()}
	x.p.claims[id] = theirs
	if err := r.release(ctx, id); err == nil {
		t.Fatal("a fenced runner released the new holder's claim")
	}
	walk(t, x.e, id, machine.Blocked)
	err := r.stop()
	if err == nil || !strings.Contains(err.Error(), "taken") || !strings.Contains(err.Error(), "another runner holds its claim") {
		t.Fatalf("the stop of a fenced runner said %v, want it to name the task it could not hand back", err)
	}
	if now := x.p.claim(id); now != theirs {
		t.Fatalf("the new holder's claim became %+v, want %+v", now, theirs)
	}
	for _, ups := range x.p.pushed[1:] {
		t.Fatalf("a fenced runner pushed %v", ups)
	}
}

// TestARenewalWhoseAnswerWasLostIsNotALoss: the remote took a renewal
// whose answer never came back (a timeout), so the next push, leased on
// the claim before it, is refused; the runner reads the claim, finds it
// still its own at its generation, and goes on with it.
func TestARenewalWhoseAnswerWasLostIsNotALoss(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	sn := x.pooled(t, "unanswered", PoolMark{})
	r := x.runner(t, Options{Lease: 3 * time.Minute, Poll: time.Minute})
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	x.p.answerLost = true
	r.renewNow(ctx)
	if h, _ := r.holds(sn.Task.ID); h.Commit == x.p.claim(sn.Task.ID).Commit {
		t.Fatal("the lost answer did not leave the runner behind the remote: the test proves nothing")
	}
	n := r.renewCount()
	r.renewNow(ctx)
	if r.renewCount() != n+1 {
		t.Fatalf("the renewal after a lost answer did not land: %v\nsaid %v", x.p.calls, x.said)
	}
	walk(t, x.e, sn.Task.ID, machine.Blocked)
	if err := r.release(ctx, sn.Task.ID); err != nil {
		t.Fatalf("the release after a lost answer: %v", err)
	}
	if h := x.p.claim(sn.Task.ID); !h.Released || h.Generation != 1 {
		t.Fatalf("the claim is %+v, want released at generation 1", h)
	}
	for _, m := range x.said {
		if strings.HasPrefix(m, "lost ") {
			t.Fatalf("a lost answer was taken for a lost claim: %v", x.said)
		}
	}
}
