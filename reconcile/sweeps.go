package reconcile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/gitcli"
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
	if sn.Task.ForgePending() {
		return r.sweepForgePending(ctx, sn)
	}
	if !r.Env.OwnsAccept(sn) {
		// Not an accept this machine began (whatever host the record
		// names: a host id is public): doctor reports it, nothing acts.
		return nil, nil
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
// ran turns and were not yet cleaned, not to all tasks; on a kept view,
// only when that directory or the view changed since it found nothing.
func (r *Reconciler) sweepTerminal(ctx context.Context, v *view) ([]Action, error) {
	root := r.stamper().protoRoot
	// On a kept view, the directory's stamp tells whether its entries can
	// have changed since a pass found nothing to clean in it.
	stamp, settled := "", false
	if v.gen != 0 {
		stamp, settled = r.fileStamps(root)
		r.quietMu.Lock()
		still := stamp != "" && r.terminalQuiet == quietTerminal{gen: v.gen, stamp: stamp}
		r.quietMu.Unlock()
		if still {
			return nil, nil
		}
	}
	actions, err := r.cleanAll(ctx, root, v)
	q := quietTerminal{}
	if settled && len(actions) == 0 && err == nil {
		q = quietTerminal{gen: v.gen, stamp: stamp}
	}
	r.quietMu.Lock()
	r.terminalQuiet = q
	r.quietMu.Unlock()
	return actions, err
}

// quietTerminal is the terminal sweep's quietMerged: the kept view and
// the stamp of the protocol root on a pass that found nothing to clean.
// Its answer depends on the view's finished tasks and the names in the
// root, which the stamp covers (once settled, see fileStamps).
type quietTerminal struct {
	gen   uint64
	stamp string
}

// cleanAll cleans the protocol directories of finished tasks.
func (r *Reconciler) cleanAll(ctx context.Context, root string, v *view) ([]Action, error) {
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
	// cleaned yet); the finished tasks may be nearly all. A set of the
	// few keeps the pass from building a map of every task.
	ran := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		ran[d.Name()] = true
	}
	var actions []Action
	var errs []error
	for _, id := range v.finishedAmong(ran) {
		a, err := r.cleanFinished(ctx, id)
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
// commits of its own (or was fast-forwarded to upstream) never does. On a
// kept view it walks the candidates only when a ref its last answer came
// from moved.
func (r *Reconciler) sweepMerged(ctx context.Context, v *view) ([]Action, error) {
	if r.mergedStill(v) {
		return nil, nil
	}
	// What this pass reads, kept if it finds nothing to do (see
	// quietMerged); a caller's list is never seen again, so it keeps none.
	// The files are stamped before anything is read from them, so a
	// change made while the sweep runs changes a stamp.
	quiet := quietMerged{gen: v.gen}
	keepQuiet := v.gen != 0
	var settled bool
	if keepQuiet {
		quiet.refs, settled = r.fileStamps(r.mergedRefFiles(nil)...)
		keepQuiet = settled
	}
	// Candidates are told from the list's status and the summary bytes;
	// only they, and the parents they name, have fields decoded, and
	// those come from the cache while their commits stay the same.
	old := r.fields.take()
	keep := make(map[string]mergeFields, len(old))
	defer func() { r.fields.replace(keep) }()
	var candidates []mergeFields
	parents := map[string]*mergeFields{}
	for _, i := range v.parked {
		e := &v.entries[i]
		r.mergeLooks.Add(1)
		f, err := fieldsOf(e, old, keep)
		if err != nil {
			continue
		}
		candidates = append(candidates, f)
		if f.Parent != "" {
			parents[f.Parent] = nil
		}
	}
	var actions []Action
	var errs []error
	defer func() {
		if v.gen == 0 || (!keepQuiet && !quiet.none) || len(actions) > 0 || len(errs) > 0 {
			quiet = quietMerged{}
		}
		if quiet.gen != 0 && !quiet.none {
			// What mergedStill stamps, in one call: the two stamps in a row.
			quiet.files = r.targetRefFiles(r.mergedRefFiles(nil), quiet.targets)
		}
		r.quietMu.Lock()
		r.mergedQuiet = quiet
		r.quietMu.Unlock()
	}()
	if len(candidates) == 0 {
		quiet.none = true
		return nil, nil
	}
	if len(parents) > 0 {
		// Any task with a session may be a candidate's parent, whose
		// branch is that candidate's target.
		v.withSession(parents, func(e *gitstore.Entry) {
			if f, err := fieldsOf(e, old, keep); err == nil {
				parents[e.ID] = &f
			}
		})
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
					errs = append(errs, err)
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
	tips := ""
	if len(groups) > 0 {
		tips = lazyTips(r)
	}
	if keepQuiet {
		for target := range groups {
			quiet.targets = append(quiet.targets, target)
		}
		slices.Sort(quiet.targets)
		quiet.targetRefs, settled = r.fileStamps(r.targetRefFiles(nil, quiet.targets)...)
		keepQuiet = settled
	}
	sets := map[string]mergedSet{}
	declined := map[string]string{}
	defer func() { r.merged.keep(sets, declined) }()
	for target, cs := range groups {
		key := targetKey(r, target, tips)
		if key == "" {
			keepQuiet = false
		}
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

// quietMerged is what the merged-branch sweep read on a pass over a kept
// view that found nothing to do. Its answer is a function of the view's
// candidates (fixed while the view is) and of refs outside refs/lazy: the
// default branch (HEAD, origin/HEAD), the lazy/ branches and each target
// branch, loose or packed. While none of those files changes, the answer stays nothing,
// so a pass stats them instead of walking every parked task. The stamps
// are kept only when settled (see fileStamps), so an equal stamp means
// an unchanged file.
type quietMerged struct {
	gen  uint64 // the view it was read from; 0: nothing kept
	refs string // fileStamps of mergedRefFiles
	// none: there were no candidates, an answer that no file changes.
	none       bool
	targets    []string
	targetRefs string // fileStamps of the targets' loose refs
	// files are mergedRefFiles then the targets' ref files: stamped
	// together, they give refs then targetRefs.
	files []string
}

// mergedRefFiles are the files the merged-branch sweep's answer depends
// on besides its targets: where the default branch is read from and the
// directory of the lazy/ branches. packed-refs is one too, but the kept
// view's stamp covers it: while the view is kept, packed-refs has not
// changed since it was listed.
func (r *Reconciler) mergedRefFiles(dst []string) []string {
	repo := r.Env.Store.Repo()
	return append(dst,
		filepath.Join(repo.GitDir, "HEAD"),
		filepath.Join(repo.CommonDir, "refs", "remotes", "origin", "HEAD"),
		filepath.Join(repo.CommonDir, "refs", "heads", "lazy"))
}

// targetRefFiles are the loose ref files of target branches; a packed
// one is stamped by packed-refs.
func (r *Reconciler) targetRefFiles(dst, targets []string) []string {
	common := r.Env.Store.Repo().CommonDir
	for _, t := range targets {
		dst = append(dst, filepath.Join(common, "refs", "heads", filepath.FromSlash(t)))
	}
	return dst
}

// mergedStill reports whether the merged-branch sweep would find what it
// found on the last pass, which was nothing: the same kept view, and
// none of the files its answer came from changed.
func (r *Reconciler) mergedStill(v *view) bool {
	r.quietMu.Lock()
	q := r.mergedQuiet
	r.quietMu.Unlock()
	if v.gen == 0 || q.gen != v.gen {
		return false
	}
	if q.none {
		return true
	}
	// FileStamp's pieces concatenate: one call stamps both.
	stamp, _ := r.fileStamps(q.files...)
	return len(stamp) == len(q.refs)+len(q.targetRefs) && stamp[:len(q.refs)] == q.refs && stamp[len(q.refs):] == q.targetRefs
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
