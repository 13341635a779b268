package cli

import (
	"context"
	"encoding/json"

	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// overlaps is the overlap check of lazy list, show and watch (see
// wire.Env.Overlaps), keyed by task id. It never fails a view: a check
// that cannot be made shows no overlaps. cache (nil: none) serves views
// that refresh.
func (a *app) overlaps(ctx context.Context, entries []task.Entry, cache *review.OverlapCache) map[string]review.TaskOverlaps {
	// A read-only check needs neither the actor nor the turn policy, so a
	// bad lazy.* setting does not hide it.
	env := wire.New(a.store, session.Env{RepoDir: a.repoDir()})
	ov, err := env.Review().OverlapsOf(ctx, entries, cache)
	if err != nil {
		return nil
	}
	return ov
}

// taskOverlaps is the check for one task (lazy show): only a task that
// is unfinished and started on this machine can overlap, so any other
// lists nothing.
func (a *app) taskOverlaps(ctx context.Context, sn *task.Snapshot) review.TaskOverlaps {
	env := wire.New(a.store, session.Env{RepoDir: a.repoDir()})
	if sn.Task.Status.IsTerminal() || !env.Owns(sn) {
		return review.TaskOverlaps{}
	}
	entries, err := a.store.List()
	if err != nil {
		return review.TaskOverlaps{}
	}
	return a.overlaps(ctx, entries, nil)[sn.Task.ID]
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
