package reconcile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// stepAction is the Action of a system step a capability took; nil
// when it declined.
func stepAction(s *lifecycle.Step) *Action {
	if s == nil {
		return nil
	}
	return &Action{TaskID: s.ID, Slug: s.Slug, From: s.From, To: s.To, Why: s.Why, Neutral: s.Neutral}
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
	step, err := r.lifecycle().ParkGonePairing(ctx, id)
	a := stepAction(step)
	if err == nil && a != nil {
		pd.Remove(proto.PairingFile)
	}
	return one(a), err
}

// sweepSessionless moves a blocked task that never had a session back to
// backlog: blocked means "waiting for review", and there is nothing to
// review (spec: "Blocked-to-backlog migration").
func (r *Reconciler) sweepSessionless(ctx context.Context, id string) ([]Action, error) {
	step, err := r.lifecycle().BacklogSessionless(ctx, id)
	return one(stepAction(step)), err
}

// completeZombie finishes a task whose work was found merged: zombie ->
// complete with outcome accepted.
func (r *Reconciler) completeZombie(ctx context.Context, id, why string) ([]Action, error) {
	step, err := r.Env.FinishZombie(ctx, id, why, r.now())
	return one(stepAction(step)), err
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
		return r.forge().sweepForgePending(ctx, sn)
	}
	if !r.Env.Landing().Recovery().OwnsAccept(sn) {
		// Not an accept this machine began (whatever host the record
		// names: a host id is public): doctor reports it, nothing acts.
		return nil, nil
	}
	// The destination is put back (or the accept finished) and the user's
	// stash given back, under the destination's accept lock.
	out, landed, note, err := r.Env.Landing().Recovery().TryRecoverStrandedAccept(ctx, sn)
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
func MergeLanded(ctx context.Context, repoDir string, sn *task.Snapshot) (bool, error) {
	return landing.MergeLanded(ctx, repoDir, sn)
}

// AcceptTrailer is the trailer line lazy accept puts in a squash commit.
func AcceptTrailer(taskID string) string { return session.AcceptTrailer(taskID) }

// housekeeping owns the terminal sweep: what finished tasks leave
// behind (a supervisor still running, their protocol directories) is
// stopped and removed, and a pass that found nothing to clean is
// remembered so that the next one over the same view only stats the
// protocol root. It holds only the capabilities it acts through, task
// records, the file stamps and that memory.
type housekeeping struct {
	env       *wire.Env
	snapshots snapshotLoader
	stamps    fileStamper
	// protoRoot is the directory of every task's protocol files.
	protoRoot string
	mem       *terminalMemory
}

// terminalMemory is what the terminal sweep keeps between passes: what
// it read on a pass that found nothing to clean (see quietTerminal).
type terminalMemory struct {
	mu    sync.Mutex
	quiet quietTerminal
}

// housekeeping returns the reconciler's terminal sweep for one pass.
func (r *Reconciler) housekeeping() *housekeeping {
	return &housekeeping{env: r.Env, snapshots: r, stamps: r, protoRoot: r.stamper().protoRoot, mem: &r.terminalMem}
}

