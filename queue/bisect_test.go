package queue

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// ceilLog2 is ceil(log2 n) for n >= 1.
func ceilLog2(n int) int { return bits.Len(uint(n - 1)) }

// culpritsGate fails every tree that holds one of bad.
func culpritsGate(bad ...int) func(Test) (bool, error) {
	return func(t Test) (bool, error) {
		for _, e := range t.Entries {
			if slices.Contains(bad, e) {
				return false, nil
			}
		}
		return true, nil
	}
}

// checkInvariants holds for every bisection, whatever the verdicts:
// each entry is decided exactly once (landed or a culprit), what lands
// is in train order, the target only moves to trees that passed (each
// passing test's tree is what passed before it plus its part, and what
// lands is exactly the union of those parts), and each culprit's
// failing test is the tree of what passed before it plus it.
func checkInvariants(t *testing.T, n, size int, b Bisected) {
	t.Helper()
	seen := map[int]int{}
	for _, e := range b.Landed {
		seen[e]++
	}
	for _, c := range b.Culprits {
		seen[c.Entry]++
	}
	for _, e := range b.Undecided {
		seen[e]++
	}
	for i := 0; i < n; i++ {
		if seen[i] != 1 {
			t.Fatalf("n=%d size=%d: entry %d decided %d times: %+v", n, size, i, seen[i], b)
		}
	}
	if !slices.IsSorted(b.Landed) {
		t.Fatalf("n=%d size=%d: landed out of order %v", n, size, b.Landed)
	}
	// Replay the target: it starts at the base and moves only on a pass.
	var target []int
	found := 0
	for i, v := range b.Verdicts {
		if v.Index != i {
			t.Fatalf("test %d has index %d", i, v.Index)
		}
		if !slices.Equal(v.Entries[:len(v.Entries)-v.New], target) {
			t.Fatalf("n=%d size=%d: test %d gated %v, not on what passed before it %v", n, size, i, v.Entries, target)
		}
		if v.Passed {
			target = slices.Clone(v.Entries)
		}
	}
	if !slices.Equal(target, b.Landed) {
		t.Fatalf("n=%d size=%d: the target ended at %v, landed %v", n, size, target, b.Landed)
	}
	// A culprit's tree failed twice: in the bisection and in the
	// confirming run, the same tree; and it was isolated within
	// ceil(log2 N)+1 rounds of its search, whatever the verdicts.
	for _, c := range b.Culprits {
		f, first := b.Verdicts[c.Failed], b.Verdicts[c.First]
		if f.Passed || f.Last() != c.Entry || !f.Confirm || first.Passed || c.First >= c.Failed {
			t.Fatalf("n=%d size=%d: culprit %d's tests %+v, %+v did not both fail on its tree", n, size, c.Entry, first, f)
		}
		if bound := ceilLog2(min(n, max(size, 1))) + 1; c.Round > bound {
			t.Fatalf("n=%d size=%d: culprit %d isolated in round %d, over %d", n, size, c.Entry, c.Round, bound)
		}
		found++
	}
	for _, e := range b.Cleared {
		if !slices.Contains(b.Landed, e) || !b.Vouched[e].Confirm {
			t.Fatalf("n=%d size=%d: cleared %d did not land on its confirming run: %+v", n, size, e, b)
		}
	}
	for e, v := range b.Vouched {
		if !v.Passed || !slices.Contains(v.Entries, e) {
			t.Fatalf("entry %d vouched by %+v", e, v)
		}
	}
	if len(b.Vouched) != len(b.Landed) || found != len(b.Culprits) {
		t.Fatalf("vouched %d for %d landed", len(b.Vouched), len(b.Landed))
	}
}

