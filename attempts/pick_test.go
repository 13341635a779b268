package attempts

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// TestRankByTheDeclaredRule: gate passed first, then the lower cost (an
// unknown or absurd cost last), then the smaller diff, then the lower
// attempt number; and the words say each attempt's place.
func TestRankByTheDeclaredRule(t *testing.T) {
	pass := func(k int, cost float64, lines int) Candidate {
		c := Candidate{K: k, Passed: true, Lines: lines, LinesKnown: true}
		c.Cost, c.CostKnown = CostOf(&task.Usage{CostUSD: cost})
		return c
	}
	fail := func(k int, cost float64) Candidate {
		c := pass(k, cost, 3)
		c.Passed, c.Out = false, "failed the gate"
		return c
	}
	for _, tc := range []struct {
		name     string
		in       []Candidate
		order    []int
		proposed int
		why      string
	}{
		{"the gate first, then cost", []Candidate{fail(1, 0.01), pass(2, 0.12, 14), pass(3, 0.40, 2)}, []int{2, 3, 1}, 2,
			"attempt 2: gate passed, $0.12, 14 lines; attempt 3 cost more ($0.40); attempt 1 failed the gate"},
		{"NaN never wins", []Candidate{pass(1, math.NaN(), 1), pass(2, 0.5, 40)}, []int{2, 1}, 2,
			"attempt 2: gate passed, $0.50, 40 lines; attempt 1 passed, cost unknown"},
		{"+Inf never wins", []Candidate{pass(1, math.Inf(1), 1), pass(2, 0.5, 40)}, []int{2, 1}, 2, ""},
		{"-Inf never wins", []Candidate{pass(1, math.Inf(-1), 1), pass(2, 0.5, 40)}, []int{2, 1}, 2, ""},
		{"1e308 never wins", []Candidate{pass(1, 1e308, 1), pass(2, 0.5, 40)}, []int{2, 1}, 2, ""},
		{"a negative cost never wins", []Candidate{pass(1, -5, 1), pass(2, 0.5, 40)}, []int{2, 1}, 2, ""},
		{"same cost: the smaller diff", []Candidate{pass(1, 0.2, 30), pass(2, 0.2, 10)}, []int{2, 1}, 2,
			"attempt 2: gate passed, $0.20, 10 lines; attempt 1 cost the same and changed more (30 lines)"},
		{"a full tie: the lower number", []Candidate{pass(2, 0.2, 10), pass(1, 0.2, 10)}, []int{1, 2}, 1,
			"attempt 1: gate passed, $0.20, 10 lines; attempt 2 tied (the lower number wins)"},
		{"both unknown: the diff decides", []Candidate{pass(1, math.NaN(), 9), pass(2, -1, 3)}, []int{2, 1}, 2,
			"attempt 2: gate passed, cost unknown, 3 lines; attempt 1 changed more (9 lines)"},
		{"a cheap failure never beats a pass", []Candidate{fail(1, 0), pass(2, 9, 900)}, []int{2, 1}, 2, ""},
		{"none passed", []Candidate{fail(1, 0.1), {K: 2, Out: "was stopped"}}, []int{1, 2}, 0,
			"no attempt passed the gate: attempt 1 failed the gate; attempt 2 was stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, c := range Rank(tc.in) {
				got = append(got, c.K)
			}
			if !equalInts(got, tc.order) {
				t.Fatalf("order %v, want %v", got, tc.order)
			}
			k, why := Decide(tc.in)
			if k != tc.proposed || (tc.why != "" && why != tc.why) {
				t.Fatalf("proposed %d %q, want %d %q", k, why, tc.proposed, tc.why)
			}
			if strings.Contains(why, "NaN") || strings.Contains(why, "Inf") || strings.Contains(why, "e+") {
				t.Fatalf("an absurd figure is printed: %q", why)
			}
		})
	}
	for _, u := range []*task.Usage{nil, {Flagged: "out of bounds"}, {CostUSD: 1, Unpriced: 1}, {CostUSD: math.NaN()}, {CostUSD: 1e308}, {CostUSD: -0.5}} {
		if _, ok := CostOf(u); ok {
			t.Fatalf("cost of %+v is believed", u)
		}
	}
	if c, ok := CostOf(&task.Usage{CostUSD: 0.12}); !ok || c != 0.12 {
		t.Fatal("a plain cost is not believed")
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fakeGater gates attempt ids as the test says, counting runs, with
// parallel as lazy.gate.parallel; hold, when set, runs inside each gate
// run (without the lock), where a test blocks or counts runs.
type fakeGater struct {
	mu       sync.Mutex
	result   map[string]GateResult
	runs     map[string]int
	parallel int
	hold     func(ctx context.Context, id string)
}

func (g *fakeGater) GateAttempt(ctx context.Context, id string) (GateResult, error) {
	g.mu.Lock()
	g.runs[id]++
	r, ok := g.result[id]
	hold := g.hold
	g.mu.Unlock()
	if hold != nil {
		hold(ctx, id)
	}
	if !ok {
		return GateResult{}, errors.New("no such attempt")
	}
	r.BranchTip = "tip-" + id
	return r, nil
}

func (g *fakeGater) Parallel() int { return g.parallel }

// fakeLander lands an attempt as an accept would: complete, then the
// group settled.
type fakeLander struct {
	t      *testing.T
	e      *testEnv
	landed []int
}

func (l *fakeLander) LandAttempt(ctx context.Context, group string, k int) error {
	at := l.e.attempts()
	_, id, err := at.Resolve(group, k)
	if err != nil {
		return err
	}
	l.e.land(l.t, id)
	l.landed = append(l.landed, k)
	_, _, err = at.SettleGroup(ctx, id)
	return err
}

// pickFixture is a group of three attempts picked by the gate: attempt 1
// fails the gate, 2 and 3 pass, 3 costs more.
func pickFixture(t *testing.T, land bool) (*testEnv, *task.Snapshot, []*task.Snapshot, *fakeGater) {
	t.Helper()
	e := env(t)
	g := e.create(t, lifecycle.CreateInput{Title: "Fix the flaky test", TargetBranch: "release"})
	res, err := e.attempts().Start(context.Background(), g.Task.Slug, Input{N: 3, Base: session.StartInput{Agent: "exec", ExecCommand: trueCmd}, Pick: task.PickGate, Land: land})
	if err != nil || len(res.Started) != 3 {
		t.Fatalf("attempts: %+v, %v", res, err)
	}
	as := res.Started
	gt := &fakeGater{runs: map[string]int{}, result: map[string]GateResult{
		as[0].Task.ID: {Run: "", Failed: "go test ./..."},
		as[1].Task.ID: {Passed: true},
		as[2].Task.ID: {Passed: true},
	}}
	for i, cost := range []float64{0.01, 0.12, 0.40} {
		e.git.stats["tip-"+as[i].Task.ID] = worktree.DiffStat{Files: 1, Additions: 10 + i, Deletions: 4}
		e.set(t, as[i].Task.ID, func(s *task.Snapshot) { s.Task.Usage = &task.Usage{CostUSD: cost} })
	}
	return e, res.Group, as, gt
}

// TestPickStepGatesEachParkedAttemptThenProposesTheBest: the step gates
// an attempt once it parks (once per branch tip), waits while another
// still works, and then proposes the cheaper passing attempt on the
// group with the ranking in words and the command that lands it;
// nothing lands without --land.
func TestPickStepGatesEachParkedAttemptThenProposesTheBest(t *testing.T) {
	ctx := context.Background()
	e, g, as, gt := pickFixture(t, false)
	if p := e.load(t, g.Task.ID).Task.Pick; p == nil || p.Rule != task.PickGate || p.Land || !task.NewSummary(&e.load(t, g.Task.ID).Task).Picking {
		t.Fatalf("the group's pick %+v", p)
	}
	at := e.attempts()
	at.Gater = gt
	lander := &fakeLander{t: t, e: e}
	at.Lander = lander
	e.set(t, as[0].Task.ID, func(s *task.Snapshot) { s.Task.Status = machine.Blocked })
	e.set(t, as[1].Task.ID, func(s *task.Snapshot) { s.Task.Status = machine.Blocked })
	out, err := at.PickStep(ctx, g.Task.ID)
	if err != nil || out == nil || out.Decided || len(out.Gated) != 2 {
		t.Fatalf("first step: %+v, %v", out, err)
	}
	if out, err := at.PickStep(ctx, g.Task.ID); err != nil || len(out.Gated) != 0 || out.Decided {
		t.Fatalf("a step with nothing new: %+v, %v", out, err)
	}
	e.set(t, as[2].Task.ID, func(s *task.Snapshot) { s.Task.Status = machine.Blocked })
	out, err = at.PickStep(ctx, g.Task.ID)
	want := "attempt 2: gate passed, $0.12, 15 lines; attempt 3 cost more ($0.40); attempt 1 failed the gate"
	if err != nil || !out.Decided || out.Proposed != 2 || out.Why != want || out.Landed {
		t.Fatalf("deciding step: %+v, %v", out, err)
	}
	for _, a := range as {
		if gt.runs[a.Task.ID] != 1 {
			t.Fatalf("attempt %d gated %d times", a.Task.Attempt, gt.runs[a.Task.ID])
		}
	}
	gs := e.load(t, g.Task.ID)
	p := gs.Task.Pick
	if !p.Decided() || p.Proposed != 2 || p.Why != want || len(p.Gated) != 3 || p.GateOf(1).State != task.GateFailed || p.GateOf(1).Failed != "go test ./..." || p.GateOf(2).State != task.GatePassed {
		t.Fatalf("recorded pick %+v", p)
	}
	line := PickLine(gs.Task.Slug, p)
	if line != "picked by the gate: "+want+"; lazy accept "+gs.Task.Slug+" --attempt 2 lands it" {
		t.Fatalf("pick line %q", line)
	}
	if gs.Task.Status != machine.Backlog || task.NewSummary(&gs.Task).Picking || len(lander.landed) != 0 {
		t.Fatalf("group %s picking %v landed %v", gs.Task.Status, task.NewSummary(&gs.Task).Picking, lander.landed)
	}
	if out, err := at.PickStep(ctx, g.Task.ID); out != nil || err != nil {
		t.Fatalf("a step after the pick: %+v, %v", out, err)
	}
	v, err := at.Compare(ctx, g.Task.Slug)
	if err != nil || v.Pick == nil || v.PickLine != line || !v.Attempts[1].Proposed || v.Attempts[0].Proposed {
		t.Fatalf("comparison %+v, %v", v, err)
	}
	if got := v.Attempts[1].StatusCell() + " | " + v.Attempts[0].GateCell() + " | " + v.Attempts[2].GateCell(); got != "blocked (proposed) | failed | passed" {
		t.Fatalf("cells %q", got)
	}
}

// TestPickStepLandsTheBestAndClosesTheOthersWithTheReason: with --land
// the proposal lands through the lander (the normal accept), the group
// completes, and the others are closed saying where they ranked.
func TestPickStepLandsTheBestAndClosesTheOthersWithTheReason(t *testing.T) {
	ctx := context.Background()
	e, g, as, gt := pickFixture(t, true)
	at := e.attempts()
	at.Gater = gt
	lander := &fakeLander{t: t, e: e}
	at.Lander = lander
	for _, a := range as {
		e.set(t, a.Task.ID, func(s *task.Snapshot) { s.Task.Status = machine.Blocked })
	}
	out, err := at.PickStep(ctx, g.Task.ID)
	if err != nil || !out.Decided || out.Proposed != 2 || !out.Landed || len(lander.landed) != 1 || lander.landed[0] != 2 {
		t.Fatalf("step: %+v, %v (landed %v)", out, err, lander.landed)
	}
	gs := e.load(t, g.Task.ID)
	if gs.Task.Status != machine.Complete || gs.Task.Pick.Landed != "attempt 2 landed" || task.NewSummary(&gs.Task).Picking {
		t.Fatalf("group %s pick %+v", gs.Task.Status, gs.Task.Pick)
	}
	why := "attempt 2 was chosen by the gate (attempt 2: gate passed, $0.12, 15 lines; attempt 3 cost more ($0.40); attempt 1 failed the gate)"
	for _, a := range []*task.Snapshot{as[0], as[2]} {
		s := e.load(t, a.Task.ID)
		if s.Task.Status != machine.Abandoned || s.Task.Reason != why {
			t.Fatalf("%s: %s %q", s.Task.Slug, s.Task.Status, s.Task.Reason)
		}
	}
}

// TestPickStepLandsNothingWhenNoAttemptPassed: a failed gate, a stopped
// attempt and one that changed nothing: the group waits saying none
// passed, and nothing lands even with --land.
func TestPickStepLandsNothingWhenNoAttemptPassed(t *testing.T) {
	ctx := context.Background()
	e, g, as, gt := pickFixture(t, true)
	at := e.attempts()
	at.Gater = gt
	lander := &fakeLander{t: t, e: e}
	at.Lander = lander
	e.set(t, as[0].Task.ID, func(s *task.Snapshot) { s.Task.Status = machine.Blocked })
	e.set(t, as[1].Task.ID, func(s *task.Snapshot) { s.Task.Status = machine.Blocked })
	e.git.stats["tip-"+as[1].Task.ID] = worktree.DiffStat{}
	e.set(t, as[2].Task.ID, func(s *task.Snapshot) { s.Task.Status = machine.Interrupted })
	out, err := at.PickStep(ctx, g.Task.ID)
	want := "no attempt passed the gate: attempt 1 failed the gate; attempt 2 changed nothing; attempt 3 was interrupted"
	if err != nil || !out.Decided || out.Proposed != 0 || out.Why != want || len(lander.landed) != 0 {
		t.Fatalf("step: %+v, %v", out, err)
	}
	gs := e.load(t, g.Task.ID)
	if gs.Task.Status != machine.Backlog || !strings.Contains(PickLine(gs.Task.Slug, gs.Task.Pick), "; nothing lands") {
		t.Fatalf("group %s: %q", gs.Task.Status, PickLine(gs.Task.Slug, gs.Task.Pick))
	}
}

// TestStartRefusesAPickItDoesNotKnow: --pick takes human or gate, and
// --land goes only with gate; nothing is recorded on a refusal.
func TestStartRefusesAPickItDoesNotKnow(t *testing.T) {
	e := env(t)
	g := e.create(t, lifecycle.CreateInput{Title: "x"})
	base := session.StartInput{Agent: "exec", ExecCommand: trueCmd}
	if _, err := e.attempts().Start(context.Background(), g.Task.Slug, Input{N: 2, Base: base, Pick: "best"}); err == nil || !strings.Contains(err.Error(), "give one of those") {
		t.Fatalf("--pick best: %v", err)
	}
	if _, err := e.attempts().Start(context.Background(), g.Task.Slug, Input{N: 2, Base: base, Land: true}); err == nil || !strings.Contains(err.Error(), "give --pick gate with it") {
		t.Fatalf("--land without --pick gate: %v", err)
	}
	if s := e.load(t, g.Task.ID); s.Task.IsAttemptGroup() || s.Task.Pick != nil {
		t.Fatalf("recorded on a refusal: %+v", s.Task)
	}
}

// pickWhy is the pick of pickFixture's three attempts, however they were
// gated.
const pickWhy = "attempt 2: gate passed, $0.12, 15 lines; attempt 3 cost more ($0.40); attempt 1 failed the gate"

// parkAll parks every attempt after its turn.
func parkAll(t *testing.T, e *testEnv, as []*task.Snapshot) {
	t.Helper()
	for _, a := range as {
		e.set(t, a.Task.ID, func(s *task.Snapshot) { s.Task.Status = machine.Blocked })
	}
}

// checkPicked: the step gated every attempt once, in one step, and made
// the same pick, with the same records, as the attempts gated one after
// another.
func checkPicked(t *testing.T, e *testEnv, g *task.Snapshot, as []*task.Snapshot, gt *fakeGater, out *PickOutcome) {
	t.Helper()
	if !out.Decided || out.Proposed != 2 || out.Why != pickWhy || !equalInts(out.Gated, []int{1, 2, 3}) {
		t.Fatalf("step: %+v", out)
	}
	for _, a := range as {
		if gt.runs[a.Task.ID] != 1 {
			t.Fatalf("attempt %d gated %d times", a.Task.Attempt, gt.runs[a.Task.ID])
		}
	}
	p := e.load(t, g.Task.ID).Task.Pick
	if !p.Decided() || p.Proposed != 2 || p.Why != pickWhy || len(p.Gated) != 3 {
		t.Fatalf("recorded pick %+v", p)
	}
	for k, want := range map[int]string{1: task.GateFailed, 2: task.GatePassed, 3: task.GatePassed} {
		r := p.GateOf(k)
		if r == nil || r.State != want || r.BranchTip != "tip-"+as[k-1].Task.ID {
			t.Fatalf("attempt %d's gate record %+v, want %s", k, r, want)
		}
	}
}

// inFlight counts the gate runs going at once.
type inFlight struct {
	mu              sync.Mutex
	now, most, done int
}

func (f *inFlight) enter() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now++
	f.most = max(f.most, f.now)
	return f.now
}

