package landing

import (
	"context"
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/forge"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// ChecksFailedOnForge takes a forge-pending merge whose checks failed
// back to submitted: the forge will not merge it, and the failing checks
// are delivered as feedback from there.
func (e *Remote) ChecksFailedOnForge(ctx context.Context, id string, pr *forge.PR) (*task.Snapshot, error) {
	return e.forgeRestore(ctx, id, machine.Submitted, pr, fmt.Sprintf("checks failed on pull request #%d (%s): %s; the forge will not merge it", pr.Number, pr.URL, strings.Join(failing(pr), ", ")))
}

// StrandedForgeAccept takes a forge-pending merge that never asked the
// forge to merge (its accept died first) back to submitted. The caller
// holds the task lock, so no accept is running.
func (e *Remote) StrandedForgeAccept(ctx context.Context, id string) (*task.Snapshot, error) {
	sn, err := e.Store.Load(id)
	if err != nil || !sn.Task.ForgePending() || sn.Task.Status != machine.Merging || sn.Task.Forge.MergeRequested != nil {
		return nil, err
	}
	return e.forgeRestore(ctx, id, machine.Submitted, nil, "a forge accept died before asking the forge to merge; the task is submitted again (lazy accept retries)")
}
