package queue

import (
	"fmt"
	"strings"
	"testing"
)

// outcomes is a log of n gate outcomes, every every-th failed (none
// when every is 0), oldest first.
func outcomes(n, every int) []Left {
	var out []Left
	for i := 1; i <= n; i++ {
		o := LeftLanded
		if every > 0 && i%every == 0 {
			o = LeftFailed
		}
		out = append(out, Left{Task: fmt.Sprintf("%016x", i), Outcome: o})
	}
	return out
}

func TestAutoBatch(t *testing.T) {
	// Outcomes that say nothing about the gate are not counted.
	noise := append(outcomes(10, 0), Left{Outcome: LeftConflict}, Left{Outcome: LeftRemoved}, Left{Outcome: LeftError})
	// Old failures beyond the window are forgotten.
	recovered := append(outcomes(10, 1), outcomes(AutoWindow, 0)...)
	for _, tc := range []struct {
		name    string
		recent  []Left
		waiting int
		size    int
		why     string
	}{
		{"no history", nil, 20, 8, "lazy.gate.batch auto chose 8: no gate outcomes yet"},
		{"no failures", outcomes(20, 0), 20, 8, "chose 8: none of the last 20 failed"},
		{"no failures, 3 waiting", outcomes(20, 0), 3, 3, "chose 3: none of the last 20 failed, 3 waiting"},
		{"all failures", outcomes(20, 1), 20, 1, "chose 1: 20 of the last 20 failed"},
		{"1 in 10", outcomes(20, 10), 20, 3, "chose 3: 2 of the last 20 failed"},
		{"1 in 3", outcomes(18, 3), 20, 2, "chose 2: 6 of the last 18 failed"},
		{"1 in 2", outcomes(20, 2), 20, 1, "chose 1: 10 of the last 20 failed"},
		{"1 in 20", outcomes(20, 20), 20, 4, "chose 4: 1 of the last 20 failed"},
		{"only gate outcomes count", noise, 20, 8, "none of the last 10 failed"},
		{"window", recovered, 20, 8, "none of the last 20 failed"},
	} {
		got := AutoBatch(tc.recent, tc.waiting)
		if got.Size != tc.size || !strings.Contains(got.Why, tc.why) {
			t.Errorf("%s: %+v, want size %d saying %q", tc.name, got, tc.size, tc.why)
		}
		if again := AutoBatch(tc.recent, tc.waiting); again != got {
			t.Errorf("%s: %+v then %+v: not deterministic", tc.name, got, again)
		}
	}
}

// In a train split into lanes, lazy.gate.batch auto reads a lane's own
// gate outcomes once it has AutoLaneMin of them, and the target's before
// (a new lane, or a lane by diff whose name follows its paths).
func TestAutoBatchInLane(t *testing.T) {
	inLane := func(lane string, l []Left) []Left {
		for i := range l {
			l[i].Lane = lane
		}
		return l
	}
	// api: 10 outcomes, 1 in 2 failed; docs: 3, none failed; the target
	// as a whole: 1 in 20 failed besides.
	recent := append(append(outcomes(20, 20), inLane("api", outcomes(10, 2))...), inLane("docs", outcomes(3, 0))...)
	for _, tc := range []struct {
		lane    string
		waiting int
		size    int
		why     string
	}{
		{"api", 8, 1, "lazy.gate.batch auto chose 1 in lane api: 5 of the last 10 failed"},
		{"docs", 8, 2, "lazy.gate.batch auto chose 2 in lane docs (from the target's outcomes: the lane has fewer than 5 of its own): 6 of the last 20 failed"},
		{"new", 1, 1, "chose 1 in lane new (from the target's outcomes: the lane has fewer than 5 of its own): 6 of the last 20 failed"},
	} {
		got := AutoBatchInLane(recent, tc.lane, tc.waiting)
		if got.Size != tc.size || !strings.Contains(got.Why, tc.why) {
			t.Errorf("%s: %+v, want size %d saying %q", tc.lane, got, tc.size, tc.why)
		}
	}
}
