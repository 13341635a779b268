package runner

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

	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/pool"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// The tests in this file hold the runner's decisions on its seams alone:
// the task store in memory, the claims on the remote faked (fakePool),
// the sessions' lifecycle recorded (fakeLifecycle), and no git on PATH.

// fakePool is the claims on a remote, with package pool's rules for
// generations and leases, and a record of each call.
type fakePool struct {
	// mu: the renewer calls from a goroutine of its own.
	mu     sync.Mutex
	claims map[string]pool.Held
	probs  []pool.Problem
	calls  []string
	// takeErr, fencedErr and renewErr are what those calls fail with.
	takeErr, fencedErr, renewErr error
	pushed                       [][]pool.Update
	commits                      int
	// answerLost makes the next renewal land on the remote but fail here,
	// as a push cut off by its timeout after the remote took it.
	answerLost bool
	// onRelease, when set, runs at each release before it is answered
	// (a slow remote).
	onRelease func()
	// renewCtxErr is each renewal's context's error as the call began.
	renewCtxErr []error
}

func newFakePool() *fakePool { return &fakePool{claims: map[string]pool.Held{}} }

func (p *fakePool) commit() string { p.commits++; return fmt.Sprintf("%040x", p.commits) }

func (p *fakePool) Fetch(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "fetch")
	return nil
}

func (p *fakePool) Claims(context.Context, time.Time) (map[string]pool.Held, []pool.Problem, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps(p.claims), p.probs, nil
}

func (p *fakePool) Current(_ context.Context, reader string, _ time.Time) (map[string]pool.Held, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "current "+reader)
	return maps(p.claims), nil
}

// claim is the claim of id on the remote now.
func (p *fakePool) claim(id string) pool.Held {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.claims[id]
}

func maps(m map[string]pool.Held) map[string]pool.Held {
	out := make(map[string]pool.Held, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (p *fakePool) Take(_ context.Context, id, runner string, prev *pool.Held, lease time.Duration, now time.Time) (pool.Held, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "take "+id)
	if p.takeErr != nil {
		return pool.Held{}, p.takeErr
	}
	c := pool.Claim{Task: id, Runner: runner, Generation: 1, Expires: now.Add(lease), ClaimedAt: now, RenewedAt: now}
	if prev != nil {
		g, err := pool.NextGeneration(prev.Generation)
		if err != nil {
			return pool.Held{}, err
		}
		c.Generation = g
	}
	h := pool.Held{Claim: c, Commit: p.commit()}
	p.claims[id] = h
	return h, nil
}

func (p *fakePool) Renew(ctx context.Context, held []pool.Held, rn pool.Runner, lease time.Duration, now time.Time) ([]pool.Held, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.renewCtxErr = append(p.renewCtxErr, ctx.Err())
	p.calls = append(p.calls, fmt.Sprintf("renew %d stopped=%v", len(held), rn.Stopped))
	if p.renewErr != nil {
		return nil, p.renewErr
	}
	var out []pool.Held
	for _, h := range held {
		if p.claims[h.Task].Commit != h.Commit {
			return nil, pool.ErrLost
		}
		h.Expires, h.Commit = now.Add(lease), p.commit()
		p.claims[h.Task] = h
		out = append(out, h)
	}
	if p.answerLost {
		p.answerLost = false
		return nil, context.DeadlineExceeded
	}
	return out, nil
}

func (p *fakePool) Fenced(_ context.Context, h pool.Held, lease time.Duration, now time.Time, ups []pool.Update) (pool.Held, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "fenced "+h.Task)
	if p.fencedErr != nil {
		return pool.Held{}, p.fencedErr
	}
	if p.claims[h.Task].Commit != h.Commit {
		return pool.Held{}, pool.ErrLost
	}
	p.pushed = append(p.pushed, ups)
	h.Expires, h.Commit = now.Add(lease), p.commit()
	p.claims[h.Task] = h
	return h, nil
}

func (p *fakePool) Release(_ context.Context, h pool.Held, now time.Time) error {
	if p.onRelease != nil {
		p.onRelease()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "release "+h.Task)
	if p.claims[h.Task].Commit != h.Commit {
		return pool.ErrLost
	}
	h.Released, h.Commit = true, p.commit()
	p.claims[h.Task] = h
	return nil
}

