package reconcile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/lazyorch/lazy/gitcli"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/ops"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/worktree"
)

// step applies one guarded system transition under the task lock. apply
// returns "" to decline (the task is no longer what the sweep saw), or
// the reason it recorded.
func (r *Reconciler) step(ctx context.Context, id string, apply func(s *gitstore.Snapshot) string) (*Action, error) {
	unlock, err := r.Env.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return r.stepLocked(ctx, id, apply)
}

func (r *Reconciler) stepLocked(ctx context.Context, id string, apply func(s *gitstore.Snapshot) string) (*Action, error) {
	var act *Action
	_, _, err := r.Env.Store.Update(ctx, id, func(s *gitstore.Snapshot) (*gitstore.Op, error) {
		from := s.Task.Status
		why := apply(s)
		if why == "" {
			act = nil
			return nil, nil
		}
		act = &Action{TaskID: id, Slug: s.Task.Slug, From: from, To: s.Task.Status, Why: why}
		return &gitstore.Op{Name: "reconcile", Actor: machine.System, Reason: why}, nil
	})
	if err != nil {
		return nil, err // the closure ran, but nothing was written
	}
	return act, nil
}

// sweepPairing parks a pairing task whose pairing process is gone (spec:
// "Stale pairing sweep"), to conflict when violations are pending.
func (r *Reconciler) sweepPairing(ctx context.Context, id string) ([]Action, error) {
	sn, err := r.load(id)
	if err != nil || sn.Task.Status != machine.Pairing || !r.Env.Owns(sn) {
		return nil, err
	}
	pd := r.proto(id)
	var p proto.Pairing
	if pd.Read(proto.PairingFile, &p) == nil && p.Session == sn.Session.ID && alive(p.PID) {
		return nil, nil
	} else if p.PID == 0 && r.now().Sub(sn.Task.UpdatedAt) < r.grace() {
		return nil, nil // lazy pair may be starting up
	}
	a, err := r.step(ctx, id, func(s *gitstore.Snapshot) string {
		if s.Task.Status != machine.Pairing {
			return ""
		}
		s.Task.Status = machine.Park(s.PendingViolations())
		return "the pairing process is gone"
	})
	if err == nil && a != nil {
		pd.Remove(proto.PairingFile)
	}
	return one(a), err
}

// sweepSessionless moves a blocked task that never had a session back to
// backlog: blocked means "waiting for review", and there is nothing to
// review (spec: "Blocked-to-backlog migration").
func (r *Reconciler) sweepSessionless(ctx context.Context, id string) ([]Action, error) {
	a, err := r.step(ctx, id, func(s *gitstore.Snapshot) string {
		if s.Task.Status != machine.Blocked || s.Session != nil || s.Task.Sessions > 0 {
			return ""
		}
		s.Task.Status = machine.Backlog
		return "blocked without a session: nothing to review, back to backlog"
	})
	return one(a), err
}

// completeZombie finishes a task whose work was found merged: zombie ->
// complete with outcome accepted.
func (r *Reconciler) completeZombie(ctx context.Context, id, why string) ([]Action, error) {
	a, err := r.step(ctx, id, func(s *gitstore.Snapshot) string {
		if s.Task.Status != machine.Zombie {
			return ""
		}
		ops.FinishAccepted(s, r.now())
		if why == "" {
			why = "its branch was merged; finished as accepted"
		}
		return why
	})
	return one(a), err
}

