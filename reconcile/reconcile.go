// Package reconcile moves tasks one valid step toward what the protocol
// files, processes and branches say is true. It is level-triggered and
// idempotent: every step takes the task lock and writes by
// compare-and-swap, and re-checks what it saw under the lock, so two
// reconcilers at once (a CLI read and the daemon) never double-apply.
//
// The sweeps are the spec's "System Actions (reconciler)": working tasks
// (record a response, leave a live supervisor, interrupt a dead one and
// maybe auto-resume it), interrupted tasks (a late completed response,
// auto-resume within the circuit breaker), stale pairing, blocked tasks
// without a session, supervisors left behind by finished tasks, and
// branches merged outside lazy. A pass costs in proportion to the tasks
// that can change without a human, not to all tasks: the list summaries
// decide which tasks need a full Load, a working task whose supervisor
// holds its lock and has written no response is judged from two file
// probes, a task of another host (no local session record) is never
// loaded, and the merged-branch sweep reuses the summary fields it
// decoded on earlier passes, with one git process per target branch.
//
// Sweep judges the list its caller made, so it walks every task. Pass
// (the daemon's) lists by itself and keeps the listing, sorted by what
// each sweep looks at, while the task refs stay: two stats tell, and a
// moved ref (written by any process) makes the next pass list again. A
// steady pass then visits only the live tasks, and the sweeps over
// parked tasks (merged branches, forges, finished tasks' files) run only
// when a file they read changed or a forge is due.
package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// DefaultStartGrace is how long a newly working task is left alone before
// a missing supervisor counts as a crash (spec: "Grace period").
const DefaultStartGrace = 30 * time.Second

// Action is one thing a sweep did.
type Action struct {
	TaskID string         `json:"task_id"`
	Slug   string         `json:"slug"`
	From   machine.Status `json:"from"`
	To     machine.Status `json:"to"`
	Why    string         `json:"why"`
	// Neutral: the turn that ended was status-neutral (an ask, a sync,
	// accept's pre-accept turn) and parked the task back where it was;
	// nobody is newly needed.
	Neutral bool `json:"neutral,omitempty"`
}

// Reconciler sweeps one repository. It runs the pass and the per-task
// sweeps; the groups of behaviour with state or dependencies of their
// own are small types it hands only what they need: the retry ladder
// (resumer), the terminal sweep (housekeeping), the merged-branch sweep
// (mergedSweep), the forge glue (forgeSweep) and lazy doctor's checks
// (doctor).
type Reconciler struct {
	// Env is what the reconciler acts through; its actor is
	// machine.System, and its Launcher starts auto-resumed turns (nil
	// disables auto-resume and the forge auto-fix).
	Env *wire.Env
	// NoAutoResume leaves interrupted tasks for a human (git config
	// lazy.autoResume false).
	NoAutoResume bool
	// StartGrace overrides DefaultStartGrace when positive.
	StartGrace time.Duration
	// WorktreeDir is lazy.worktreeDir ("" for the default), where doctor
	// moves a worktree it finds inside the git directory.
	WorktreeDir string
	Now         func() time.Time
	// Forge, when set (the daemon), follows submitted tasks' pull
	// requests on their forge; nil leaves the forge alone (CLI reads).
	Forge *ForgeSync
	// Git is what the reconciler reads and repairs of git (nil:
	// wire.ReconcileGit, package worktree's functions).
	Git Git
	// Lifecycle is the lifecycle steps the reconciler takes (nil:
	// Env.Lifecycle()).
	Lifecycle Lifecycle
	// PickAttempts moves the attempt groups picked by the gate (lazy
	// start --pick gate): it gates their parked attempts and proposes or
	// lands the best, in the background (see pickGroups). Only the
	// daemon sets it: a gate run is minutes of work no CLI read should
	// wait for. Picker is the step it takes (nil: Env.Attempts()).
	PickAttempts bool
	Picker       Picker

	// loads counts full snapshot loads, so that tests can show what a
	// pass reads without timing it.
	loads atomic.Int64
	// lists counts the listings Pass made and scanned the entries they
	// held; visits counts tasks the per-task sweeps judged
	// (mergedMem.looks and forgeMem.looks count what the merged-branch
	// and forge sweeps looked at): what tests count to show a pass
	// visits only live and moved tasks.
	lists, scanned, visits atomic.Int64
	// pass is what Pass keeps between passes.
	pass kept
	// stamps answers the sweeps' file stamps; made on first use, its
	// descriptor closed when the reconciler is collected.
	stampMu     sync.Mutex
	stamps      *stamping
	stampClosed bool
	// terminalMem, mergedMem and forgeMem are what the terminal,
	// merged-branch and forge sweeps keep between passes: what a pass
	// that found nothing to do read, so that a pass over the same
	// listing skips them while that stays so, and the answers they
	// reuse.
	terminalMem terminalMemory
	mergedMem   mergedMemory
	forgeMem    forgeMemory
	// picks are the pick steps going in the background.
	picks picks
}

