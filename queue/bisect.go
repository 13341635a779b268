package queue

import "slices"

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
// until the suspect is one entry. That entry's tree (what passed before
// it plus it) failed once; before it is set aside as the culprit, the
// same tree is gated once more (bors's retry of a failure, but only of
// the one tree that would send an entry back): a gate that fails at
// random, independent of the tree (a flaky test), would otherwise make a
// good entry look like the culprit whenever it failed a batch, since the
// bisection then blames the last entry it cannot clear. When the second
// run passes, the first failure was the gate's, not the entry's: the
// entry lands, vouched for by that run. When it fails too, the entry is
// the culprit and is set aside with that run; a good entry is thus sent
// back only when its exact tree failed twice. The entries after it are
// then gated together again on what passed, a new search whose rounds
// count from 1 again, so each culprit is isolated within ceil(log2 N)+1
// rounds of the search that found it, whatever failed before (the
// confirming run is not a round: it splits nothing). The target only
// ever moves to a tree whose gate passed: the entries that passed, in
// order.

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
	// Confirm says the test gates again the tree of an entry the
	// bisection isolated (in round Round), which failed once already.
	Confirm bool
	// Then, for a confirming test, are the entries the next test adds
	// (on what passed, without the entry) when the confirmation fails, as
	// it does unless the gate is flaky: a gate that runs trees in parallel
	// may start that test beside this one, so the confirmation costs no
	// round of waiting.
	Then []int
}

// Last is the entry whose tree the test is: the last one merged.
func (t Test) Last() int { return t.Entries[len(t.Entries)-1] }

// Verdict is a test and whether its gate passed.
type Verdict struct {
	Test
	Passed bool
}

// Culprit is an entry a bisection set aside: the tree of the entries
// that passed before it plus it failed in test First, isolated in round
// Round of batch Batch of Of, and failed again in test Failed, the
// confirming run.
type Culprit struct {
	Entry                           int
	Batch, Of, Round, First, Failed int
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
	// Cleared are the entries a bisection isolated whose confirming run
	// passed (the first failure was the gate's): they landed, and are in
	// Landed too.
	Cleared []int
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
		isolated := -1 // an entry whose tree (Landed + it) failed in test failedAt
		switch {
		case len(suspect) == 0:
			// The whole of what was left was gated.
			rest = nil
			switch {
			case passed:
				out.land(part, v)
			case len(part) == 1:
				isolated, failedAt = part[0], t.Index
			default:
				suspect, failedAt = part, t.Index
			}
		case passed:
			// The culprit is in the second half: stacked on the first, it
			// is the tree that failed already.
			out.land(part, v)
			suspect = suspect[len(part):]
			if len(suspect) == 1 {
				isolated, suspect = suspect[0], nil
			}
		default:
			// The first half fails on its own: the second is untested.
			rest = append(append([]int(nil), suspect[len(part):]...), rest...)
			suspect, failedAt = part, t.Index
			if len(part) == 1 {
				isolated, suspect = part[0], nil
			}
		}
		if isolated < 0 {
			continue
		}
		if err := out.confirm(isolated, round, failedAt, Test{Batch: batch, Of: of, Then: rest}, gate); err != nil {
			return err
		}
		// What is left starts a search of its own.
		round = 0
	}
	return nil
}

// confirm gates once more the tree of entry e, which the bisection
// isolated in round (its tree failed in test first): the entry is the
// culprit only when it fails again; when it passes, it lands.
func (out *Bisected) confirm(e, round, first int, place Test, gate func(Test) (bool, error)) error {
	t := Test{Index: len(out.Verdicts), Batch: place.Batch, Of: place.Of, Round: round,
		Entries: append(append([]int(nil), out.Landed...), e), New: 1, Confirm: true, Then: slices.Clone(place.Then)}
	passed, err := gate(t)
	if err != nil {
		return err
	}
	v := Verdict{Test: t, Passed: passed}
	out.Verdicts = append(out.Verdicts, v)
	if passed {
		out.land([]int{e}, v)
		out.Cleared = append(out.Cleared, e)
		return nil
	}
	out.Culprits = append(out.Culprits, Culprit{Entry: e, Batch: place.Batch, Of: place.Of, Round: round, First: first, Failed: t.Index})
	return nil
}

// land adds the entries of a passing test to what lands.
func (out *Bisected) land(part []int, v Verdict) {
	for _, e := range part {
		out.Landed = append(out.Landed, e)
		out.Vouched[e] = v
	}
}