// sweepMerging recovers a stranded accept: a task in merging whose lock
// nobody holds (an accept in flight holds it from start to finish). The
// durable accept record says where it was going. If the squash commit
// landed, the task is finished; otherwise the TRUE prior status is
// restored and nothing on disk is touched.
func (r *Reconciler) sweepMerging(ctx context.Context, id string) ([]Action, error) {
	unlock, err := r.Env.TryLockTask(id)
	if errors.Is(err, flock.ErrHeld) {
		return nil, nil // genuinely in flight
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	sn, err := r.load(id)
	if err != nil || sn.Task.Status != machine.Merging {
		return nil, err
	}
	if rec := sn.Task.Accept; rec != nil && rec.Host != "" && rec.Host != r.Env.Store.Host() {
		return nil, nil // that host's reconciler knows whether it is alive
	}
	if sn.Task.ForgePending() {
		return r.sweepForgePending(ctx, sn)
	}
	// The destination is put back (or the accept finished) and the user's
	// stash given back, under the destination's accept lock.
	out, landed, note, err := r.Env.TryRecoverStrandedAccept(ctx, sn)
	if err != nil || out == nil || out.Task.Status == machine.Merging {
		return nil, err
	}
	why := "a stranded accept never merged; status before the accept restored"
	if landed {
		why = "a stranded accept had merged; finished as accepted"
	}
	if note != "" {
		why += "; " + note
	}
	return []Action{{TaskID: id, Slug: sn.Task.Slug, From: machine.Merging, To: out.Task.Status, Why: why}}, nil
}

// MergeLanded reports whether a stranded local accept committed its
// squash merge (see ops.MergeLanded).
func MergeLanded(ctx context.Context, repoDir string, sn *gitstore.Snapshot) (bool, error) {
	return ops.MergeLanded(ctx, repoDir, sn)
}

// AcceptTrailer is the trailer line lazy accept puts in a squash commit.
func AcceptTrailer(taskID string) string { return ops.AcceptTrailer(taskID) }

// sweepTerminal stops supervisors that finished tasks left behind and
// removes their protocol files (spec: "Terminal container sweep"). It
// reads the protocol directory, so it costs in proportion to tasks that
// ran turns and were not yet cleaned, not to all tasks.
func (r *Reconciler) sweepTerminal(ctx context.Context, entries []gitstore.Entry) ([]Action, error) {
	root := r.Env.Store.Repo().LazyDir("proto")
	dirs, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, nil
	}
	// The protocol directories are few (tasks that ran turns and were not
	// cleaned yet); the entries are all tasks. A set of the few, probed
	// once per entry, keeps the pass from building a map of every task.
	ran := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		ran[d.Name()] = true
	}
	var actions []Action
	var errs []error
	for i := range entries {
		e := &entries[i]
		if e.Err != nil || !e.Status.IsTerminal() || !ran[e.ID] {
			continue
		}
		a, err := r.cleanFinished(ctx, e.ID)
		if err != nil {
			errs = append(errs, err)
		}
		actions = append(actions, one(a)...)
	}
	return actions, errors.Join(errs...)
}

// cleanFinished stops whatever still runs for a finished task and removes
// its protocol directory, under the task lock and after re-checking that
// the task is still finished (a reopen may have raced us).
func (r *Reconciler) cleanFinished(ctx context.Context, id string) (*Action, error) {
	unlock, err := r.Env.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	sn, err := r.load(id)
	if err != nil || !sn.Task.Status.IsTerminal() {
		return nil, err
	}
	pd := r.proto(id)
	why := "removed the protocol files of a finished task"
	pid, running := r.Env.SupervisorRunning(id)
	if running {
		why = fmt.Sprintf("stopped a supervisor (pid %d) left running by a finished task", pid)
	}
	if _, err := r.Env.StopTurnProcesses(ctx, id); err != nil {
		return nil, err
	}
	if running {
		supervisorExit(pd) // its launching shell records the exit before the directory goes
	}
	if err := os.RemoveAll(string(pd)); err != nil {
		return nil, fmt.Errorf("remove %s: %w", pd, err)
	}
	return &Action{TaskID: id, Slug: sn.Task.Slug, From: sn.Task.Status, To: sn.Task.Status, Why: why}, nil
}

