package pool

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/lazyorch/lazy/task"
)

// DefaultMaxLease is lazy.pool.maxLease when it is not set: five times a
// runner's default lease (2m), so a runner may lengthen its lease a
// little, and a claim that says it holds for longer counts as expired.
const DefaultMaxLease = 10 * time.Minute

// MaxGeneration bounds a claim's generation. A claim is taken over at
// most once a lease, so no pool comes near it (2^53 take-overs at one a
// second last 285 million years); a claim beyond it was written by
// hand, and its generation is never the base of lazy's arithmetic, so
// 2^64-1 cannot wrap into a low generation that looks valid.
const MaxGeneration = 1 << 53

// ErrGenerations says a claim's generation cannot grow any further.
var ErrGenerations = errors.New("the claim's generation is at lazy's maximum")

// NextGeneration is the generation of the claim that follows one at g:
// g+1, or ErrGenerations when g is at MaxGeneration or beyond (nothing
// lazy accepts), so the addition never wraps.
func NextGeneration(g uint64) (uint64, error) {
	if g >= MaxGeneration {
		return 0, fmt.Errorf("%w (%d)", ErrGenerations, uint64(MaxGeneration))
	}
	return g + 1, nil
}

// Problem is a pool ref lazy skipped, and why: anyone who can push can
// write one, and none may fail a runner's round or lazy pool.
type Problem struct {
	// Ref is the ref on the remote (refs/lazy-pool/claims/<task>).
	Ref string `json:"ref"`
	// Object is what it points at, as last fetched.
	Object string `json:"object,omitempty"`
	// Task is the task whose claim it is, for a claim ref named by a
	// task id.
	Task   string `json:"task,omitempty"`
	Reason string `json:"reason"`
}

func sortProblems(ps []Problem) {
	slices.SortFunc(ps, func(a, b Problem) int { return strings.Compare(a.Ref, b.Ref) })
}

// maxLease is the longest lease the pool accepts from now on.
func (r *Remote) maxLease() time.Duration {
	if r.MaxLease > 0 {
		return r.MaxLease
	}
	return DefaultMaxLease
}

// Live reports whether the claim holds the task at now: a claim lazy
// accepted (no Problem), not released, whose lease has not run out.
func (h Held) Live(now time.Time) bool { return h.Problem == "" && h.Claim.Live(now) }

// maxName bounds a runner id lazy accepts.
const maxName = 128

// checkName says what is wrong with a runner id ("" when nothing).
func checkName(what, s string) string {
	switch {
	case s == "":
		return what + " is empty"
	case len(s) > maxName:
		return fmt.Sprintf("%s is %d bytes long, over %d", what, len(s), maxName)
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) || r == unicode.ReplacementChar }) >= 0:
		return what + " holds control or space characters"
	}
	return ""
}

// checkClaim says why claim c, read from the ref of task id, is not
// one lazy accepts at now ("" when it is): it must name that task and
// a runner, have a generation in range, and a lease that runs out no
// later than maxLease from now.
func checkClaim(id string, c Claim, now time.Time, maxLease time.Duration) string {
	switch {
	case c.Task != id:
		return fmt.Sprintf("it names the task %.40q, not the task of its ref", c.Task)
	case c.Generation == 0 || c.Generation > MaxGeneration:
		return fmt.Sprintf("its generation %d is out of range (1 to 2^53)", c.Generation)
	case c.Expires.IsZero():
		return "it has no lease"
	case !c.Released && c.Expires.Sub(now) > maxLease:
		return fmt.Sprintf("its lease runs until %s, longer than lazy.pool.maxLease (%s) from now, so it counts as expired", c.Expires.UTC().Format(time.RFC3339), maxLease)
	}
	if why := checkName("its runner", c.Runner); why != "" {
		return why
	}
	return ""
}

// Bounds of a runner record lazy accepts.
const (
	maxLabels   = 64
	maxAgents   = 16
	maxTurns    = 1000
	maxHoldings = 1000
)

// checkRunner says why runner record rn, read from the ref of runner
// name, is not one lazy accepts at now ("" when it is).
func checkRunner(name string, rn Runner, now time.Time, maxLease time.Duration) string {
	if why := checkName("its id", rn.ID); why != "" {
		return why
	}
	switch {
	case rn.ID != name:
		return fmt.Sprintf("its id %.40q is not the name of its ref", rn.ID)
	case len(rn.Labels) > maxLabels:
		return fmt.Sprintf("it offers %d labels, over %d", len(rn.Labels), maxLabels)
	case len(rn.Agents) > maxAgents:
		return fmt.Sprintf("it names %d agents, over %d", len(rn.Agents), maxAgents)
	case rn.MaxTasks < 0 || rn.MaxTasks > maxTurns:
		return fmt.Sprintf("its max_tasks %d is out of range (0 to %d)", rn.MaxTasks, maxTurns)
	case len(rn.Holding) > maxHoldings:
		return fmt.Sprintf("it holds %d tasks, over %d", len(rn.Holding), maxHoldings)
	case rn.Seen.Sub(now) > maxLease || rn.Started.Sub(now) > maxLease:
		return fmt.Sprintf("it says it was seen at %s, later than lazy.pool.maxLease (%s) from now", rn.Seen.UTC().Format(time.RFC3339), maxLease)
	}
	for _, l := range append(slices.Clone(rn.Labels), rn.Agents...) {
		if !task.PoolLabel.MatchString(l) {
			return fmt.Sprintf("%.40q is not a label or agent name", l)
		}
	}
	for _, id := range rn.Holding {
		if !task.ValidID(id) {
			return fmt.Sprintf("it holds %.40q, which is not a task id", id)
		}
	}
	return ""
}
