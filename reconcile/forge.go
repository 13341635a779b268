package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lazyorch/lazy/forge"
	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// DefaultForgeInterval is how often the daemon asks each forge about its
// pull requests (git config lazy.forge.syncInterval).
const DefaultForgeInterval = time.Minute

// ForgeSync configures the daemon's remote-sync sweep: tasks that are
// submitted or waiting for a forge merge follow their pull request. A
// merged pull request completes its task, a closed one returns it to
// blocked; new failing checks and review comments are delivered as
// feedback turns (AutoDeliver) and the agent is then set to work on them
// (AutoFix).
type ForgeSync struct {
	Interval    time.Duration // per forge; DefaultForgeInterval when 0
	AutoDeliver bool          // lazy.forge.autoDeliver
	AutoFix     bool          // lazy.forge.autoFix

	mu   sync.Mutex
	last map[string]time.Time // forge key -> last sync
}

// due reports whether forge key may be asked now, and if so counts this
// as its sync: the limit is per forge, not per task.
func (f *ForgeSync) due(key string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	iv := f.Interval
	if iv <= 0 {
		iv = DefaultForgeInterval
	}
	if t, ok := f.last[key]; ok && now.Sub(t) < iv {
		return false
	}
	if f.last == nil {
		f.last = map[string]time.Time{}
	}
	f.last[key] = now
	return true
}

// wouldBeDue is due without counting a sync: whether key may be asked
// now.
func (f *ForgeSync) wouldBeDue(key string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	iv := f.Interval
	if iv <= 0 {
		iv = DefaultForgeInterval
	}
	t, ok := f.last[key]
	return !ok || now.Sub(t) >= iv
}

// quietForge is what the forge sweep saw on a pass over a kept view that
// did nothing: the forges its tasks follow. While the view stays (so do
// the records, and what they say about their forges) and none of those
// forges is due, a pass would again do nothing, so it skips the walk
// over submitted tasks, which wait for their forges for days.
type quietForge struct {
	gen  uint64 // the view it was read from; 0: nothing kept
	keys []string
}

// forgeSweep owns the forge glue of a pass: the daemon's remote-sync
// sweep, which follows submitted and forge-merging tasks' pull requests
// (merged, closed, failing checks, new feedback), and the ordinary
// sweep's handling of a forge-pending merge. It holds the forge
// settings, the capabilities it acts through, and its memory across
// passes; nothing of the other sweeps.
type forgeSweep struct {
	// cfg is the daemon's forge settings; nil outside the daemon, where
	// only sweepForgePending runs.
	cfg       *ForgeSync
	env       *wire.Env
	snapshots snapshotLoader
	now       func() time.Time
	mem       *forgeMemory
}

// forgeMemory is what the forge sweep keeps between passes: each
// submitted or merging task's reading of its record, by task, valid
// while its commit stays (keys), and what a pass that did nothing saw
// (quiet).
type forgeMemory struct {
	mu    sync.Mutex
	keys  map[string]forgeKey
	quiet quietForge
	// looks counts the tasks the sweep walked: what tests count to show
	// a pass whose forges are not due walks none.
	looks atomic.Int64
}

// forge returns the reconciler's forge glue for one pass.
func (r *Reconciler) forge() *forgeSweep {
	return &forgeSweep{cfg: r.Forge, env: r.Env, snapshots: r, now: r.now, mem: &r.forgeMem}
}

// forgeStill reports whether the forge sweep may skip this pass (see
// quietForge).
func (f *forgeSweep) forgeStill(v *view, now time.Time) bool {
	f.mem.mu.Lock()
	q := f.mem.quiet
	f.mem.mu.Unlock()
	if v.gen == 0 || q.gen != v.gen {
		return false
	}
	for _, k := range q.keys {
		if f.cfg.wouldBeDue(k, now) {
			return false
		}
	}
	return true
}