// sweepMerged finds parked tasks whose work was merged into their target
// branch outside lazy (spec: "Merged branch sweep") and finishes them via
// zombie. One `git for-each-ref --merged` per target branch finds the
// candidates; a candidate counts as merged only when the turns recorded
// commits and the newest is on the target, so a branch that merely has no
// commits of its own (or was fast-forwarded to upstream) never does.
func (r *Reconciler) sweepMerged(ctx context.Context, entries []gitstore.Entry) ([]Action, error) {
	// Candidates are told from the list's status and the summary bytes;
	// only they, and the parents they name, have fields decoded, and
	// those come from the cache while their commits stay the same.
	old := r.fields.take()
	keep := make(map[string]mergeFields, len(old))
	defer func() { r.fields.replace(keep) }()
	var candidates []mergeFields
	parents := map[string]*mergeFields{}
	for i := range entries {
		e := &entries[i]
		if e.Err != nil || !parkedStatus(e.Status) || !hasSession(e) {
			continue
		}
		f, err := fieldsOf(e, old, keep)
		if err != nil {
			continue
		}
		candidates = append(candidates, f)
		if f.Parent != "" {
			parents[f.Parent] = nil
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	if len(parents) > 0 {
		// Any task with a session may be a candidate's parent, whose
		// branch is that candidate's target.
		for i := range entries {
			e := &entries[i]
			if _, wanted := parents[e.ID]; !wanted || e.Err != nil || !hasSession(e) {
				continue
			}
			if f, err := fieldsOf(e, old, keep); err == nil {
				parents[e.ID] = &f
			}
		}
	}
	repoDir := r.Env.RepoDir
	defaultBranch := ""
	groups := map[string][]mergeFields{}
	for _, c := range candidates {
		target := c.TargetBranch
		if c.Parent != "" {
			p := parents[c.Parent]
			if p == nil {
				continue // the parent is gone or has no branch: nothing to compare with
			}
			target = worktree.Branch(p.Slug)
		} else if target == "" {
			if defaultBranch == "" {
				b, err := r.merged.defaultBranchOf(ctx, r)
				if err != nil {
					return nil, err
				}
				defaultBranch = b
			}
			target = defaultBranch
		}
		if ops.ValidBranchName(target) != nil {
			continue
		}
		groups[target] = append(groups[target], c)
	}
	var actions []Action
	var errs []error
	tips := ""
	if len(groups) > 0 {
		tips = lazyTips(r)
	}
	sets := map[string]mergedSet{}
	declined := map[string]string{}
	defer func() { r.merged.keep(sets, declined) }()
	for target, cs := range groups {
		key := targetKey(r, target, tips)
		set, ok := r.merged.lookup(target, key)
		if !ok {
			set = mergedSet{key: key, merged: map[string]bool{}}
			out, err := gitcli.New(repoDir, "for-each-ref", "--format=%(refname)", "--merged=refs/heads/"+target, "refs/heads/lazy/").String(ctx)
			set.ok = err == nil // an error: the target branch does not exist here
			for _, ref := range strings.Fields(out) {
				set.merged[strings.TrimPrefix(ref, "refs/heads/")] = true
			}
		}
		if key != "" {
			sets[target] = set
		}
		if !set.ok {
			continue
		}
		for _, c := range cs {
			if !set.merged[worktree.Branch(c.Slug)] {
				continue
			}
			mine := ""
			if key != "" {
				mine = c.Commit.String() + " " + key
			}
			if r.merged.wasDeclined(c.ID, mine) {
				declined[c.ID] = mine
				continue
			}
			as, err := r.finishMerged(ctx, c.ID, target)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", c.Slug, err))
			} else if len(as) == 0 && mine != "" {
				declined[c.ID] = mine
			}
			actions = append(actions, as...)
		}
	}
	return actions, errors.Join(errs...)
}

// finishMerged takes one merged candidate through zombie to complete.
func (r *Reconciler) finishMerged(ctx context.Context, id, target string) ([]Action, error) {
	sn, err := r.load(id)
	if err != nil {
		return nil, err
	}
	turns, err := r.Env.Store.Turns(sn)
	if err != nil {
		return nil, err
	}
	newest := ops.NewestCommit(turns)
	if newest == "" || !gitstore.ValidHex(newest) {
		return nil, nil // no recorded work: an empty branch is not a merged one
	}
	if newest == sn.Task.ReopenedAt {
		return nil, nil // reopened after that work merged: the reopen stands
	}
	if gitcli.New(r.Env.RepoDir, "merge-base", "--is-ancestor", newest, "refs/heads/"+target).Run(ctx) != nil {
		return nil, nil
	}
	a, err := r.step(ctx, id, func(s *gitstore.Snapshot) string {
		if !parkedStatus(s.Task.Status) || s.Session == nil {
			return ""
		}
		s.Task.Status = machine.Zombie
		return fmt.Sprintf("its branch %s was merged into %s outside lazy", s.Session.Branch, target)
	})
	if err != nil || a == nil {
		return one(a), err
	}
	more, err := r.completeZombie(ctx, id, "")
	return append(one(a), more...), err
}

// parkedStatus: parked statuses are where a branch merged outside lazy is
// looked for; a working task's branch is moving, and judging it would
// yank a live turn.
func parkedStatus(s machine.Status) bool {
	switch s {
	case machine.Blocked, machine.Conflict, machine.Interrupted, machine.Submitted:
		return true
	}
	return false
}