func (p *fakePool) Free(_ context.Context, h pool.Held, by string, now time.Time) (pool.Held, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, fmt.Sprintf("free %s from generation %d", h.Task, h.Generation))
	if p.claims[h.Task].Commit != h.Commit {
		return pool.Held{}, pool.ErrLost
	}
	g, err := pool.NextGeneration(h.Generation)
	if err != nil {
		return pool.Held{}, err
	}
	next := pool.Held{Claim: pool.Claim{Task: h.Task, Runner: by, Generation: g, Expires: now, Released: true}, Commit: p.commit()}
	p.claims[h.Task] = next
	return next, nil
}

func (p *fakePool) WriteLog(_ context.Context, id string, _ []byte) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.commit(), nil
}

// fakeLifecycle records what the runner asks of lifecycle; a start
// moves the task to working with a session this machine owns.
type fakeLifecycle struct {
	e        *testEnv
	calls    []string
	startErr error
	// onStart, when set, runs at each start (a test moves its clock).
	onStart func()
}

func (l *fakeLifecycle) Start(ctx context.Context, name string, in session.StartInput) (*task.Snapshot, error) {
	l.calls = append(l.calls, "start "+name+" "+in.Agent)
	if l.onStart != nil {
		l.onStart()
	}
	if l.startErr != nil {
		return nil, l.startErr
	}
	sn, _, err := l.e.Store.Update(ctx, name, func(s *task.Snapshot) (*task.Op, error) {
		s.Session = &task.Session{ID: "5e551040000000aa", Number: 1, Host: l.e.Store.Host(), Branch: "lazy/" + s.Task.Slug}
		s.Task.Sessions, s.Task.Status = 1, machine.Working
		return &task.Op{Name: "start", Actor: machine.System}, nil
	})
	if err == nil {
		err = l.e.Sessions().Save(owned.Session{TaskID: sn.Task.ID, SessionID: sn.Session.ID, Branch: sn.Session.Branch, Worktree: l.e.Repo.LazyDir("wt", sn.Task.Slug)})
	}
	return sn, err
}

func (l *fakeLifecycle) Resume(_ context.Context, name string) (*task.Snapshot, error) {
	l.calls = append(l.calls, "resume "+name)
	return nil, nil
}

func (l *fakeLifecycle) Stop(ctx context.Context, name, reason string) (*task.Snapshot, error) {
	l.calls = append(l.calls, "stop "+name)
	// As lazy stop leaves it: parked blocked, its work kept.
	sn, _, err := l.e.Store.Update(ctx, name, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Status = machine.Blocked
		return &task.Op{Name: "stop", Actor: machine.System, Reason: reason}, nil
	})
	return sn, err
}

func (l *fakeLifecycle) TakeOver(_ context.Context, name string, _ session.StartInput) (*task.Snapshot, error) {
	l.calls = append(l.calls, "take over "+name)
	return nil, errors.New("not in these tests")
}

// fakeBranches is git's side of task branches: every branch at one tip.
type fakeBranches struct{ fetched []string }

func (*fakeBranches) BranchTip(context.Context, string, string) (string, error) {
	return strings.Repeat("b", 40), nil
}

func (g *fakeBranches) FetchBranch(_ context.Context, _, _, branch string) error {
	g.fetched = append(g.fetched, branch)
	return nil
}

// seam is a runner's service over e with the pool, lifecycle and
// branches faked, and a clock the test moves.
type seam struct {
	e    *testEnv
	s    *Service
	p    *fakePool
	l    *fakeLifecycle
	now  time.Time
	mu   sync.Mutex // guards said
	said []string
}