// What the reconciler consumes, besides the capabilities it calls
// through Env: git's side of branches and worktrees (Git), and a
// watcher of the files a pass stamps (stampWatcher), whose adapters are
// in package wire, so that reconcile imports neither worktree nor gitstore.

// Git is what the reconciler reads and repairs of git: wire.ReconcileGit
// (package worktree's functions of the same names), or a fake in tests.
type Git interface {
	// Branch is the branch lazy names after a task's slug.
	Branch(slug string) string
	DefaultBranch(ctx context.Context, repoDir string) (string, error)
	Dirty(ctx context.Context, dir string) (bool, error)
	ClearKilledIndexLock(ctx context.Context, dir string) bool
	UndoReadOnly(ctx context.Context, dir string, before proto.TreeState, keep string) string
	Commits(ctx context.Context, dir, base string) ([]string, error)
	ChangedFiles(ctx context.Context, dir, base string) ([]string, error)
}

func (r *Reconciler) git() Git {
	if r.Git == nil {
		return wire.ReconcileGit{}
	}
	return r.Git
}

// Lifecycle is what the reconciler asks of the lifecycle capability:
// whether the circuit breaker and the other guards let an interrupted
// task auto-resume, the auto-resume itself, the resume of a task whose
// usage limit reset, and the system's steps the sweeps take. lifecycle.Service, or a fake in tests.
type Lifecycle interface {
	AutoResumeRefusal(sn *task.Snapshot) string
	AutoResume(ctx context.Context, id string) (*task.Snapshot, error)
	ResumeAfterLimit(ctx context.Context, id string, now time.Time) (*task.Snapshot, error)
	// The system's steps, each recorded under the task lock when the
	// task is still what the sweep saw (nil Step otherwise).
	ParkGonePairing(ctx context.Context, id string) (*lifecycle.Step, error)
	BacklogSessionless(ctx context.Context, id string) (*lifecycle.Step, error)
	MergedOutside(ctx context.Context, id, target string) (*lifecycle.Step, error)
	ReviveLateResponse(ctx context.Context, id, session string, seq int) (*lifecycle.Step, error)
	// The end of a working turn: its response recorded, or its dead
	// supervisor's turn interrupted, by a caller already holding the
	// task lock (the sweep judged the turn dead under it).
	RecordResponse(ctx context.Context, id string, resp *proto.Response, now time.Time) (*lifecycle.Step, error)
	InterruptDeadLocked(ctx context.Context, id string, d lifecycle.DeadTurn) (*lifecycle.Step, error)
}

func (r *Reconciler) lifecycle() Lifecycle {
	if r.Lifecycle == nil {
		return r.Env.Lifecycle()
	}
	return r.Lifecycle
}

// store is the task store through the port the capabilities share (the
// store's own paths, doctor's repairs and the like, go through Env.Store).
func (r *Reconciler) store() task.Store { return r.Env.Env.Store }

// snapshotLoader loads a task's full snapshot: the Reconciler, which
// counts each load (see Reconciler.loads), for the types that act on
// its behalf.
type snapshotLoader interface {
	load(id string) (*task.Snapshot, error)
}

// stampWatcher stamps files (wire.NewStampWatcher: gitstore's, which
// watches them to answer unchanged ones without a stat).
type stampWatcher interface {
	Stamp(paths ...string) (stamp string, newest time.Time, err error)
	// Watching reports whether it still watches (false once closed).
	Watching() bool
	Close() error
}

