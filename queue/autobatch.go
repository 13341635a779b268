package queue

import (
	"fmt"
	"math"
)

// Bounds of lazy.gate.batch auto.
const (
	// AutoWindow is how many of a target's newest gate outcomes AutoBatch
	// reads: enough to see a rate, few enough to follow a change.
	AutoWindow = 20
	// AutoMax caps the size AutoBatch picks: 8 entries bisect in at most
	// 4 rounds, so a culprit waits at most 4 runs for its verdict.
	AutoMax = 8
)

// Auto is the batch size lazy.gate.batch auto picked, and why, in one
// short phrase for lazy queue.
type Auto struct {
	Size int
	Why  string
}

// AutoBatch picks the batch size of a train of waiting entries from
// recent, the entries that left the target's queue, oldest first. Only
// gate outcomes count (landed or failed; a conflict or a removal says
// nothing about the gate), the newest AutoWindow of them.
//
// The rule: with p the share that failed, the size is 1/sqrt(p),
// rounded, within 1..AutoMax, and never more than are waiting; with no
// failure (or no history) it is AutoMax. Why: gating k entries as one
// tree costs one run, plus, when one of them fails (probability about
// k*p for small p), about as many again to find it; per entry that is
// about 1/k + k*p runs, least at k = 1/sqrt(p) (Dorfman's group
// testing, 1943; bisection finds the culprit for less than retesting
// each entry, so this errs towards small batches). 1 in 10 failing gives
// 3; 1 in 3 gives 2; 1 in 2 or worse gives 1, each entry on its own.
func AutoBatch(recent []Left, waiting int) Auto {
	n, failed := gateOutcomes(recent, func(Left) bool { return true })
	return autoPick(n, failed, waiting, "")
}

// AutoLaneMin is how many gate outcomes of its own a lane needs before
// lazy.gate.batch auto reads the lane's failure rate rather than the
// target's: fewer say little (one failure in two would gate each entry
// alone), and a lane by diff is named after the paths it touches, so
// the same name seldom comes back.
const AutoLaneMin = 5

// AutoBatchInLane is AutoBatch for the train of one lane (lazy.gate.lanes):
// read from the gate outcomes of the entries that went through that lane
// when it has at least AutoLaneMin of them among the newest AutoWindow,
// else from the whole target's, as AutoBatch; waiting are the lane's.
func AutoBatchInLane(recent []Left, lane string, waiting int) Auto {
	n, failed := gateOutcomes(recent, func(l Left) bool { return l.Lane == lane })
	if n >= AutoLaneMin {
		return autoPick(n, failed, waiting, fmt.Sprintf(" in lane %s", lane))
	}
	n, failed = gateOutcomes(recent, func(Left) bool { return true })
	return autoPick(n, failed, waiting, fmt.Sprintf(" in lane %s (from the target's outcomes: the lane has fewer than %d of its own)", lane, AutoLaneMin))
}

// gateOutcomes counts the newest AutoWindow gate outcomes among recent
// that keep takes, and how many of them failed.
func gateOutcomes(recent []Left, keep func(Left) bool) (n, failed int) {
	for i := len(recent) - 1; i >= 0 && n < AutoWindow; i-- {
		if !keep(recent[i]) {
			continue
		}
		switch recent[i].Outcome {
		case LeftFailed:
			failed++
		case LeftLanded:
		default:
			continue
		}
		n++
	}
	return n, failed
}

// autoPick is AutoBatch's rule on n gate outcomes of which failed
// failed; where says whose train it is for ("" for the target's).
func autoPick(n, failed, waiting int, where string) Auto {
	size := AutoMax
	var why string
	switch {
	case n == 0:
		why = "no gate outcomes yet"
	case failed == 0:
		why = fmt.Sprintf("none of the last %d failed", n)
	default:
		size = int(math.Round(math.Sqrt(float64(n) / float64(failed))))
		size = min(max(size, 1), AutoMax)
		why = fmt.Sprintf("%d of the last %d failed", failed, n)
	}
	if waiting >= 1 && size > waiting {
		size = waiting
		why += fmt.Sprintf(", %d waiting", waiting)
	}
	return Auto{Size: size, Why: fmt.Sprintf("lazy.gate.batch auto chose %d%s: %s", size, where, why)}
}
