package supervise

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/agent"
)

func TestLadder(t *testing.T) {
	want := []time.Duration{5, 10, 20, 40, 60, 60, 60}
	for i, w := range want {
		if got := Delay(i + 1); got != w*time.Second {
			t.Errorf("Delay(%d) = %s, want %ds", i+1, got, w)
		}
	}
	if Delay(0) != 5*time.Second {
		t.Error("Delay(0) should be the first rung")
	}
}

func fails(class agent.Class, n int, ran time.Duration) []Attempt {
	h := make([]Attempt, n)
	for i := range h {
		h[i] = Attempt{Failure: agent.Failure{Class: class, Reason: "r"}, Ran: ran}
	}
	return h
}

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func TestTransientsRetryOnTheLadderWithoutCrashLoop(t *testing.T) {
	p := DefaultPolicy()
	// 429s come back in milliseconds: the crash-loop detector must not
	// apply, however many arrive.
	for n := 1; n <= 50; n++ {
		d := p.Decide(fails(agent.TransientOverload, n, time.Millisecond), now)
		if !d.Retry || d.Delay != Delay(n) {
			t.Fatalf("overload #%d: %+v", n, d)
		}
	}
}

// A limit with a reset ahead stops the turn (the task waits parked and
// the daemon resumes it); one already past is retried on the ladder; a
// budget stop is never retried.
func TestResetTimeIsRespected(t *testing.T) {
	h := fails(agent.TransientOverload, 1, time.Second)
	h[0].Failure.ResetAt = now.Add(37 * time.Minute)
	if d := p().Decide(h, now); d.Retry || !d.Limit || d.Stop != "r" {
		t.Fatalf("reset in 37m: %+v", d)
	}
	h[0].Failure.ResetAt = now.Add(-time.Minute) // already past: the ladder wins
	if d := p().Decide(h, now); !d.Retry || d.Limit || d.Delay != 5*time.Second {
		t.Fatalf("past reset: %+v", d)
	}
	b := fails(agent.Budget, 1, time.Second)
	if d := p().Decide(b, now); d.Retry || d.Limit || d.Stop != "r" {
		t.Fatalf("budget: %+v", d)
	}
}

func p() Policy { return DefaultPolicy() }

func unreachableSince(start time.Time, n int) []Attempt {
	h := fails(agent.TransientUnreachable, n, time.Second)
	for i := range h {
		h[i].At = start.Add(time.Duration(i) * time.Minute)
	}
	return h
}

func TestUnreachableIsBoundedByWallClock(t *testing.T) {
	pol := p()
	// Two long attempts (a CLI retrying by itself) reach the bound where
	// an attempt cap never would.
	if d := pol.Decide(unreachableSince(now.Add(-19*time.Minute), 2), now); !d.Retry {
		t.Fatalf("below the bound: %+v", d)
	}
	d := pol.Decide(unreachableSince(now.Add(-20*time.Minute), 2), now)
	if d.Retry || !strings.Contains(d.Stop, "unreachable for 20m0s") || !strings.Contains(d.Stop, "over 2 attempts") || strings.HasPrefix(d.Stop, "transient_unreachable") {
		t.Fatalf("at the bound: %+v", d)
	}
	// Many fast failures inside the bound keep retrying.
	if d := pol.Decide(unreachableSince(now.Add(-5*time.Minute), 100), now); !d.Retry {
		t.Fatalf("fast failures inside the bound: %+v", d)
	}
	// A different failure in between restarts the streak.
	h := append(unreachableSince(now.Add(-time.Hour), 3), fails(agent.TransientOverload, 1, time.Second)...)
	h = append(h, unreachableSince(now.Add(-time.Minute), 1)...)
	if d := pol.Decide(h, now); !d.Retry || d.Delay != Delay(1) {
		t.Fatalf("streak broken: %+v", d)
	}
}

func TestFatalStopsAtOnce(t *testing.T) {
	d := p().Decide(fails(agent.FatalAuth, 1, time.Minute), now)
	if d.Retry || d.CrashLoop || d.Stop != "r" {
		t.Fatalf("fatal: %+v", d)
	}
}

func TestCrashLoopOnlyForFastUnknowns(t *testing.T) {
	pol := p()
	if d := pol.Decide(fails(agent.Unknown, 2, time.Second), now); !d.Retry {
		t.Fatalf("two fast unknowns: %+v", d)
	}
	d := pol.Decide(fails(agent.Unknown, 3, 9*time.Second), now)
	if d.Retry || !d.CrashLoop {
		t.Fatalf("three fast unknowns: %+v", d)
	}
	// Slow failures are not a crash loop, but unknown is still bounded.
	if d := pol.Decide(fails(agent.Unknown, 3, 11*time.Second), now); !d.Retry || d.CrashLoop {
		t.Fatalf("three slow unknowns: %+v", d)
	}
	if d := pol.Decide(fails(agent.Unknown, pol.UnknownAttempts, time.Minute), now); d.Retry || d.CrashLoop {
		t.Fatalf("unknown past its bound: %+v", d)
	}
	// A fast transient in the window breaks the crash-loop pattern.
	h := append(fails(agent.Unknown, 2, time.Second), fails(agent.TransientOverload, 1, time.Millisecond)...)
	h = append(h, fails(agent.Unknown, 1, time.Second)...)
	if d := pol.Decide(h, now); !d.Retry {
		t.Fatalf("mixed window: %+v", d)
	}
	if d := pol.Decide(nil, now); d.Retry {
		t.Fatal("no history retried")
	}
}

// A retry may spend only what the earlier attempts left, and a cost no
// turn can report (a hostile or broken CLI) leaves nothing.
func TestLeftToRetry(t *testing.T) {
	for _, tc := range []struct{ allowed, spent, want float64 }{
		{5, 2, 3}, {5, 0, 5}, {5, 6, -1}, {5, -1e308, 0}, {5, math.NaN(), 0}, {5, math.Inf(1), 0}, {5, 2e6, 0},
	} {
		if got := leftToRetry(tc.allowed, tc.spent); got != tc.want {
			t.Errorf("leftToRetry(%v, %v) = %v, want %v", tc.allowed, tc.spent, got, tc.want)
		}
	}
}