// load reads a task's full snapshot: the expensive read a pass avoids
// for tasks the list summary already rules out.
func (r *Reconciler) load(id string) (*task.Snapshot, error) {
	r.loads.Add(1)
	return r.store().Load(id)
}

// owned reports whether this machine started a session of task id: its
// local session record exists. Without one, no session of the task is
// ours to judge (wire.Env.Owns would refuse after a Load), so one stat
// spares the Load of every working or interrupted task of other hosts.
func (r *Reconciler) owned(id string) bool {
	p := r.Env.Sessions().Path(id)
	if p == "" {
		return false
	}
	_, err := os.Stat(p)
	return err == nil
}

// fieldCache maps a task id to the merge fields decoded from the summary
// at one commit; an entry whose commit moved is decoded again. A pass
// takes the whole map (take) and hands back what it used (replace), so
// the cache never outgrows the tasks one pass looks at, and a lookup
// costs a map probe and a 20-byte compare.
type fieldCache struct {
	mu sync.Mutex
	m  map[string]mergeFields
}

// mergeFields are the summary fields the merged-branch sweep reads, and
// the commit of the record they were read from.
type mergeFields struct {
	ID, Slug, TargetBranch, Parent string
	Commit                         gitrepo.OID
}

func (c *fieldCache) take() map[string]mergeFields {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.m
	c.m = nil
	return m
}

func (c *fieldCache) replace(keep map[string]mergeFields) {
	c.mu.Lock()
	c.m = keep
	c.mu.Unlock()
}

// fieldsOf returns e's merge fields from old when its commit is the
// same, else from its summary, and records them in keep.
func fieldsOf(e *task.Entry, old, keep map[string]mergeFields) (mergeFields, error) {
	f, ok := old[e.ID]
	if !ok || f.Commit != e.Commit {
		s, err := e.Summary()
		if err != nil {
			return mergeFields{}, err
		}
		f = mergeFields{ID: s.ID, Slug: s.Slug, TargetBranch: s.TargetBranch, Parent: s.Parent, Commit: e.Commit}
	}
	keep[e.ID] = f
	return f, nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) grace() time.Duration {
	if r.StartGrace > 0 {
		return r.StartGrace
	}
	return DefaultStartGrace
}

func (r *Reconciler) proto(id string) proto.Dir {
	return proto.ForTask(r.Env.Repo.LazyDir(), id)
}

// sweepable says whether a task's status gives a per-task sweep anything
// to judge.
func sweepable(e *task.Entry) bool {
	if e.Err != nil {
		return false
	}
	switch e.Status {
	case machine.Working, machine.Interrupted, machine.Pairing, machine.Zombie, machine.Merging:
		return true
	case machine.Blocked:
		return !hasSession(e) || limitHeld(e)
	}
	return false
}

// limitHeld reads from the summary bytes whether a usage limit holds the
// task: the daemon resumes it when the limit resets.
func limitHeld(e *task.Entry) bool {
	return bytes.Contains(e.JSON, []byte(`"hold":{"kind":"limit"`))
}

// hasSession reads the session count from the summary bytes without
// decoding them: the blocked-to-backlog check runs over every blocked
// task on every pass.
func hasSession(e *task.Entry) bool {
	return !bytes.Contains(e.JSON, []byte(`"sessions":0,`))
}

// Sweep runs every sweep over entries (the output of Store.List). Errors
// of one task never stop the others; they are joined in the result. It
// walks every entry; Pass, which lists by itself, walks only what moved.
func (r *Reconciler) Sweep(ctx context.Context, entries []task.Entry) ([]Action, error) {
	return r.sweep(ctx, newView(entries, 0))
}

