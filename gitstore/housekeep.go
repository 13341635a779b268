package gitstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/gitcli"
)

// NeedsHousekeeping reports whether loose objects have piled up past
// LooseObjectLimit. It samples enough fan-out directories for the
// estimate to be meaningful at the configured limit, and costs a handful
// of readdirs.
func (hk Housekeeper) NeedsHousekeeping() bool {
	s := hk.st
	if s.LooseObjectLimit <= 0 {
		return false
	}
	// Expect about 16 objects in the sample at the limit.
	sample := 256 * 16 / s.LooseObjectLimit
	return s.objs.LooseEstimate(sample) > s.LooseObjectLimit
}

// HousekeepResult says what a housekeeping pass did.
type HousekeepResult struct {
	Ran          bool
	LooseBefore  int
	LooseAfter   int
	LooseRefsWas int
}

// Housekeep packs loose refs and loose objects with the git CLI, which
// keeps every object reachable from refs/lazy/* (they are ordinary refs to
// git). Only one pass runs at a time per repository; a second caller
// returns at once with Ran false.
//
// With auto set, it does nothing unless NeedsHousekeeping, checked both
// before taking the lock and under it, so that a pass queued behind one
// that just finished exits without touching the repository.
func (hk Housekeeper) Housekeep(ctx context.Context, auto bool) (HousekeepResult, error) {
	s := hk.st
	var res HousekeepResult
	if auto && !hk.NeedsHousekeeping() {
		return res, nil
	}
	lock, err := flock.TryLock(s.repo.LazyDir("locks", "housekeep.lock"))
	if errors.Is(err, flock.ErrHeld) {
		return res, nil
	}
	if err != nil {
		return res, err
	}
	defer func() { _ = lock.Release() }()
	if auto && !hk.NeedsHousekeeping() {
		return res, nil
	}
	res.Ran = true
	res.LooseBefore = s.objs.LooseEstimate(256)
	res.LooseRefsWas = s.objs.CountLooseRefs("refs/lazy/")
	dir := s.repo.CommonDir
	steps := [][]string{
		{"pack-refs", "--all", "--prune"},
		// Incremental: packs the loose objects reachable from any ref
		// into one new pack and deletes the loose copies.
		{"repack", "-d", "-q"},
	}
	if s.objs.PackCount() > 20 {
		steps = append(steps, []string{"repack", "-a", "-d", "-q"})
	}
	for _, args := range steps {
		if err := gitcli.New(dir, args...).Run(ctx); err != nil {
			return res, fmt.Errorf("housekeeping: %w", err)
		}
	}
	res.LooseAfter = s.objs.LooseEstimate(256)
	return res, nil
}

// LooseObjects returns an exact count of loose objects (for tests and
// lazy doctor).
func (hk Housekeeper) LooseObjects() int { return hk.st.objs.LooseEstimate(256) }

// Housekeeper is the upkeep of the repository the store writes to: when
// git gc is due, running it, counting loose objects, and finding and
// indexing packs left without an index.
type Housekeeper struct{ st *Store }

// Housekeeping is the upkeep of the repository s writes to.
func (s *Store) Housekeeping() Housekeeper { return Housekeeper{st: s} }
