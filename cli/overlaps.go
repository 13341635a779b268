package cli

import (
	"context"
	"encoding/json"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// overlapCheck is the overlap check of lazy list, show and watch (see
// wire.Env.Overlaps) on the tasks of store, whose repository is in
// repoDir. A read-only check needs neither the actor nor the turn
// policy, so a bad lazy.* setting does not hide it.
type overlapCheck struct {
	store   *gitstore.Store
	repoDir string
}

// overlapCheckOf is the check of an opened run's repository.
func overlapCheckOf(a *app) overlapCheck {
	return overlapCheck{store: a.store, repoDir: a.repoDir()}
}

// of checks entries, keyed by task id. It never fails a view: a check
// that cannot be made shows no overlaps. cache (nil: none) serves views
// that refresh.
func (c overlapCheck) of(ctx context.Context, entries []task.Entry, cache *review.OverlapCache) map[string]review.TaskOverlaps {
	env := wire.New(c.store, session.Env{RepoDir: c.repoDir})
	ov, err := env.Review().OverlapsOf(ctx, entries, cache)
	if err != nil {
		return nil
	}
	return ov
}

// task is the check for one task (lazy show): only a task that is
// unfinished and started on this machine can overlap, so any other lists
// nothing.
func (c overlapCheck) task(ctx context.Context, sn *task.Snapshot) review.TaskOverlaps {
	env := wire.New(c.store, session.Env{RepoDir: c.repoDir})
	if sn.Task.Status.IsTerminal() || !env.Owns(sn) {
		return review.TaskOverlaps{}
	}
	entries, err := c.store.List()
	if err != nil {
		return review.TaskOverlaps{}
	}
	return c.of(ctx, entries, nil)[sn.Task.ID]
}

// withOverlaps adds a task's overlaps to its summary's JSON object
// (lazy list --json), as the fields review.TaskOverlaps names; a task
// without any is written as it was.
func withOverlaps(obj []byte, o review.TaskOverlaps) []byte {
	if o.Empty() || len(obj) < 2 || obj[len(obj)-1] != '}' {
		return obj
	}
	fields, err := json.Marshal(o)
	if err != nil || len(fields) < 2 {
		return obj
	}
	out := append([]byte(nil), obj[:len(obj)-1]...)
	if len(obj) > 2 {
		out = append(out, ',')
	}
	out = append(out, fields[1:len(fields)-1]...)
	return append(out, '}')
}