func newSeam(t *testing.T) *seam {
	e := env(t)
	x := &seam{e: e, p: newFakePool(), now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	x.l = &fakeLifecycle{e: e}
	x.s = New(&e.Env, x.l, e.sync)
	x.s.Worktrees = &fakeBranches{}
	x.s.OpenPool = func(remote string, _ time.Duration) (Pool, error) {
		if remote != "origin" {
			return nil, fmt.Errorf("no remote %s", remote)
		}
		return x.p, nil
	}
	return x
}

func (x *seam) runner(t *testing.T, o Options) *runner {
	t.Helper()
	r, err := x.s.newRunner(x.options(o))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// options fills in what a test leaves out: the remote, the clock (the
// test's), agents, inputs, and a Say that keeps what was said.
func (x *seam) options(o Options) Options {
	o.Remote = "origin"
	if o.Now == nil {
		o.Now = func() time.Time { return x.now }
	}
	if o.Agents == nil {
		o.Agents = []string{"exec"}
	}
	o.Input = func(a string) (session.StartInput, error) { return session.StartInput{Agent: a}, nil }
	if o.Reconcile == nil {
		o.Reconcile = func(context.Context, string) {}
	}
	o.Say = func(m string) {
		x.mu.Lock()
		defer x.mu.Unlock()
		x.said = append(x.said, m)
	}
	return o
}

func (x *seam) pooled(t *testing.T, title string, m PoolMark) *task.Snapshot {
	t.Helper()
	sn, err := x.e.Lifecycle().Create(context.Background(), lifecycle.CreateInput{Title: title})
	if err != nil {
		t.Fatal(err)
	}
	if sn, err = x.s.MarkForPool(context.Background(), sn.Task.Slug, m); err != nil {
		t.Fatal(err)
	}
	return sn
}

// TestARunnerClaimsStartsAndPushesUnderItsClaim: a round pulls the
// records, claims the best eligible task, stamps the claim's generation
// on the record before the session starts, and pushes the record, its
// branch and nothing else, fenced by the claim; a task over the room the
// runner has waits.
func TestARunnerClaimsStartsAndPushesUnderItsClaim(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	low := x.pooled(t, "low", PoolMark{Priority: 1})
	high := x.pooled(t, "high", PoolMark{Priority: 5})
	r := x.runner(t, Options{MaxTasks: 1})
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	if x.e.sync.pulls != 1 {
		t.Fatalf("pulls: %d", x.e.sync.pulls)
	}
	if want := []string{"start " + high.Task.ID + " exec"}; !slices.Equal(x.l.calls, want) {
		t.Fatalf("lifecycle: %v, want %v", x.l.calls, want)
	}
	if _, ok := r.held[low.Task.ID]; ok {
		t.Fatal("a runner with room for one claimed two")
	}
	sn := x.e.mustLoad(t, high.Task.ID)
	if sn.Task.Pool.Runner != r.id || sn.Task.Pool.Generation != 1 {
		t.Fatalf("stamp: %+v", sn.Task.Pool)
	}
	if len(x.p.pushed) != 1 {
		t.Fatalf("pushes: %v", x.p.pushed)
	}
	ups := x.p.pushed[0]
	if len(ups) != 2 || ups[0].Ref != "refs/lazy/tasks/"+high.Task.ID || ups[0].New != sn.Commit.String() || ups[1].Ref != "refs/heads/lazy/high" {
		t.Fatalf("pushed under the claim: %+v", ups)
	}
	// Nothing changed: the next round pushes nothing again.
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	if len(x.p.pushed) != 1 {
		t.Fatalf("an unchanged record was pushed again: %v", x.p.pushed)
	}
}

// TestARunnerLosesATaskWhoseClaimMoved: a claim another runner took over
// (or a human released) ends the turn here and drops the session record;
// nothing more of it is pushed.
func TestARunnerLosesATaskWhoseClaimMoved(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	sn := x.pooled(t, "contested", PoolMark{})
	r := x.runner(t, Options{})
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.held[sn.Task.ID]; !ok {
		t.Fatal("not claimed")
	}
	h := x.p.claims[sn.Task.ID]
	x.p.claims[sn.Task.ID] = pool.Held{Claim: pool.Claim{Task: sn.Task.ID, Runner: "elsewhere", Generation: h.Generation + 1, Expires: x.now.Add(time.Hour)}, Commit: x.p.commit()}
	pushes := len(x.p.pushed)
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.held[sn.Task.ID]; ok {
		t.Fatal("a lost claim is still held")
	}
	if _, err := x.e.Sessions().Load(sn.Task.ID); err == nil {
		t.Fatal("the lost task's session record is kept")
	}
	if len(x.p.pushed) != pushes {
		t.Fatal("a lost task was pushed")
	}
	if !slices.ContainsFunc(x.said, func(s string) bool {
		return strings.Contains(s, "lost contested: runner elsewhere holds it (generation 2)")
	}) {
		t.Fatalf("said: %q", x.said)
	}
}

// TestARunnerTakesAHostileClaimOverAtTheGenerationItTrusts: a claim lazy
// does not accept is taken over at the generation after the task's own
// stamp, never the claim's, and a stamp at or past pool.MaxGeneration
// counts for nothing, so the arithmetic never wraps.
func TestARunnerTakesAHostileClaimOverAtTheGenerationItTrusts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		stamp, want uint64
	}{{7, 8}, {pool.MaxGeneration, 1}, {1<<64 - 1, 1}} {
		x := newSeam(t)
		sn := x.pooled(t, "forged", PoolMark{})
		if _, _, err := x.e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			s.Task.Pool.Generation = tc.stamp
			return &task.Op{Name: "test", Actor: machine.System}, nil
		}); err != nil {
			t.Fatal(err)
		}
		x.p.claims[sn.Task.ID] = pool.Held{Claim: pool.Claim{Task: sn.Task.ID, Generation: 1<<64 - 1}, Commit: x.p.commit(), Problem: "its lease runs out too late"}
		r := x.runner(t, Options{})
		if err := r.round(ctx); err != nil {
			t.Fatal(err)
		}
		if h, ok := r.held[sn.Task.ID]; !ok || h.Generation != tc.want {
			t.Fatalf("stamp %d: held %+v (%v), want generation %d", tc.stamp, h, ok, tc.want)
		}
	}
}

