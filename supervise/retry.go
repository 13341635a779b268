// Package supervise runs one agent turn. This file is its retry policy,
// the only place retry cadence is decided (spec: "Retry pacing").
package supervise

import (
	"fmt"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/proto"
)

// ladder is the transient cadence: 5s, 10s, 20s, 40s, then 60s capped,
// about 60 retries an hour.
var ladder = [...]time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second}

const ladderCap = 60 * time.Second

// Delay is the pure cadence: how long to wait before attempt+1 after the
// attempt-th failure (attempt counts from 1).
func Delay(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt <= len(ladder) {
		return ladder[attempt-1]
	}
	return ladderCap
}

// Policy holds the bounds of the retry decision. The zero value is not
// useful; use DefaultPolicy.
type Policy struct {
	// UnreachableFor is how long (wall clock, from the first failure of
	// the streak) transient_unreachable failures in a row are retried
	// before the turn stops: a local proxy that restarts heals, one that
	// never returns must not spin forever. Time, not attempts, because a
	// CLI may retry by itself for minutes inside one attempt.
	UnreachableFor time.Duration
	// UnknownAttempts bounds in-turn retries of unrecognised failures.
	UnknownAttempts int
	// CrashLoopRuns and CrashLoopUnder define the fast crash-loop
	// detector: that many consecutive unknown failures, each of a run
	// shorter than CrashLoopUnder, stop the turn.
	CrashLoopRuns  int
	CrashLoopUnder time.Duration
}

// DefaultUnreachableFor is lazy.unreachableTimeout's default.
const DefaultUnreachableFor = proto.DefaultUnreachableTimeout

// DefaultPolicy is the specified policy: unreachable is retried for 20
// minutes, the crash-loop detector fires on 3 runs under 10 s each.
func DefaultPolicy() Policy {
	return Policy{UnreachableFor: DefaultUnreachableFor, UnknownAttempts: 5, CrashLoopRuns: 3, CrashLoopUnder: 10 * time.Second}
}

// Attempt is one failed run of the agent within a turn.
type Attempt struct {
	Failure agent.Failure
	Ran     time.Duration // how long the run lasted before failing
	At      time.Time     // when the run began
}

// Decision is what to do after a failure.
type Decision struct {
	Retry bool
	Delay time.Duration
	// Stop explains a decision not to retry; it is recorded as the
	// failure reason, after the class (so it does not repeat the class).
	Stop string
	// CrashLoop marks a stop by the fast crash-loop detector (class stays
	// unknown: the task is interrupted, not blocked).
	CrashLoop bool
	// Limit marks a stop at a usage limit with a stated reset: the task
	// waits for it parked, and resumes without a human.
	Limit bool
}

// Decide returns what to do after the last of history (oldest first),
// at time now. It is a pure function of its arguments.
func (p Policy) Decide(history []Attempt, now time.Time) Decision {
	if len(history) == 0 {
		return Decision{Stop: "no failure to decide on"}
	}
	last := history[len(history)-1].Failure
	// Consecutive failures of the same class count as one streak.
	streak := 0
	for i := len(history) - 1; i >= 0 && history[i].Failure.Class == last.Class; i-- {
		streak++
	}
	switch {
	case last.Class.Fatal(), last.Class == agent.Budget, last.Class == agent.ResumeRefused:
		// A resume refused is answered by a new session (runResuming),
		// never by asking again for the one that is not there.
		return Decision{Stop: last.Reason}
	case last.ResetAt.After(now) && last.Class.Transient():
		// A limit that says when it lifts is waited out with the task
		// parked, not in a running turn: the reconciler holds the task
		// until then and the daemon resumes it (however long that is).
		return Decision{Stop: last.Reason, Limit: true}
	case last.Class == agent.TransientUnreachable && p.UnreachableFor > 0:
		since := history[len(history)-streak].At
		if !since.IsZero() && now.Sub(since) >= p.UnreachableFor {
			return Decision{Stop: UnreachableStop(now.Sub(since), p.UnreachableFor, streak, last.Reason)}
		}
	case last.Class == agent.Unknown:
		if p.crashLoop(history) {
			return Decision{Stop: fmt.Sprintf("crash loop: %d failures in a row, each under %s: %s", p.CrashLoopRuns, p.CrashLoopUnder, last.Reason), CrashLoop: true}
		}
		if streak >= p.UnknownAttempts {
			return Decision{Stop: fmt.Sprintf("unknown failure %d times in a row: %s", streak, last.Reason)}
		}
	}
	return Decision{Retry: true, Delay: Delay(streak)}
}

// crashLoop applies the fast-fail detector, to unknown failures only: a
// 429 comes back in milliseconds, so three in a row would abort a turn
// that was about to succeed.
func (p Policy) crashLoop(history []Attempt) bool {
	if p.CrashLoopRuns <= 0 || len(history) < p.CrashLoopRuns {
		return false
	}
	for _, a := range history[len(history)-p.CrashLoopRuns:] {
		if a.Failure.Class != agent.Unknown || a.Ran >= p.CrashLoopUnder {
			return false
		}
	}
	return true
}

// UnreachableStop is the one wording of "the API stayed unreachable":
// what was tried, for how long, and the last error.
func UnreachableStop(elapsed, limit time.Duration, attempts int, reason string) string {
	s := fmt.Sprintf("the agent's API stayed unreachable for %s (lazy.unreachableTimeout is %s) over %s, the agent retrying by itself within each",
		elapsed.Round(time.Second), limit, words.Count(attempts, "attempt", "attempts"))
	if reason != "" {
		s += "; last error: " + reason
	}
	return s
}