// TestBisectIsolatesEveryOneCulprit: for every train of 1..16 entries in
// one batch and every culprit position, the culprit is isolated within
// ceil(log2 N)+1 rounds, every other entry lands exactly once, and the
// target moves only to trees that passed.
func TestBisectIsolatesEveryOneCulprit(t *testing.T) {
	for n := 1; n <= 16; n++ {
		for c := 0; c < n; c++ {
			b, err := Bisect(n, n, culpritsGate(c))
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, n, n, b)
			if len(b.Culprits) != 1 || b.Culprits[0].Entry != c {
				t.Fatalf("n=%d culprit %d: isolated %+v", n, c, b.Culprits)
			}
			if r := b.Culprits[0].Round; r > ceilLog2(n)+1 {
				t.Fatalf("n=%d culprit %d: isolated in round %d, over %d", n, c, r, ceilLog2(n)+1)
			}
			if len(b.Landed) != n-1 {
				t.Fatalf("n=%d culprit %d: landed %v", n, c, b.Landed)
			}
			for _, v := range b.Verdicts {
				if v.Passed && slices.Contains(v.Entries, c) {
					t.Fatalf("a tree with the culprit passed: %+v", v)
				}
			}
			if len(b.Cleared) != 0 {
				t.Fatalf("n=%d culprit %d: cleared %v", n, c, b.Cleared)
			}
			if n == 8 && len(b.Verdicts) > 6 {
				t.Fatalf("8 entries, culprit %d: %d gate runs, over 6", c, len(b.Verdicts))
			}
		}
	}
}

// TestBisectEightWithOneFailingCostsAtMostSix pins the figures of the
// issue's case, per culprit position: the bisection (4 runs, 3 when the
// culprit is last), the culprit's confirming run, and the rest gated
// again.
func TestBisectEightWithOneFailingCostsAtMostSix(t *testing.T) {
	runs := make([]int, 8)
	for c := range 8 {
		b, _ := Bisect(8, 8, culpritsGate(c))
		runs[c] = len(b.Verdicts)
	}
	if want := []int{6, 6, 6, 6, 6, 6, 6, 5}; !slices.Equal(runs, want) {
		t.Fatalf("gate runs per culprit position %v, want %v", runs, want)
	}
	b, _ := Bisect(8, 8, culpritsGate())
	if len(b.Verdicts) != 1 || len(b.Landed) != 8 {
		t.Fatalf("a green batch of 8: %+v", b)
	}
}

// TestBisectTwoCulprits: both are isolated, each within ceil(log2 N)+1
// rounds of its own search, every other entry lands.
func TestBisectTwoCulprits(t *testing.T) {
	for n := 2; n <= 16; n++ {
		for c1 := 0; c1 < n; c1++ {
			for c2 := c1 + 1; c2 < n; c2++ {
				b, err := Bisect(n, n, culpritsGate(c1, c2))
				if err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, n, n, b)
				got := []int{}
				for _, c := range b.Culprits {
					got = append(got, c.Entry)
				}
				slices.Sort(got)
				if !slices.Equal(got, []int{c1, c2}) {
					t.Fatalf("n=%d culprits %d,%d: isolated %v", n, c1, c2, got)
				}
				bound := ceilLog2(n) + 1
				if b.Culprits[0].Round > bound || b.Culprits[1].Round > bound {
					t.Fatalf("n=%d culprits %d,%d: rounds %+v over %d", n, c1, c2, b.Culprits, bound)
				}
				if len(b.Landed) != n-2 {
					t.Fatalf("landed %v", b.Landed)
				}
			}
		}
	}
}

// TestBisectInBatches: a train longer than the batch is gated batch by
// batch, each on what the ones before it landed; a culprit says which
// batch of how many it failed in.
func TestBisectInBatches(t *testing.T) {
	for n := 1; n <= 16; n++ {
		for size := 1; size <= 16; size++ {
			for c := -1; c < n; c++ {
				bad := []int{}
				if c >= 0 {
					bad = append(bad, c)
				}
				b, err := Bisect(n, size, culpritsGate(bad...))
				if err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, n, size, b)
				of := (n + size - 1) / size
				if c < 0 {
					if len(b.Culprits) != 0 || len(b.Verdicts) != of {
						t.Fatalf("n=%d size=%d all good: %d runs, culprits %+v", n, size, len(b.Verdicts), b.Culprits)
					}
					continue
				}
				cu := b.Culprits[0]
				inBatch := min(size, n-(c/size)*size)
				if len(b.Culprits) != 1 || cu.Entry != c || cu.Batch != c/size+1 || cu.Of != of || cu.Round > ceilLog2(inBatch)+1 {
					t.Fatalf("n=%d size=%d culprit %d: %+v", n, size, c, b.Culprits)
				}
			}
		}
	}
}