// sweep runs every sweep over a view.
func (r *Reconciler) sweep(ctx context.Context, v *view) ([]Action, error) {
	var actions []Action
	var errs []error
	add := func(id string, as []Action, err error) {
		actions = append(actions, as...)
		if err != nil {
			errs = append(errs, fmt.Errorf("reconcile %s: %w", id, err))
		}
	}
	for _, i := range v.live {
		e := &v.entries[i]
		r.visits.Add(1)
		var as []Action
		var err error
		switch e.Status {
		case machine.Interrupted, machine.Pairing:
			// (sweepWorking asks after its own cheaper probes.)
			if !r.owned(e.ID) {
				continue // another host's session: that host judges it
			}
		}
		switch e.Status {
		case machine.Working:
			as, err = r.sweepWorking(ctx, e.ID)
		case machine.Interrupted:
			as, err = r.sweepInterrupted(ctx, e.ID)
		case machine.Pairing:
			as, err = r.sweepPairing(ctx, e.ID)
		case machine.Zombie:
			as, err = r.completeZombie(ctx, e.ID, "")
		case machine.Merging:
			as, err = r.sweepMerging(ctx, e.ID)
		case machine.Blocked:
			if limitHeld(e) {
				as, err = r.resumer().sweepLimit(ctx, e.ID)
			} else {
				as, err = r.sweepSessionless(ctx, e.ID)
			}
		}
		add(e.ID, as, err)
	}
	as, err := r.housekeeping().sweepTerminal(ctx, v)
	add("finished tasks", as, err)
	as, err = r.merged().sweepMerged(ctx, v)
	add("merged branches", as, err)
	if r.Forge != nil {
		as, err = r.forge().sweepForge(ctx, v)
		add("forge sync", as, err)
	}
	as, err = r.settleGroups(ctx, actions)
	add("attempt groups", as, err)
	if r.PickAttempts {
		as, err = r.pickGroups(ctx, v)
		add("attempts picked by the gate", as, err)
	}
	return actions, errors.Join(errs...)
}

// settleGroups settles the group of each attempt this pass completed:
// its branch found merged, a stranded accept that had landed, its pull
// request merged on the forge. lazy accept settles the group when it
// lands an attempt itself; without this, a group whose attempt landed
// another way would wait in backlog and its other attempts keep running.
func (r *Reconciler) settleGroups(ctx context.Context, done []Action) ([]Action, error) {
	var out []Action
	var errs []error
	for _, a := range done {
		if a.To != machine.Complete || a.From == machine.Complete {
			continue
		}
		g, warnings, err := r.Env.Attempts().SettleGroup(ctx, a.TaskID)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a.Slug, err))
			continue
		}
		if g != nil {
			out = append(out, Action{TaskID: g.Task.ID, Slug: g.Task.Slug, From: machine.Backlog, To: machine.Complete, Why: g.Task.Reason})
		}
		for _, w := range warnings {
			errs = append(errs, errors.New(w))
		}
	}
	return out, errors.Join(errs...)
}

// one wraps a single optional action.
func one(a *Action) []Action {
	if a == nil {
		return nil
	}
	return []Action{*a}
}

// Close releases what the reconciler holds outside memory: its
// StampWatcher's inotify instance, of which a user has 128 in all. A
// reconciler not closed releases it when it is garbage collected; one
// used after Close stats its files.
func (r *Reconciler) Close() error {
	r.picks.close()
	r.stampMu.Lock()
	defer r.stampMu.Unlock()
	r.stampClosed = true
	if r.stamps == nil {
		return nil
	}
	return r.stamps.Close()
}

// stamping is the reconciler's StampWatcher with the paths every pass
// stamps, joined once.
type stamping struct {
	stampWatcher
	taskRefFiles []string
	protoRoot    string
}

// stamper returns the reconciler's stamping, made on first use. A
// reconciler lives as long as its daemon, or a command: Close releases
// the watcher's descriptor, and so does the reconciler becoming garbage.
func (r *Reconciler) stamper() *stamping {
	r.stampMu.Lock()
	defer r.stampMu.Unlock()
	if r.stamps == nil {
		var w stampWatcher = wire.NewStampWatcher()
		r.stamps = &stamping{stampWatcher: w, taskRefFiles: r.Env.TaskRefStampPaths(), protoRoot: r.Env.Repo.LazyDir("proto")}
		if r.stampClosed {
			_ = w.Close()
		} else {
			runtime.AddCleanup(r, func(w stampWatcher) { _ = w.Close() }, w)
		}
	}
	return r.stamps
}