func (f *inFlight) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now--
	f.done++
}

func (f *inFlight) read() (now, most, done int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now, f.most, f.done
}

// TestPickStepGatesTheParkedAttemptsAtOnce: with lazy.gate.parallel 3,
// the three parked attempts are gated concurrently: each run waits until
// all three are going (a step gating them one after another would never
// get there, and fails on the timeout), and the pick is the one made
// gating them in turn.
func TestPickStepGatesTheParkedAttemptsAtOnce(t *testing.T) {
	e, g, as, gt := pickFixture(t, false)
	parkAll(t, e, as)
	var f inFlight
	all := make(chan struct{})
	gt.parallel = 3
	gt.hold = func(_ context.Context, id string) {
		defer f.leave()
		if f.enter() == 3 {
			close(all)
		}
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			now, _, _ := f.read()
			t.Errorf("the gate of %s waited 10s for the others: %d of 3 in flight", id, now)
		}
	}
	at := e.attempts()
	at.Gater = gt
	out, err := at.PickStep(context.Background(), g.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkPicked(t, e, g, as, gt, out)
	if _, most, _ := f.read(); most != 3 {
		t.Fatalf("%d gate runs at once, want 3", most)
	}
}

// TestPickStepGatesNoMoreThanTheParallelLimit: with lazy.gate.parallel
// P (0, as an unreadable setting reads, means 1), never more than P gate
// runs go at once: the test holds every run until it releases it, one at
// a time, and sees exactly min(P, left) going before each release.
func TestPickStepGatesNoMoreThanTheParallelLimit(t *testing.T) {
	for _, p := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("parallel %d", p), func(t *testing.T) {
			e, g, as, gt := pickFixture(t, false)
			parkAll(t, e, as)
			limit := max(p, 1)
			var f inFlight
			release := make(chan struct{})
			gt.parallel = p
			gt.hold = func(_ context.Context, id string) {
				defer f.leave()
				if n := f.enter(); n > limit {
					t.Errorf("the gate of %s is run %d at once, over lazy.gate.parallel %d", id, n, limit)
				}
				select {
				case <-release:
				case <-time.After(10 * time.Second):
					t.Errorf("the gate of %s was never released", id)
				}
			}
			at := e.attempts()
			at.Gater = gt
			type result struct {
				out *PickOutcome
				err error
			}
			done := make(chan result, 1)
			go func() {
				out, err := at.PickStep(context.Background(), g.Task.ID)
				done <- result{out, err}
			}()
			for released := 0; released < len(as); released++ {
				want := min(limit, len(as)-released)
				if !waitFor(t, func() bool {
					now, _, d := f.read()
					return now == want && d == released
				}, func() string {
					now, _, d := f.read()
					return fmt.Sprintf("%d runs in flight and %d done, want %d and %d", now, d, want, released)
				}) {
					close(release) // let every run end before the test does
					<-done
					t.FailNow()
				}
				release <- struct{}{}
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			checkPicked(t, e, g, as, gt, r.out)
			if _, most, _ := f.read(); most != limit {
				t.Fatalf("%d gate runs at once, want %d", most, limit)
			}
		})
	}
}

