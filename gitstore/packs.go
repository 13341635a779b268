package gitstore

import (
	"context"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
)

// OrphanPack is a pack file whose index is missing (see
// gitrepo.OrphanPack).
type OrphanPack = gitrepo.OrphanPack

// OrphanPacks lists the repository's packs that have no index and were
// last written at least minAge before now (see gitrepo.PackKeeper).
func (hk Housekeeper) OrphanPacks(now time.Time, minAge time.Duration) ([]OrphanPack, error) {
	s := hk.st
	return s.objs.OrphanPacks(now, minAge)
}

// IndexPack writes the missing index of an orphaned pack with git
// index-pack; it adds a file and removes nothing.
func (hk Housekeeper) IndexPack(ctx context.Context, p OrphanPack) error {
	s := hk.st
	return s.objs.IndexPack(ctx, p)
}