// sweepTerminal stops supervisors that finished tasks left behind and
// removes their protocol files (spec: "Terminal container sweep"). It
// reads the protocol directory, so it costs in proportion to tasks that
// ran turns and were not yet cleaned, not to all tasks; on a kept view,
// only when that directory or the view changed since it found nothing.
func (h *housekeeping) sweepTerminal(ctx context.Context, v *view) ([]Action, error) {
	root := h.protoRoot
	// On a kept view, the directory's stamp tells whether its entries can
	// have changed since a pass found nothing to clean in it.
	stamp, settled := "", false
	if v.gen != 0 {
		stamp, settled = h.stamps.fileStamps(root)
		h.mem.mu.Lock()
		still := stamp != "" && h.mem.quiet == quietTerminal{gen: v.gen, stamp: stamp}
		h.mem.mu.Unlock()
		if still {
			return nil, nil
		}
	}
	actions, err := h.cleanAll(ctx, root, v)
	q := quietTerminal{}
	if settled && len(actions) == 0 && err == nil {
		q = quietTerminal{gen: v.gen, stamp: stamp}
	}
	h.mem.mu.Lock()
	h.mem.quiet = q
	h.mem.mu.Unlock()
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
func (h *housekeeping) cleanAll(ctx context.Context, root string, v *view) ([]Action, error) {
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
		a, err := h.cleanFinished(ctx, id)
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
func (h *housekeeping) cleanFinished(ctx context.Context, id string) (*Action, error) {
	unlock, err := h.env.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	sn, err := h.snapshots.load(id)
	if err != nil || !sn.Task.Status.IsTerminal() {
		return nil, err
	}
	pd := proto.ForTask(h.env.Repo.LazyDir(), id)
	why := "removed the protocol files of a finished task"
	pid, running := h.env.Supervisors().Running(id)
	if running {
		why = fmt.Sprintf("stopped a supervisor (pid %d) left running by a finished task", pid)
	}
	if _, err := h.env.Supervisors().StopTurn(ctx, id); err != nil {
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
func (s *mergedSweep) sweepMerged(ctx context.Context, v *view) ([]Action, error) {
	if s.mergedStill(v) {
		return nil, nil
	}
	p := s.beginMerged(v)
	defer p.keepFields()
	candidates := p.candidates()
	defer p.recordQuiet()
	if len(candidates) == 0 {
		p.quiet.none = true
		return nil, nil
	}
	p.decodeParents()
	groups, err := p.byTarget(ctx, candidates)
	if err != nil {
		return nil, err
	}
	p.stampTargets(groups)
	defer p.keepSets()
	for target, cs := range groups {
		p.finishGroup(ctx, target, cs)
	}
	return p.actions, errors.Join(p.errs...)
}

// mergedSweep owns the merged-branch sweep: finding parked tasks whose
// branch was merged outside lazy, and what it keeps between passes so
// that a steady daemon spawns no git process for them (see
// mergedMemory). It holds the repository it reads, git's branch naming,
// the file stamps, and the finish of a merged task, which the
// reconciler's other sweeps share; nothing else of the reconciler.
type mergedSweep struct {
	env      *wire.Env
	git      Git
	stamps   fileStamper
	finisher mergedFinisher
	mem      *mergedMemory
}

// fileStamper stamps files through the reconciler's StampWatcher (see
// Reconciler.fileStamps).
type fileStamper interface {
	fileStamps(paths ...string) (stamp string, settled bool)
}

// mergedFinisher takes one merged candidate through zombie to complete
// (Reconciler.finishMerged, which completes zombies as its sweep does).
type mergedFinisher interface {
	finishMerged(ctx context.Context, id, target string) ([]Action, error)
}

// mergedMemory is what the merged-branch sweep keeps between passes.
type mergedMemory struct {
	// mu guards quiet: what a pass over a kept view that found nothing
	// to do read, so that a pass over the same view skips the sweep
	// while that stays so.
	mu    sync.Mutex
	quiet quietMerged
	// fields keeps the summary fields the sweep decoded, by task, for
	// the passes after: a daemon's passes see the same parked tasks
	// again and again.
	fields fieldCache
	// memo remembers what the sweep's git processes answered, for the
	// passes after in which no ref they read moved.
	memo mergeMemo
	// looks counts the candidates the sweep looked at: what tests count
	// to show a steady pass looks at none.
	looks atomic.Int64
}

// merged returns the reconciler's merged-branch sweep for one pass.
func (r *Reconciler) merged() *mergedSweep {
	return &mergedSweep{env: r.Env, git: r.git(), stamps: r, finisher: r, mem: &r.mergedMem}
}

// mergedPass is one pass of the merged-branch sweep: what it decoded,
// what it found, and what it keeps for the next pass.
type mergedPass struct {
	s *mergedSweep
	v *view
	// quiet is what this pass read, kept if it finds nothing to do (see
	// quietMerged); a caller's list is never seen again, so it keeps none.
	// keepQuiet turns false once something read was not settled.
	quiet     quietMerged
	keepQuiet bool
	// old is the field cache this pass started from; keep is what it
	// hands on (fieldsOf moves entries from one to the other).
	old, keep map[string]mergeFields
	parents   map[string]*mergeFields
	tips      string // lazyTips, read once targets are known
	// sets and declined are the merge memo's answers for the next pass.
	sets     map[string]mergedSet
	declined map[string]string
	actions  []Action
	errs     []error
}

// beginMerged starts a pass. The ref files are stamped before anything is
// read from them, so a change made while the sweep runs changes a stamp.
func (s *mergedSweep) beginMerged(v *view) *mergedPass {
	p := &mergedPass{s: s, v: v, quiet: quietMerged{gen: v.gen}, keepQuiet: v.gen != 0,
		parents: map[string]*mergeFields{}, sets: map[string]mergedSet{}, declined: map[string]string{}}
	if p.keepQuiet {
		p.quiet.refs, p.keepQuiet = s.stamps.fileStamps(s.mergedRefFiles(nil)...)
	}
	p.old = s.mem.fields.take()
	p.keep = make(map[string]mergeFields, len(p.old))
	return p
}

// keepFields hands the fields this pass decoded (or took from the cache)
// to the next pass; the others are dropped.
func (p *mergedPass) keepFields() { p.s.mem.fields.replace(p.keep) }

// candidates are the parked tasks, told from the list's status and the
// summary bytes; only they, and the parents they name, have fields
// decoded, and those come from the cache while their commits stay the
// same. The parents named are noted for decodeParents.
func (p *mergedPass) candidates() []mergeFields {
	var candidates []mergeFields
	for _, i := range p.v.parked {
		e := &p.v.entries[i]
		p.s.mem.looks.Add(1)
		f, err := fieldsOf(e, p.old, p.keep)
		if err != nil {
			continue
		}
		candidates = append(candidates, f)
		if f.Parent != "" {
			p.parents[f.Parent] = nil
		}
	}
	return candidates
}

// recordQuiet keeps what this pass read for mergedStill, but only when
// the pass found nothing to do on a kept view and everything it read was
// settled.
func (p *mergedPass) recordQuiet() {
	quiet := p.quiet
	if p.v.gen == 0 || (!p.keepQuiet && !quiet.none) || len(p.actions) > 0 || len(p.errs) > 0 {
		quiet = quietMerged{}
	}
	if quiet.gen != 0 && !quiet.none {
		// What mergedStill stamps, in one call: the two stamps in a row.
		quiet.files = p.s.targetRefFiles(p.s.mergedRefFiles(nil), quiet.targets)
	}
	p.s.mem.mu.Lock()
	p.s.mem.quiet = quiet
	p.s.mem.mu.Unlock()
}

// decodeParents decodes the parents the candidates named: any task with
// a session may be a candidate's parent, whose branch is that candidate's
// target.
func (p *mergedPass) decodeParents() {
	if len(p.parents) == 0 {
		return
	}
	p.v.withSession(p.parents, func(e *task.Entry) {
		if f, err := fieldsOf(e, p.old, p.keep); err == nil {
			p.parents[e.ID] = &f
		}
	})
}

// byTarget groups the candidates by the branch their work merges into:
// the parent's branch for a subtask, the task's target branch, or the
// repository's default branch. A candidate whose parent is gone, or whose
// target is not a valid branch name, has nothing to compare with.
func (p *mergedPass) byTarget(ctx context.Context, candidates []mergeFields) (map[string][]mergeFields, error) {
	defaultBranch := ""
	groups := map[string][]mergeFields{}
	for _, c := range candidates {
		target := c.TargetBranch
		if c.Parent != "" {
			parent := p.parents[c.Parent]
			if parent == nil {
				continue // the parent is gone or has no branch: nothing to compare with
			}
			target = p.s.git.Branch(parent.Slug)
		} else if target == "" {
			if defaultBranch == "" {
				b, err := p.s.mem.memo.defaultBranchOf(ctx, p.s)
				if err != nil {
					p.errs = append(p.errs, err)
					return nil, err
				}
				defaultBranch = b
			}
			target = defaultBranch
		}
		if task.ValidBranchName(target) != nil {
			continue
		}
		groups[target] = append(groups[target], c)
	}
	return groups, nil
}

// stampTargets reads lazy's branch tips once the targets are known and,
// on a kept view, stamps the targets' ref files for mergedStill.
func (p *mergedPass) stampTargets(groups map[string][]mergeFields) {
	if len(groups) > 0 {
		p.tips = lazyTips(p.s)
	}
	if !p.keepQuiet {
		return
	}
	for target := range groups {
		p.quiet.targets = append(p.quiet.targets, target)
	}
	slices.Sort(p.quiet.targets)
	p.quiet.targetRefs, p.keepQuiet = p.s.stamps.fileStamps(p.s.targetRefFiles(nil, p.quiet.targets)...)
}

// keepSets hands the merged sets and the declined candidates to the merge
// memo for the next pass.
func (p *mergedPass) keepSets() { p.s.mem.memo.keep(p.sets, p.declined) }

// mergedInto is the set of lazy branches merged into target: one
// `git for-each-ref --merged`, or the memo's answer while the target and
// lazy's tips are where they were (key). Its ok is false when the target
// branch does not exist here.
func (p *mergedPass) mergedInto(ctx context.Context, target, key string) mergedSet {
	if set, ok := p.s.mem.memo.lookup(target, key); ok {
		return set
	}
	set := mergedSet{key: key, merged: map[string]bool{}}
	out, err := gitcli.New(p.s.env.RepoDir, "for-each-ref", "--format=%(refname)", "--merged=refs/heads/"+target, "refs/heads/lazy/").String(ctx)
	set.ok = err == nil // an error: the target branch does not exist here
	for _, ref := range strings.Fields(out) {
		set.merged[strings.TrimPrefix(ref, "refs/heads/")] = true
	}
	return set
}

// finishGroup finishes, via zombie, each candidate of target whose branch
// is merged into it. A candidate finishMerged declined is not asked again
// while its commit and the target's key stay the same.
func (p *mergedPass) finishGroup(ctx context.Context, target string, cs []mergeFields) {
	key := targetKey(p.s, target, p.tips)
	if key == "" {
		p.keepQuiet = false
	}
	set := p.mergedInto(ctx, target, key)
	if key != "" {
		p.sets[target] = set
	}
	if !set.ok {
		return
	}
	for _, c := range cs {
		if !set.merged[p.s.git.Branch(c.Slug)] {
			continue
		}
		mine := ""
		if key != "" {
			mine = c.Commit.String() + " " + key
		}
		if p.s.mem.memo.wasDeclined(c.ID, mine) {
			p.declined[c.ID] = mine
			continue
		}
		as, err := p.s.finisher.finishMerged(ctx, c.ID, target)
		if err != nil {
			p.errs = append(p.errs, fmt.Errorf("%s: %w", c.Slug, err))
		} else if len(as) == 0 && mine != "" {
			p.declined[c.ID] = mine
		}
		p.actions = append(p.actions, as...)
	}
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
func (s *mergedSweep) mergedRefFiles(dst []string) []string {
	repo := s.env.Repo
	return append(dst,
		filepath.Join(repo.GitDir, "HEAD"),
		filepath.Join(repo.CommonDir, "refs", "remotes", "origin", "HEAD"),
		filepath.Join(repo.CommonDir, "refs", "heads", "lazy"))
}

// targetRefFiles are the loose ref files of target branches; a packed
// one is stamped by packed-refs.
func (s *mergedSweep) targetRefFiles(dst, targets []string) []string {
	common := s.env.Repo.CommonDir
	for _, t := range targets {
		dst = append(dst, filepath.Join(common, "refs", "heads", filepath.FromSlash(t)))
	}
	return dst
}

// mergedStill reports whether the merged-branch sweep would find what it
// found on the last pass, which was nothing: the same kept view, and
// none of the files its answer came from changed.
func (s *mergedSweep) mergedStill(v *view) bool {
	s.mem.mu.Lock()
	q := s.mem.quiet
	s.mem.mu.Unlock()
	if v.gen == 0 || q.gen != v.gen {
		return false
	}
	if q.none {
		return true
	}
	// FileStamp's pieces concatenate: one call stamps both.
	stamp, _ := s.stamps.fileStamps(q.files...)
	return len(stamp) == len(q.refs)+len(q.targetRefs) && stamp[:len(q.refs)] == q.refs && stamp[len(q.refs):] == q.targetRefs
}

// finishMerged takes one merged candidate through zombie to complete.
func (r *Reconciler) finishMerged(ctx context.Context, id, target string) ([]Action, error) {
	sn, err := r.load(id)
	if err != nil {
		return nil, err
	}
	turns, err := r.store().Turns(sn)
	if err != nil {
		return nil, err
	}
	newest := lifecycle.NewestCommit(turns)
	if newest == "" || !task.ValidHex(newest) {
		return nil, nil // no recorded work: an empty branch is not a merged one
	}
	if newest == sn.Task.ReopenedAt {
		return nil, nil // reopened after that work merged: the reopen stands
	}
	if gitcli.New(r.Env.RepoDir, "merge-base", "--is-ancestor", newest, "refs/heads/"+target).Run(ctx) != nil {
		return nil, nil
	}
	step, err := r.lifecycle().MergedOutside(ctx, id, target)
	a := stepAction(step)
	if err != nil || a == nil {
		return one(a), err
	}
	more, err := r.completeZombie(ctx, id, "")
	return append(one(a), more...), err
}