// TestPickStepAfterACrashMidwayGatesOnlyWhatWasNotRecorded: the step is
// cut off (its context ends, as when the daemon is killed) while attempt
// 3 is gated and 1 and 2 are recorded: the next step gates attempt 3
// alone and makes the pick; 1 and 2 are never gated again.
func TestPickStepAfterACrashMidwayGatesOnlyWhatWasNotRecorded(t *testing.T) {
	e, g, as, gt := pickFixture(t, false)
	parkAll(t, e, as)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gt.parallel = 2
	gt.hold = func(_ context.Context, id string) {
		if id != as[2].Task.ID {
			return
		}
		waitFor(t, func() bool { return len(e.load(t, g.Task.ID).Task.Pick.Gated) == 2 }, func() string {
			return fmt.Sprintf("gated %+v", e.load(t, g.Task.ID).Task.Pick.Gated)
		})
		cancel()
	}
	at := e.attempts()
	at.Gater = gt
	out, err := at.PickStep(ctx, g.Task.ID)
	if !errors.Is(err, context.Canceled) || out.Decided || !equalInts(out.Gated, []int{1, 2}) {
		t.Fatalf("cut-off step: %+v, %v", out, err)
	}
	if p := e.load(t, g.Task.ID).Task.Pick; p.GateOf(3) != nil || p.Decided() {
		t.Fatalf("recorded after the cut: %+v", p)
	}
	gt.hold = nil
	out, err = at.PickStep(context.Background(), g.Task.ID)
	if err != nil || !out.Decided || out.Why != pickWhy || !equalInts(out.Gated, []int{3}) {
		t.Fatalf("step after the cut: %+v, %v", out, err)
	}
	if gt.runs[as[0].Task.ID] != 1 || gt.runs[as[1].Task.ID] != 1 || gt.runs[as[2].Task.ID] != 2 {
		t.Fatalf("runs %v", gt.runs)
	}
}

// waitFor polls cond until it holds, and after 10s reports what says
// and returns false (t.Errorf: gate runs call it off the test's
// goroutine).
func waitFor(t *testing.T, cond func() bool, what func() string) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("waited 10s: %s", what())
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}