// TestARunnerLeavesALiveClaimAndWhatItCannotRun: a task another runner
// holds live is not taken; one whose start fails here is released and
// left to others for a lease, and a --once runner is then idle.
func TestARunnerLeavesALiveClaimAndWhatItCannotRun(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	held := x.pooled(t, "held elsewhere", PoolMark{})
	x.p.claims[held.Task.ID] = pool.Held{Claim: pool.Claim{Task: held.Task.ID, Runner: "other", Generation: 3, Expires: x.now.Add(time.Minute)}, Commit: x.p.commit()}
	broken := x.pooled(t, "broken", PoolMark{})
	x.l.startErr = errors.New("no such agent here")
	r := x.runner(t, Options{Once: true})
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(x.p.calls, "take "+held.Task.ID) {
		t.Fatalf("a live claim was taken: %v", x.p.calls)
	}
	if !slices.Contains(x.p.calls, "release "+broken.Task.ID) || len(r.held) != 0 {
		t.Fatalf("a task that could not start was kept: %v %v", x.p.calls, r.held)
	}
	if _, ok := r.backoff[broken.Task.ID]; !ok || !r.idle() {
		t.Fatal("a task this runner could not run keeps it going")
	}
}

// TestAOnceRunnerStopsOnRoundsThatCameToNothing: a --once runner that
// keeps losing the race for the work it sees, or whose rounds keep
// failing, stops after OnceRounds of them, failing only for failures.
func TestAOnceRunnerStopsOnRoundsThatCameToNothing(t *testing.T) {
	x := newSeam(t)
	r := x.runner(t, Options{Once: true})
	for i := 1; i <= OnceRounds; i++ {
		done, err := r.onceBound(nil, r.won)
		if err != nil || done != (i == OnceRounds) {
			t.Fatalf("fruitless round %d: %v %v", i, done, err)
		}
	}
	r = x.runner(t, Options{Once: true})
	boom := errors.New("the remote refused")
	for i := 1; i <= OnceRounds; i++ {
		done, err := r.onceBound(boom, r.won)
		if done != (i == OnceRounds) || done && !errors.Is(err, boom) {
			t.Fatalf("failed round %d: %v %v", i, done, err)
		}
	}
}

