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
	n, failed := 0, 0
	for i := len(recent) - 1; i >= 0 && n < AutoWindow; i-- {
		switch recent[i].Outcome {
		case LeftFailed:
			failed++
		case LeftLanded:
		default:
			continue
		}
		n++
	}
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
	return Auto{Size: size, Why: fmt.Sprintf("lazy.gate.batch auto chose %d: %s", size, why)}
}