// forgeKey is what one record commit says about its task's forge: skip
// (nothing to follow) or the forge key its pull request is asked under.
type forgeKey struct {
	commit      gitrepo.OID
	key, remote string
	skip        bool
}

// sweepForgePending handles a forge-pending merge in the ordinary sweep
// (no forge is asked): one whose accept died before requesting the merge
// is stranded and goes back to submitted; one the forge was asked to
// merge is left for the forge sync. The caller holds the task lock.
func (f *forgeSweep) sweepForgePending(ctx context.Context, sn *task.Snapshot) ([]Action, error) {
	if sn.Task.Forge.MergeRequested != nil {
		return nil, nil
	}
	out, err := f.env.Landing().Remote().StrandedForgeAccept(ctx, sn.Task.ID)
	if err != nil || out == nil {
		return nil, err
	}
	return []Action{{TaskID: sn.Task.ID, Slug: sn.Task.Slug, From: machine.Merging, To: out.Task.Status, Why: "a forge accept died before requesting the merge"}}, nil
}

// sweepForge is the remote-sync sweep. On a kept view it walks the
// submitted and merging tasks only when a forge they follow is due.
func (f *forgeSweep) sweepForge(ctx context.Context, v *view) ([]Action, error) {
	fs := f.cfg
	now := f.now()
	if f.forgeStill(v, now) {
		return nil, nil
	}
	type group struct {
		fg  forge.Forge
		err error
	}
	groups := map[string]*group{}
	skipped := map[string]bool{}
	var actions []Action
	var errs []error
	// What a record says about its forge is kept by record commit, so a
	// pass whose forges are not due loads no snapshot: submitted tasks
	// wait for their forges, often for days.
	f.mem.mu.Lock()
	old := f.mem.keys
	f.mem.mu.Unlock()
	keep := make(map[string]forgeKey, len(old))
	quiet := quietForge{gen: v.gen}
	defer func() {
		f.mem.mu.Lock()
		f.mem.keys = keep
		f.mem.mu.Unlock()
		if v.gen == 0 || len(actions) > 0 || len(errs) > 0 {
			quiet = quietForge{}
		}
		f.mem.mu.Lock()
		f.mem.quiet = quiet
		f.mem.mu.Unlock()
	}()
	for _, i := range v.forge {
		e := &v.entries[i]
		f.mem.looks.Add(1)
		var sn *task.Snapshot
		k, ok := old[e.ID]
		if !ok || k.commit != e.Commit {
			var err error
			if sn, err = f.snapshots.load(e.ID); err != nil {
				errs = append(errs, err)
				continue
			}
			rec := sn.Task.Forge
			k = forgeKey{commit: e.Commit}
			if rec == nil || rec.Number <= 0 || (sn.Task.Status == machine.Merging && (!sn.Task.ForgePending() || rec.MergeRequested == nil)) {
				k.skip = true
			} else {
				k.key, k.remote = rec.Kind+" "+rec.Remote, rec.Remote
			}
		}
		keep[e.ID] = k
		if k.skip {
			continue
		}
		key := k.key
		if skipped[key] {
			continue
		}
		g := groups[key]
		if g == nil {
			quiet.keys = append(quiet.keys, key)
			if !fs.due(key, now) {
				skipped[key] = true
				continue
			}
			g = &group{}
			g.fg, g.err = f.env.Submission().OpenForge(ctx, k.remote)
			if g.err == nil {
				g.err = g.fg.Ready(ctx)
			}
			groups[key] = g
		}
		if sn == nil {
			var err error
			if sn, err = f.snapshots.load(e.ID); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if g.err != nil {
			errs = append(errs, fmt.Errorf("forge sync of %s: %w", sn.Task.Slug, g.err))
			continue
		}
		as, err := f.syncTask(ctx, g.fg, sn)
		actions = append(actions, as...)
		if err != nil {
			errs = append(errs, fmt.Errorf("forge sync of %s: %w", sn.Task.Slug, err))
		}
	}
	return actions, errors.Join(errs...)
}

// syncTask follows one task's pull request.
func (f *forgeSweep) syncTask(ctx context.Context, fg forge.Forge, sn *task.Snapshot) ([]Action, error) {
	id, slug, from := sn.Task.ID, sn.Task.Slug, sn.Task.Status
	pr, err := fg.View(ctx, sn.Task.Forge.Number)
	if err != nil {
		return nil, err
	}
	// The forge was asked without the lock; act under it, and leave a
	// task an accept or submit is working on to them.
	unlock, err := f.env.TryLockTask(id)
	if errors.Is(err, flock.ErrHeld) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	act := func(out *task.Snapshot, why string) []Action {
		if out == nil {
			return nil
		}
		return []Action{{TaskID: id, Slug: slug, From: from, To: out.Task.Status, Why: why}}
	}
	switch pr.State {
	case forge.StateMerged:
		out, kept, err := f.env.Landing().Remote().MergedOnForge(ctx, id, pr)
		unlock()
		why := fmt.Sprintf("pull request #%d was merged on the forge", pr.Number)
		for _, k := range kept {
			why += "; " + k
		}
		return act(out, why), err
	case forge.StateClosed:
		out, err := f.env.Landing().Remote().ClosedOnForge(ctx, id, pr)
		unlock()
		return act(out, fmt.Sprintf("pull request #%d was closed on the forge without merging", pr.Number)), err
	}
	if from == machine.Merging && pr.ChecksState() == forge.ChecksFailing {
		out, err := f.env.Landing().Remote().ChecksFailedOnForge(ctx, id, pr)
		unlock()
		return act(out, fmt.Sprintf("checks failed on pull request #%d; the forge will not merge it", pr.Number)), err
	}
	if from == machine.Merging && landing.Mergeable(pr) {
		// Ready, but the forge did not merge it by itself (no
		// auto-merge): ask again, as the accept did.
		if merr := fg.Merge(ctx, pr.Number, sn.Task.Forge.MergeMethod); merr == nil {
			if again, verr := fg.View(ctx, pr.Number); verr == nil && again.State == forge.StateMerged {
				out, kept, err := f.env.Landing().Remote().MergedOnForge(ctx, id, again)
				unlock()
				why := fmt.Sprintf("pull request #%d was ready; merged on the forge", pr.Number)
				for _, k := range kept {
					why += "; " + k
				}
				return act(out, why), err
			}
		}
	}
	err = f.env.Submission().SyncPR(ctx, id, pr)
	unlock()
	if err != nil || from != machine.Submitted || !f.cfg.AutoDeliver {
		return nil, err
	}
	f.readLogs(ctx, fg, sn.Task.Forge, pr)
	out, err := f.env.Submission().DeliverForgeFeedback(ctx, id, pr, f.cfg.AutoFix && f.env.Launch != nil)
	if out == nil {
		return nil, err
	}
	why := fmt.Sprintf("delivered new feedback from pull request #%d", pr.Number)
	if out.Task.Status == machine.Working {
		why += "; the agent is working on it (lazy.forge.autoFix)"
	}
	return act(out, why), err
}

// readLogs adds the CI log tail to each failed check not delivered yet,
// when the forge can read logs. A log that cannot be read is left out:
// the check's summary and link still go.
func (f *forgeSweep) readLogs(ctx context.Context, fg forge.Forge, rec *task.ForgeRecord, pr *forge.PR) {
	lr, ok := fg.(forge.LogReader)
	if !ok {
		return
	}
	head := pr.HeadSHA
	if head == "" {
		head = rec.HeadSHA
	}
	for i := range pr.Checks {
		c := &pr.Checks[i]
		if c.State != forge.ChecksFailing || rec.WasDelivered("check:"+c.Name+"@"+head) {
			continue
		}
		if l, err := lr.CheckLog(ctx, *c); err == nil {
			c.Log = l
		}
	}
}