// TestARunnerReleasesAFinishedTaskAndTellsThePoolWhenItStops.
func TestARunnerReleasesAFinishedTaskAndTellsThePoolWhenItStops(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	sn := x.pooled(t, "short", PoolMark{})
	r := x.runner(t, Options{})
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	accepted(t, x.e, sn.Task.ID)
	x.now = x.now.Add(time.Minute)
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	if len(r.held) != 0 || !x.p.claims[sn.Task.ID].Released {
		t.Fatalf("a finished task is still held: %v %+v", r.held, x.p.claims[sn.Task.ID])
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if last := x.p.calls[len(x.p.calls)-1]; last != "renew 0 stopped=true" {
		t.Fatalf("the pool was not told: %v", x.p.calls)
	}
}

// stopCtxLifecycle is the fake lifecycle that keeps the context its
// Stop was given: the first step of a runner's stop.
type stopCtxLifecycle struct {
	*fakeLifecycle
	first context.Context
}

func (l *stopCtxLifecycle) Stop(ctx context.Context, name, reason string) (*task.Snapshot, error) {
	l.first = ctx
	return l.fakeLifecycle.Stop(ctx, name, reason)
}

// TestARunnerTellsThePoolItStoppedAfterSlowHandBacks: each step of a
// stop has time of its own, telling the pool included. Hand-backs that
// outlast the first step's time (a busy remote) once left the last push
// a context already past its deadline, and a runner that had handed
// back every claim exited 1 saying it could not tell the pool.
func TestARunnerTellsThePoolItStoppedAfterSlowHandBacks(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	l := &stopCtxLifecycle{fakeLifecycle: x.l}
	x.s.Lifecycle = l
	sn := x.pooled(t, "slow", PoolMark{})
	r := x.runner(t, Options{})
	r.stopStep = 50 * time.Millisecond
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.held[sn.Task.ID]; !ok {
		t.Fatalf("the runner holds nothing: %v", x.p.calls)
	}
	// The hand-back is answered only once the first step's time is up.
	x.p.onRelease = func() {
		if l.first == nil {
			t.Error("the turn was not stopped before the hand-back")
			return
		}
		<-l.first.Done()
	}
	if err := r.stop(); err != nil {
		t.Fatalf("stop: %v (calls %v)", err, x.p.calls)
	}
	if !x.p.claims[sn.Task.ID].Released {
		t.Fatalf("not handed back: %+v", x.p.claims[sn.Task.ID])
	}
	last := len(x.p.renewCtxErr) - 1
	if last < 0 || x.p.calls[len(x.p.calls)-1] != "renew 0 stopped=true" || x.p.renewCtxErr[last] != nil {
		t.Fatalf("the pool was told with a spent context: calls %v, errors %v", x.p.calls, x.p.renewCtxErr)
	}
}

// TestARunnerAdoptsOnlyTheClaimsWhoseSessionsItOwns: a claim naming this
// runner proves nothing; only a task whose session this machine started
// is held again after a restart.
func TestARunnerAdoptsOnlyTheClaimsWhoseSessionsItOwns(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	mine := x.pooled(t, "mine", PoolMark{})
	forged := x.pooled(t, "forged", PoolMark{})
	if _, err := x.l.Start(ctx, mine.Task.ID, session.StartInput{}); err != nil {
		t.Fatal(err)
	}
	walk(t, x.e, forged.Task.ID, machine.Working)
	for _, id := range []string{mine.Task.ID, forged.Task.ID} {
		x.p.claims[id] = pool.Held{Claim: pool.Claim{Task: id, Runner: x.e.Store.Host(), Generation: 2, Expires: x.now.Add(time.Minute)}, Commit: x.p.commit()}
	}
	r := x.runner(t, Options{MaxTasks: 5})
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.held[mine.Task.ID]; !ok {
		t.Fatal("its own claim was not taken back")
	}
	if _, ok := r.held[forged.Task.ID]; ok {
		t.Fatal("a claim naming this runner, on a session it does not own, was adopted")
	}
}

// TestPoolReleaseIsAHumansFencedDecision: an agent may not release a
// claim; a live claim needs --force; a claim that moved since the human
// looked is refused; a claim lazy does not accept is freed at the
// generation after the task's own stamp; a claim that changed during the
// release changes nothing.
func TestPoolReleaseIsAHumansFencedDecision(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	sn := x.pooled(t, "stuck", PoolMark{})
	id := sn.Task.ID
	o := ReleaseOptions{Remote: "origin", Now: func() time.Time { return x.now }}
	if _, err := x.s.ReleaseClaim(ctx, "stuck", o); err == nil || !strings.Contains(err.Error(), "has no claim on origin") {
		t.Fatalf("no claim: %v", err)
	}
	agent := *x.e
	agent.Actor = machine.Agent
	if _, err := New(&agent.Env, x.l, x.e.sync).ReleaseClaim(ctx, "stuck", o); !errors.Is(err, ErrHumanOnly) {
		t.Fatalf("an agent released a claim: %v", err)
	}
	x.p.claims[id] = pool.Held{Claim: pool.Claim{Task: id, Runner: "r1", Generation: 4, Expires: x.now.Add(time.Minute)}, Commit: x.p.commit()}
	if _, err := x.s.ReleaseClaim(ctx, "stuck", o); err == nil || !strings.Contains(err.Error(), "lazy pool release --force stuck") {
		t.Fatalf("a live claim without --force: %v", err)
	}
	o.Force, o.Generation = true, 3
	if _, err := x.s.ReleaseClaim(ctx, "stuck", o); err == nil || !strings.Contains(err.Error(), "at generation 4 now, not 3") {
		t.Fatalf("a claim that moved: %v", err)
	}
	o.Generation = 4
	res, err := x.s.ReleaseClaim(ctx, "stuck", o)
	if err != nil || res.Was.Generation != 4 || res.Now.Generation != 5 || !res.Now.Released || res.Slug != "stuck" {
		t.Fatalf("release: %+v %v", res, err)
	}
	if _, err := x.s.ReleaseClaim(ctx, "stuck", ReleaseOptions{Remote: "origin"}); err == nil || !strings.Contains(err.Error(), "released already") {
		t.Fatalf("released twice: %v", err)
	}
	// A forged claim: freed after the generation the task's record trusts.
	if _, _, err := x.e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Pool.Generation = 9
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	x.p.claims[id] = pool.Held{Claim: pool.Claim{Task: id}, Commit: x.p.commit(), Problem: "not a claim"}
	if res, err = x.s.ReleaseClaim(ctx, "stuck", ReleaseOptions{Remote: "origin"}); err != nil || res.Now.Generation != 10 {
		t.Fatalf("forged: %+v %v", res, err)
	}
}

// TestARunnerWakesWhenATurnHereEnds: between rounds a runner waits out
// --poll, but a turn of its own that ends (the task parks) wakes it at
// once, so the next task starts and the parked record is pushed without
// the rest of a poll (10 s by default); with nothing running here it
// waits the poll out, and its stop ends the wait.
func TestARunnerWakesWhenATurnHereEnds(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	tk := x.pooled(t, "busy", PoolMark{})
	r := x.runner(t, Options{MaxTasks: 1, Poll: 3 * time.Minute, Lease: 9 * time.Minute})
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	if r.working() != 1 {
		t.Fatalf("working after the round: %d", r.working())
	}
	woke := make(chan bool, 1)
	go func() {
		again, ended := r.waitRound(ctx, ctx)
		woke <- again && ended
	}()
	select {
	case <-woke:
		t.Fatal("the runner stopped waiting while its turn still ran")
	case <-time.After(3 * wakeTick): // a few looks at a store that did not change
	}
	walk(t, x.e, tk.Task.ID, machine.Blocked) // the turn ends: the task parks
	select {
	case ok := <-woke:
		if !ok {
			t.Fatal("the wait ended, but not for the turn's end")
		}
	case <-time.After(time.Minute):
		t.Fatal("the runner slept on after its turn ended (it waits for --poll, 3 minutes here)")
	}
	// The woken pass starts the next task and pushes the parked record
	// without fetching again (the claim's push is the check).
	next := x.pooled(t, "next", PoolMark{})
	x.e.sync.fetched[next.Task.ID] = x.e.mustLoad(t, next.Task.ID).Commit.String()
	pulls, pushes := x.e.sync.pulls, len(x.p.pushed)
	if err := r.pass(ctx, false); err != nil {
		t.Fatal(err)
	}
	if x.e.sync.pulls != pulls {
		t.Fatalf("the woken pass fetched (%d pulls, was %d)", x.e.sync.pulls, pulls)
	}
	if want := "start " + next.Task.ID + " exec"; x.l.calls[len(x.l.calls)-1] != want {
		t.Fatalf("lifecycle: %v, want the last call %q", x.l.calls, want)
	}
	parked := x.e.mustLoad(t, tk.Task.ID).Commit.String()
	found := false
	for _, ups := range x.p.pushed[pushes:] {
		found = found || ups[0].Ref == "refs/lazy/tasks/"+tk.Task.ID && ups[0].New == parked
	}
	if !found {
		t.Fatalf("the parked record was not pushed: %+v\nsaid %q", x.p.pushed[pushes:], x.said)
	}

	// The next turn runs on: only the stop ends a 3-minute poll.
	stop, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		if again, _ := r.waitRound(stop, ctx); again {
			t.Error("a stopped wait said to go on")
		}
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("the runner stopped waiting before its poll, its stop or its turn's end")
	case <-time.After(3 * wakeTick):
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the stop did not end the wait")
	}
}

