package queue

// The bisection planner of a batched train (lazy.gate.batch): which
// trees to gate, in which order, and what each verdict decides. It is
// pure and deterministic (no git, no clock, no randomness), so every
// culprit position and every sequence of verdicts can be checked
// exhaustively; the train (train.go) drives it with real gate runs.
//
// A train of n entries is cut, in order, into batches of at most size
// entries, gated one batch after another, each on the target as the
// batches before it left it. A batch is first gated whole: the target
// plus every entry of the batch, merged in order. When that fails, the
// failing part (the suspect) is split in two; the first half is gated on
// the entries that passed before it, and the second half, stacked on the
// first, is exactly the tree that failed, so it is not gated again: when
// the first half passes, the culprit is in the second. This repeats
// until the suspect is one entry, the culprit, which is set aside; the
// entries after it are then gated together again on what passed. The
// target only ever moves to a tree whose gate passed: the entries that
// passed, in order.

// Test is one tree a bisection gates: the target with Entries merged
// in order (indices into the train; every entry that passed before it
// in this train comes first).
type Test struct {
	// Index counts the tests of the train from 0; a culprit names the
	// test that failed on its tree.
	Index int
	// Batch is the batch (1-based) of Of; Round the round (1-based)
	// within the batch: round 1 gates the whole batch.
	Batch, Of, Round int
	Entries          []int
	// New is how many of Entries this test adds to what passed before it
	// (the part being gated).
	New int
}

// Last is the entry whose tree the test is: the last one merged.
func (t Test) Last() int { return t.Entries[len(t.Entries)-1] }

// Verdict is a test and whether its gate passed.
type Verdict struct {
	Test
	Passed bool
}

// Culprit is an entry a bisection set aside: the tree of the entries
// that passed before it plus it failed (test Failed), and isolated in
// round Round of batch Batch of Of.
type Culprit struct {
	Entry                    int
	Batch, Of, Round, Failed int
}

// Bisected is what a bisection decided.
type Bisected struct {
	// Landed are the entries whose tree passed, in train order: the
	// target may move to the target plus these.
	Landed []int
	// Vouched is, for each landed entry, the test that passed on a tree
	// holding it and every landed entry before it (the run that lets it
	// land unrun), and its batch's place.
	Vouched map[int]Verdict
	// Culprits are the entries set aside, in the order they were found.
	Culprits []Culprit
	// Undecided are the entries left when a gate could not say (its
	// error stopped the bisection): each is accepted on its own.
	Undecided []int
	// Verdicts are every test and its verdict, in order.
	Verdicts []Verdict
}

// Bisect plans and runs the bisection of a train of n entries in
// batches of at most size (size < 1 counts as 1): gate is asked for each
// test's verdict, one at a time. An error from gate stops it: what was
// decided stays, the rest is Undecided, and the error is returned.
func Bisect(n, size int, gate func(Test) (bool, error)) (Bisected, error) {
	if size < 1 {
		size = 1
	}
	out := Bisected{Vouched: map[int]Verdict{}}
	of := (n + size - 1) / size
	for b := 0; b < of; b++ {
		lo, hi := b*size, min((b+1)*size, n)
		batch := make([]int, 0, hi-lo)
		for i := lo; i < hi; i++ {
			batch = append(batch, i)
		}
		if err := out.batch(b+1, of, batch, gate); err != nil {
			decided := map[int]bool{}
			for _, e := range out.Landed {
				decided[e] = true
			}
			for _, c := range out.Culprits {
				decided[c.Entry] = true
			}
			for i := 0; i < n; i++ {
				if !decided[i] {
					out.Undecided = append(out.Undecided, i)
				}
			}
			return out, err
		}
	}
	return out, nil
}

// batch bisects one batch on top of what passed before it.
func (out *Bisected) batch(batch, of int, entries []int, gate func(Test) (bool, error)) error {
	var suspect []int // the tree of Landed + suspect failed (in test failedAt)
	failedAt := -1
	rest := entries // not yet gated since the last verdict
	round := 0
	for len(suspect) > 0 || len(rest) > 0 {
		round++
		part := rest
		if len(suspect) > 0 {
			part = suspect[:(len(suspect)+1)/2]
		}
		t := Test{Index: len(out.Verdicts), Batch: batch, Of: of, Round: round,
			Entries: append(append([]int(nil), out.Landed...), part...), New: len(part)}
		passed, err := gate(t)
		if err != nil {
			return err
		}
		v := Verdict{Test: t, Passed: passed}
		out.Verdicts = append(out.Verdicts, v)
		if len(suspect) == 0 {
			// The whole of what was left was gated.
			rest = nil
			switch {
			case passed:
				out.land(part, v)
			case len(part) == 1:
				out.Culprits = append(out.Culprits, Culprit{Entry: part[0], Batch: batch, Of: of, Round: round, Failed: t.Index})
			default:
				suspect, failedAt = part, t.Index
			}
			continue
		}
		second := suspect[len(part):]
		if passed {
			// The culprit is in the second half: stacked on the first, it
			// is the tree that failed already.
			out.land(part, v)
			suspect = second
			if len(second) == 1 {
				out.Culprits = append(out.Culprits, Culprit{Entry: second[0], Batch: batch, Of: of, Round: round, Failed: failedAt})
				suspect = nil
			}
			continue
		}
		// The first half fails on its own: the second is untested.
		rest = append(append([]int(nil), second...), rest...)
		suspect, failedAt = part, t.Index
		if len(part) == 1 {
			out.Culprits = append(out.Culprits, Culprit{Entry: part[0], Batch: batch, Of: of, Round: round, Failed: t.Index})
			suspect = nil
		}
	}
	return nil
}

// land adds the entries of a passing test to what lands.
func (out *Bisected) land(part []int, v Verdict) {
	for _, e := range part {
		out.Landed = append(out.Landed, e)
		out.Vouched[e] = v
	}
}