// TestBisectSurvivesAnyVerdicts: flaky gates (every sequence of
// verdicts for short trains, and seeded random ones for long) may set
// a good entry aside or land a bad one, but never break the invariants,
// and the bisection always ends, within N*(ceil(log2 N)+1)+1 gate runs
// a batch (every tree failing sets each entry aside in turn), plus one
// confirming run an entry.
func TestBisectSurvivesAnyVerdicts(t *testing.T) {
	for n := 1; n <= 4; n++ {
		most := n*(ceilLog2(n)+2) + 1
		for mask := 0; mask < 1<<most; mask++ {
			i := 0
			b, err := Bisect(n, n, func(Test) (bool, error) {
				if i >= most {
					return false, errors.New("too many runs")
				}
				passed := mask&(1<<i) != 0
				i++
				return passed, nil
			})
			if err != nil {
				t.Fatalf("n=%d verdicts %b: %v", n, mask, err)
			}
			checkInvariants(t, n, n, b)
		}
	}
	r := rand.New(rand.NewPCG(46, 8))
	for range 2000 {
		n, size := 1+r.IntN(16), 1+r.IntN(16)
		bad, runs := r.IntN(n), 0
		b, err := Bisect(n, size, func(t Test) (bool, error) {
			if runs++; runs > n*(ceilLog2(n)+2)+n {
				return false, errors.New("too many runs")
			}
			if r.IntN(5) == 0 { // a flaky verdict
				return r.IntN(2) == 0, nil
			}
			return !slices.Contains(t.Entries, bad), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, n, size, b)
	}
}

// TestBisectStopsOnAnError: a gate that cannot say stops the bisection;
// what was decided stays, and the rest is accepted entry by entry.
func TestBisectStopsOnAnError(t *testing.T) {
	boom := errors.New("no scratch worktree")
	calls := 0
	b, err := Bisect(8, 4, func(t Test) (bool, error) {
		calls++
		if calls == 2 {
			return false, boom
		}
		return true, nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if !slices.Equal(b.Landed, []int{0, 1, 2, 3}) || !slices.Equal(b.Undecided, []int{4, 5, 6, 7}) {
		t.Fatalf("%+v", b)
	}
	checkInvariants(t, 8, 4, b)
}

// flakyGate fails every tree holding one of bad, and, whatever the tree,
// the runs whose number (from 0) is in flaky: a gate that fails at
// random, independent of what it tests.
func flakyGate(flaky []int, bad ...int) func(Test) (bool, error) {
	run := -1
	culprits := culpritsGate(bad...)
	return func(t Test) (bool, error) {
		run++
		if slices.Contains(flaky, run) {
			return false, nil
		}
		return culprits(t)
	}
}

// TestBisectAFlakyFailureSendsNoGoodEntryBack: one flaky failure, at any
// run of a train of 1..9 entries with no culprit or one at any place,
// never sets a good entry aside: the entry it made the bisection isolate
// is gated again on the same tree, passes and lands (Cleared). The real
// culprit is still isolated and confirmed, within ceil(log2 N)+1 rounds,
// and the flake costs at most ceil(log2 N)+3 runs more than no flake.
// Two flaky failures in a row on one good entry's tree are what it takes
// to send it back (the confirming run is the retry).
func TestBisectAFlakyFailureSendsNoGoodEntryBack(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for c := -1; c < n; c++ {
			bad := []int{}
			if c >= 0 {
				bad = append(bad, c)
			}
			clean, _ := Bisect(n, n, culpritsGate(bad...))
			for at := 0; at < len(clean.Verdicts)+ceilLog2(n)+3; at++ {
				b, err := Bisect(n, n, flakyGate([]int{at}, bad...))
				if err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, n, n, b)
				got := []int{}
				for _, cu := range b.Culprits {
					got = append(got, cu.Entry)
				}
				if !slices.Equal(got, bad) || len(b.Landed) != n-len(bad) {
					t.Fatalf("n=%d culprit %d flake at run %d: culprits %v, landed %v", n, c, at, got, b.Landed)
				}
				if extra := len(b.Verdicts) - len(clean.Verdicts); extra > ceilLog2(n)+3 {
					t.Fatalf("n=%d culprit %d flake at run %d: %d runs more than without it", n, c, at, extra)
				}
			}
		}
	}
	// A flake on the whole batch, then on the confirming run of the
	// entry it blamed: that entry goes back, as a good task whose gate
	// failed twice on its tree would.
	b, _ := Bisect(4, 4, flakyGate([]int{0, 3}))
	if len(b.Culprits) != 1 || b.Culprits[0].Entry != 3 || len(b.Landed) != 3 {
		t.Fatalf("%+v", b)
	}
}