// TestAWaitingRunnerReadsNoRecordWhileItsSupervisorRuns: the runner looks
// for its turns' ends often (wakeTick), and each look is a stat and a
// lock probe: while the turn's supervisor holds its lock and has left no
// response, no record is read and the reconciler is not asked. Its
// response wakes the runner within a few looks.
func TestAWaitingRunnerReadsNoRecordWhileItsSupervisorRuns(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	tk := x.pooled(t, "busy", PoolMark{})
	var mu sync.Mutex
	asked := 0
	r := x.runner(t, Options{MaxTasks: 1, Poll: 3 * time.Minute, Lease: 9 * time.Minute, Reconcile: func(context.Context, string) {
		mu.Lock()
		defer mu.Unlock()
		asked++
	}})
	r.recheck = time.Hour // the look alone decides, however slow the machine
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	id := tk.Task.ID
	lazyDir := x.e.Repo.LazyDir()
	if err := os.MkdirAll(filepath.Dir(proto.SupervisorLock(lazyDir, id)), 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := flock.Acquire(ctx, proto.SupervisorLock(lazyDir, id))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release() }()
	mu.Lock()
	asked = 0
	mu.Unlock()
	woke := make(chan bool, 1)
	go func() {
		again, ended := r.waitRound(ctx, ctx)
		woke <- again && ended
	}()
	select {
	case <-woke:
		t.Fatal("the runner stopped waiting while its turn's supervisor ran")
	case <-time.After(10 * wakeTick):
	}
	mu.Lock()
	n := asked
	mu.Unlock()
	if n != 0 {
		t.Fatalf("the reconciler was asked %d times while the supervisor held its lock and left no response", n)
	}
	// The turn ends: the supervisor leaves its response, and the
	// reconciler records the park.
	walk(t, x.e, id, machine.Blocked)
	if err := proto.ForTask(lazyDir, id).Write(proto.ResponseFile, proto.Response{Status: proto.Completed}); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-woke:
		if !ok {
			t.Fatal("the wait ended, but not for the turn's end")
		}
	case <-time.After(time.Minute):
		t.Fatal("the runner slept on after the turn's supervisor left its response")
	}
}

// TestAWokenPassReconcilesOnlyTheTurnsStillRunning: the pass a turn's end
// wakes starts the next task without asking the reconciler about the
// tasks parked here (nothing was fetched, so they are as the last round
// left them, and the look that woke it reconciled the turn that ended);
// a round that fetched asks about every task held.
func TestAWokenPassReconcilesOnlyTheTurnsStillRunning(t *testing.T) {
	ctx := context.Background()
	x := newSeam(t)
	var mu sync.Mutex
	var asked []string
	r := x.runner(t, Options{MaxTasks: 1, Poll: 3 * time.Minute, Lease: 9 * time.Minute, Reconcile: func(_ context.Context, id string) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, id)
	}})
	var parked []string
	for _, title := range []string{"one", "two", "three"} {
		tk := x.pooled(t, title, PoolMark{})
		if err := r.round(ctx); err != nil {
			t.Fatal(err)
		}
		walk(t, x.e, tk.Task.ID, machine.Blocked) // its turn ends: it parks, held here
		parked = append(parked, tk.Task.ID)
	}
	next := x.pooled(t, "next", PoolMark{})
	x.e.sync.fetched[next.Task.ID] = x.e.mustLoad(t, next.Task.ID).Commit.String()
	mu.Lock()
	asked = nil
	mu.Unlock()
	if err := r.pass(ctx, false); err != nil {
		t.Fatal(err)
	}
	if want := "start " + next.Task.ID + " exec"; x.l.calls[len(x.l.calls)-1] != want {
		t.Fatalf("lifecycle: %v, want the last call %q", x.l.calls, want)
	}
	mu.Lock()
	woken := slices.Clone(asked)
	asked = nil
	mu.Unlock()
	if len(woken) != 0 {
		t.Fatalf("the woken pass asked the reconciler about %v; the parked tasks %v need no look before the next task starts", woken, parked)
	}
	if err := r.round(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range append(parked, next.Task.ID) {
		if !slices.Contains(asked, id) {
			t.Fatalf("a round that fetched did not reconcile %s (asked %v)", id, asked)
		}
	}
}
