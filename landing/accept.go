package landing

import (
	"context"
	"errors"
	"fmt"
	"github.com/lazyorch/lazy/attempts"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lazyorch/lazy/cost"
	"github.com/lazyorch/lazy/forge"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// Phase is one step of an accept. The phase table is the single source
// of truth: the plan an accept announces and the steps it executes are
// both built from AcceptPhases, so they cannot drift.
type Phase struct {
	ID       string
	Label    string
	Optional bool // part of the plan only when it applies
	Forge    bool // a phase of a merge through the forge only
}

// AcceptPhases is the accept phase table.
var AcceptPhases = []Phase{
	{ID: "pre-accept", Label: "pre-accept agent turn", Optional: true},
	{ID: "gate", Label: "run the gate on the tree that would land", Optional: true},
	{ID: "record", Label: "record the accept (merging)"},
	{ID: "stash", Label: "stash uncommitted changes in the destination", Optional: true},
	{ID: "merge", Label: "squash-merge the task branch"},
	{ID: "restore", Label: "restore the stashed changes", Optional: true},
	{ID: "finish", Label: "record the task complete"},
	{ID: "cleanup", Label: "remove the task's worktree and branch"},
	{ID: "resubmit", Label: "push and update the pull request", Optional: true, Forge: true},
	{ID: "request-merge", Label: "request the forge merge", Forge: true},
	{ID: "check-remote", Label: "check remote state", Forge: true},
}

// AcceptPlan is the plan of a fresh accept: the table, with the
// pre-accept turn only when one is configured and the stash and restore
// phases only when the destination is dirty.
func AcceptPlan(preTurn, dirtyDest bool) []Phase {
	var plan []Phase
	for _, p := range AcceptPhases {
		switch {
		case p.Forge, p.ID == "gate":
			continue
		case p.ID == "pre-accept" && !preTurn:
			continue
		case (p.ID == "stash" || p.ID == "restore") && !dirtyDest:
			continue
		}
		plan = append(plan, p)
	}
	return plan
}

// withGate adds the gate phase to plan, before the record.
func withGate(plan []Phase) []Phase {
	var out []Phase
	for _, p := range plan {
		if p.ID == "record" {
			out = append(out, gatePhase())
		}
		out = append(out, p)
	}
	return out
}

func gatePhase() Phase {
	for _, p := range AcceptPhases {
		if p.ID == "gate" {
			return p
		}
	}
	panic("landing: the phase table has no gate")
}

// AcceptOptions configure an accept.
type AcceptOptions struct {
	// PreTurn, when set, is the prompt of an agent turn run before the
	// merge (git config lazy.accept.preTurn); the task shows working with
	// substate agent:pre-accept meanwhile. It runs only when the Env has a
	// Launcher and Reconcile is set.
	PreTurn string
	// Reconcile runs the reconciler once on task id. The accept holds the
	// task lock through its pre-accept turn and calls it, with a context
	// that carries that hold, until the turn is recorded.
	Reconcile func(ctx context.Context, id string)
	// PreTurnTimeout bounds the pre-accept turn (0: DefaultPreTurnTimeout).
	PreTurnTimeout time.Duration
	// SkipGate lands without running the gate: a human's decision,
	// recorded with SkipReason on the task and in the commit's trailer.
	SkipGate   bool
	SkipReason string
	// Sandbox confines the gate's commands (lazy.sandbox); nil: none.
	Sandbox *proto.Sandbox
	// FixRound is the round of automatic fixes this accept follows (the
	// daemon's re-entry of a task whose agent fixed a failed gate).
	FixRound int
	// ViaForge merges a blocked task through the forge (submitting it
	// first), as lazy.accept.viaForge does for every task: the re-entry
	// of a submitted task whose fix turn revised its submission.
	ViaForge bool
	// ApproveProtected is a human's approval of the protected paths
	// (lazy.gate.protect and the defaults) the task's change touches,
	// recorded on the task and in the commit's trailer. Only a human may
	// give it; without it such a change never lands.
	ApproveProtected bool

	// lane is what a lane's train found for this accept
	// (lazy.gate.lanes): a passing run on the lane's tree, which lands
	// unrun when the target moved only outside the lane.
	lane *queue.LaneRun
}

// DefaultPreTurnTimeout bounds a pre-accept turn unless the caller says.
const DefaultPreTurnTimeout = 30 * time.Minute

// preTurn reports whether an accept with options o runs a pre-accept
// turn: one is configured, this Env can launch it, and the caller can
// reconcile it.
func (e *Service) preTurn(o AcceptOptions) bool {
	return o.PreTurn != "" && e.Launch != nil && o.Reconcile != nil
}

// Narrator hears what an accept is doing. It is strictly observational:
// a narrator that panics cannot change the outcome.
type Narrator interface {
	Prelude(msg string)     // before the plan is known: no position
	Plan(plan []Phase)      // announced once, right after pre-flight
	Step(n, m int, p Phase) // phase n of m begins
	Note(msg string)        // a detail worth telling
}

// safe calls a narrator method, swallowing anything it does.
func safe(f func()) {
	defer func() { _ = recover() }()
	f()
}

// AcceptResult says what an accept did.
type AcceptResult struct {
	Snapshot *task.Snapshot
	Into     string // the branch merged into
	Commit   string // the squash commit
	// PR is the pull request of a merge through the forge, and Pending
	// says why the forge has not merged it yet ("" once merged).
	PR      *forge.PR
	Pending string
	// Warnings are things the user must act on even though the accept
	// succeeded.
	Warnings []string
	// StashOwed is set when the task was accepted but the user's
	// uncommitted changes could not be given back: the command must fail.
	StashOwed *StashOwedError
	// Gate is the id of the gate run that passed on the landed tree ("":
	// no gate, or skipped).
	Gate string
}

// StashOwedError says the user's uncommitted changes were not put back
// after a merge, where they are and how to restore them.
type StashOwedError struct {
	Task, Dest, SHA string
	Cause           error
	// Folded says SHA also holds the changes owed there before: the
	// stash was folded into theirs.
	Folded bool
}

func (s *StashOwedError) Error() string {
	kept := "they are kept in stash " + s.SHA
	if s.Folded {
		kept = "they are kept, with your changes owed there before, in stash " + s.SHA
	}
	return fmt.Sprintf("%s was accepted, but your uncommitted changes in %s were not put back because %v; %s (nothing in your files was changed): commit or adjust your checkout, then run git -C %s stash apply %s (lazy doctor and lazy stash list it until then)",
		s.Task, s.Dest, s.Cause, kept, shellQuote(s.Dest), s.SHA)
}

func (s *StashOwedError) Unwrap() error { return s.Cause }

// Accept squash-merges a task's branch into its parent's branch (a
// subtask) or its target branch, then finishes the task and removes its
// worktree and branch. It holds the task lock from start to finish, so a
// second accept waits and then reports session.ErrAlreadyAccepted, and a task in
// merging whose lock is free is known to be stranded.
func (e *Service) Accept(ctx context.Context, name string, n Narrator, opts AcceptOptions) (*AcceptResult, error) {
	if opts.SkipGate {
		if e.Actor != machine.Human {
			return nil, fmt.Errorf("accept %s: only a human may land a task without its gate (--skip-gate); ask one to", name)
		}
		if strings.TrimSpace(opts.SkipReason) == "" {
			return nil, fmt.Errorf("accept %s: --skip-gate needs a reason (--reason \"...\"), recorded on the task and in the commit", name)
		}
	}
	if opts.ApproveProtected && e.Actor != machine.Human {
		return nil, fmt.Errorf("accept %s: only a human may approve changes to protected paths (--approve-protected); an agent or a builder never can: ask a human to review them (lazy diff %s) and run lazy accept %s --approve-protected", name, name, name)
	}
	if sn, err := e.load(name); err == nil {
		if sn.Task.IsAttemptGroup() {
			return nil, fmt.Errorf("accept %s: the task is tried %d ways and has no work of its own; land one of its attempts with lazy accept %s --attempt K (lazy show %s compares them)", sn.Task.Slug, len(sn.Task.Attempts), sn.Task.Slug, sn.Task.Slug)
		}
		if err := e.attempts().SiblingChosen(sn); err != nil {
			return nil, err
		}
	}
	res, err := e.accept(ctx, name, n, opts)
	if err != nil {
		err = e.handBack(ctx, err, opts)
	}
	// An attempt that landed settles its group, however it was accepted
	// (lazy accept GROUP --attempt K, or lazy accept on the attempt).
	if err == nil && res != nil && attempts.Landed(res.Snapshot) {
		_, warnings, ferr := e.attempts().Settle(ctx, res.Snapshot)
		res.Warnings = append(res.Warnings, warnings...)
		if ferr != nil {
			res.Warnings = append(res.Warnings, ferr.Error())
		}
	}
	return res, err
}

// accept is Accept under the task lock.
func (e *Service) accept(ctx context.Context, name string, n Narrator, opts AcceptOptions) (*AcceptResult, error) {
	a := &localAccept{e: e, n: n, opts: opts, release: func() {}}
	a.say(func(n Narrator) { n.Prelude("pre-flight checks") })
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer func() { unlock() }()
	// An accept of it that was killed left it merging: finish that one
	// (its merge landed: already accepted) or undo it, then go on.
	if sn, err = e.Recovery().EscapeStranded(ctx, sn, "accept"); err != nil {
		return nil, err
	}
	viaForge, err := e.Remote().mergesThroughForge(sn)
	if err != nil {
		return nil, err
	}
	if viaForge || opts.ViaForge && sn.Task.Status == machine.Blocked || sn.Task.Status == machine.Submitted || sn.Task.Status == machine.Merging && sn.Task.ForgePending() {
		return e.Remote().acceptRemote(ctx, sn, a.say, opts)
	}
	a.sn = sn
	defer func() { a.release() }()
	return a.run(ctx)
}

// PreflightGit is what an accept's pre-flight asks of git: the task's
// branch and worktree as they stand, the destination's tip and checkout
// (added when the target is checked out nowhere), and whether the branch
// changes anything.
type PreflightGit interface {
	BranchTip(ctx context.Context, repoDir, branch string) (string, error)
	BranchCommit(ctx context.Context, repoDir, branch string) (string, error)
	ChangesNothing(ctx context.Context, repoDir, base, branch string) bool
	CheckedOutAt(ctx context.Context, repoDir, branch string) (string, error)
	Add(ctx context.Context, repoDir, dir, branch string) error
	Dirty(ctx context.Context, dir string) (bool, error)
}

// MergeGit is what a local accept does in the destination once
// pre-flight has passed: the squash merge and its commit, or the gated
// tree's commit and fast-forward, the check that the destination has not
// moved, and the undoing of a merge left half-made.
type MergeGit interface {
	BranchCommit(ctx context.Context, repoDir, branch string) (string, error)
	Dirty(ctx context.Context, dir string) (bool, error)
	SquashMerge(ctx context.Context, dir, branch string) (conflicts []string, err error)
	CommitStaged(ctx context.Context, dir, msg string) (string, error)
	CommitTree(ctx context.Context, repoDir, tree, parent, message string) (string, error)
	FastForward(ctx context.Context, dir, commit string) error
	ResetToHead(ctx context.Context, dir string) error
	HalfSquash(ctx context.Context, repoDir, dir, base, branch string) bool
	ForceRemove(ctx context.Context, repoDir, dir string) error
}

// preflightGit is git in the accept's pre-flight role.
func (e *Service) preflightGit() PreflightGit { return e.worktrees() }

// mergeGit is git in the accept's merge role.
func (e *Service) mergeGit() MergeGit { return e.worktrees() }

// git is the merge role: all a localAccept's phases ask of git directly.
func (a *localAccept) git() MergeGit { return a.e.mergeGit() }

// localAccept is one squash-merge into a local branch in progress: the
// task as it now stands, what pre-flight found, the plan it announced
// and what it has done so far. Each phase is one method, and run calls
// them in the order of the phase table.
type localAccept struct {
	e    *Service
	n    Narrator
	opts AcceptOptions

	sn   *task.Snapshot
	pre  *acceptPre
	plan []Phase
	step int // phases of plan begun so far

	// release frees the destination lock once it is held.
	release func()
	// mine is this machine's own record of the accept, set by record.
	mine owned.Accept
	// stash is the stash of the destination's uncommitted changes, ""
	// while there is none.
	stash string
	res   *AcceptResult

	// ticket is the accept's place in its target's queue; gp the gate it
	// runs, cand the tree that passed it and run the passing run's id.
	ticket *queue.Ticket
	gp     *gatePlan
	cand   *candidate
	runID  string
	// approved are the protected files a human approved with this
	// accept (nil: the change touches none).
	approved []string
}

// run is the local accept, in order: pre-flight under the destination
// lock, the pre-accept turn, the record, the stash, the merge, the
// stash's return, the finish and the cleanup. A failure between the
// record and the merge puts the task back where it was.
func (a *localAccept) run(ctx context.Context) (res *AcceptResult, err error) {
	defer func() {
		if res != nil {
			a.ticket.LeaveWith(err, res.Commit)
		} else {
			a.ticket.LeaveWith(err, "")
		}
	}()
	if err := a.preflight(ctx); err != nil {
		return nil, err
	}
	if err := a.preAcceptTurn(ctx); err != nil {
		return nil, err
	}
	if err := a.gate(ctx); err != nil {
		return nil, err
	}
	if err := a.recheckDest(ctx); err != nil {
		return nil, err
	}
	a.ticket.Set(queue.Landing, "")
	if err := a.record(ctx); err != nil {
		return nil, err
	}
	if a.pre.temp {
		defer a.removeTempDest(ctx)
	}
	if err := a.stashDest(ctx); err != nil {
		return nil, a.abort(ctx, err)
	}
	if err := a.squashMerge(ctx); err != nil {
		return nil, a.abort(ctx, err)
	}
	a.giveBackStash(ctx)
	if err := a.finish(ctx); err != nil {
		return nil, err
	}
	a.foldOwedStash(ctx)
	a.cleanup(ctx)
	return a.res, nil
}

// say tells the narrator, if any; nothing it does reaches the accept.
func (a *localAccept) say(f func(Narrator)) {
	if a.n != nil {
		safe(func() { f(a.n) })
	}
}

// announce makes plan the accept's plan and tells the narrator.
func (a *localAccept) announce(plan []Phase) {
	if a.gp.enabled() {
		plan = withGate(plan)
	}
	a.plan = plan
	a.say(func(n Narrator) { n.Plan(plan) })
}

// begin numbers and narrates phase id if the plan has it, and is where
// the test-only crash hook fires.
func (a *localAccept) begin(id string) {
	for _, p := range a.plan {
		if p.ID == id {
			a.step++
			s, m := a.step, len(a.plan)
			a.say(func(n Narrator) { n.Step(s, m, p) })
			a.e.CrashAt.reached(id)
		}
	}
}

// lockDest takes the accept lock of the branch the task merges into:
// accepts into one branch share its checkout and index, so they run one
// at a time from the dirty check to the stash's return. Then it recovers
// any accept into that branch that died.
func (a *localAccept) lockDest(ctx context.Context) error {
	e, slug := a.e, a.sn.Task.Slug
	into, err := e.BaseBranch(ctx, a.sn, e.Dir())
	if err != nil {
		return err
	}
	if err := task.ValidBranchName(into); err != nil {
		return fmt.Errorf("accept %s: %w", slug, err)
	}
	if a.ticket == nil {
		a.ticket = e.queue().Enter(a.sn, into)
	}
	rel, err := e.Recovery().lockDestination(ctx, into, func(pid string) {
		a.ticket.Set(queue.Waiting, "behind the accept of pid "+pid)
		a.say(func(n Narrator) {
			n.Prelude("waiting for another accept into " + into + " (pid " + pid + ") to finish")
		})
	})
	if err != nil {
		return fmt.Errorf("accept %s: %w", slug, err)
	}
	a.release = rel
	for _, note := range e.Recovery().recoverStrandedInto(ctx, into, a.sn.Task.ID) {
		a.say(func(n Narrator) { n.Prelude(note) })
	}
	return nil
}

// preflight checks everything that can be checked before anything is
// written and announces the plan. The destination lock is taken first,
// unless a pre-accept turn runs: a turn can take long, and the lock is
// taken after it.
func (a *localAccept) preflight(ctx context.Context) error {
	if !a.e.preTurn(a.opts) {
		if err := a.lockDest(ctx); err != nil {
			return err
		}
	}
	pre, err := a.e.acceptPreflight(ctx, a.sn)
	if err != nil {
		return err
	}
	a.pre = pre
	a.res = &AcceptResult{Into: pre.into}
	if err := a.planGate(ctx); err != nil {
		return err
	}
	a.announce(AcceptPlan(a.e.preTurn(a.opts), pre.dirty))
	return nil
}

// planGate reads the gate of the accept into the target's tip and
// checks the change against its protected paths: a change touching one
// goes no further unless a human approved it with this accept. With
// --skip-gate the gate does not run, but its protected paths still hold
// (a gate configuration that cannot be read then protects nothing: the
// human skipped it).
func (a *localAccept) planGate(ctx context.Context) error {
	slug, pre := a.sn.Task.Slug, a.pre
	gp, err := a.e.Gates().gateAt(ctx, pre.into, pre.intoSHA)
	if err != nil && !a.opts.SkipGate {
		return fmt.Errorf("accept %s: %w", slug, err)
	}
	if err == nil {
		if a.approved, err = a.e.Gates().checkProtected(ctx, slug, gp, pre.intoSHA, pre.branch, false, a.opts); err != nil {
			return err
		}
	}
	a.gp = nil
	if !a.opts.SkipGate {
		a.gp = gp
	}
	if len(a.approved) > 0 {
		files := listProtected(a.approved, false)
		a.say(func(n Narrator) { n.Note("protected paths approved by a human: " + files) })
	}
	return nil
}

// preAcceptTurn runs the configured pre-accept turn, if any, under the
// task lock (the accept records the turn itself), then takes the
// destination lock and checks everything again: the turn may have
// changed the branch or the destination.
func (a *localAccept) preAcceptTurn(ctx context.Context) error {
	if !a.e.preTurn(a.opts) {
		return nil
	}
	a.begin("pre-accept")
	sn, err := a.e.runPreAccept(ctx, a.sn, a.opts)
	if err != nil {
		return err
	}
	a.sn = sn
	if err := a.lockDest(ctx); err != nil {
		return err
	}
	wasDirty := a.pre.dirty
	pre, err := a.e.acceptPreflight(ctx, a.sn)
	if err != nil {
		return fmt.Errorf("after the pre-accept turn: %w", err)
	}
	a.pre = pre
	if err := a.planGate(ctx); err != nil {
		return err
	}
	if pre.dirty != wasDirty {
		a.announce(AcceptPlan(true, pre.dirty))
	}
	return nil
}

// record writes this machine's own record of the accept first (a
// merging task is recovered here only if it names this accept: a
// record's host id is public, so anyone could claim this host), then
// moves the task to merging with its accept record.
func (a *localAccept) record(ctx context.Context) error {
	a.begin("record")
	e, pre, from := a.e, a.pre, a.sn.Task.Status
	mine, err := e.beginAccept(a.sn, from, pre)
	if err != nil {
		return err
	}
	a.mine = mine
	approvedTip := ""
	if len(a.approved) > 0 {
		approvedTip, _ = a.git().BranchCommit(ctx, e.Dir(), pre.branch)
	}
	sn, _, err := e.Store.Update(ctx, a.sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != from {
			return nil, fmt.Errorf("accept %s: the task became %s meanwhile", s.Task.Slug, s.Task.Status)
		}
		if err := machine.Validate(s.Task.Status, machine.Merging, e.Actor); err != nil {
			return nil, fmt.Errorf("accept %s: %w", s.Task.Slug, err)
		}
		s.Task.Accept = &task.AcceptRecord{ID: mine.ID, From: from, Into: pre.into, IntoSHA: pre.intoSHA, Started: mine.StartedAt, Host: e.Store.Host(), Dest: pre.dest, DestDirty: pre.dirty}
		s.Task.Status = machine.Merging
		if a.opts.SkipGate {
			if s.Task.Gate == nil {
				s.Task.Gate = &task.GateRecord{}
			}
			s.Task.Gate.Skipped = &task.GateSkip{By: string(e.Actor), At: mine.StartedAt, Reason: session.OneLine(a.opts.SkipReason)}
		}
		reason := "merging into " + pre.into
		if len(a.approved) > 0 {
			if s.Task.Gate == nil {
				s.Task.Gate = &task.GateRecord{}
			}
			s.Task.Gate.Approved = e.Gates().approval(a.approved, approvedTip, mine.StartedAt)
			reason += "; a human approved the protected paths " + session.OneLine(listProtected(a.approved, false))
		}
		return &task.Op{Name: "accept", Actor: e.Actor, Reason: reason}, nil
	})
	if err != nil {
		a.forget()
		return err
	}
	a.sn = sn
	return nil
}

// forget drops this machine's record of the accept: the task is no
// longer merging because of it.
func (a *localAccept) forget() { a.e.Accepts().Forget(a.mine.TaskID, a.mine.ID) }

// abort puts the task back to the status it had before the accept and
// returns cause, with why that failed too if it did.
func (a *localAccept) abort(ctx context.Context, cause error) error {
	if _, rerr := a.e.restoreAfterAbort(context.WithoutCancel(ctx), a.mine.TaskID, cause); rerr != nil {
		return fmt.Errorf("%w; restoring the status before the accept also failed (the reconciler will retry): %w", cause, rerr)
	}
	a.forget()
	return cause
}

// removeTempDest removes the checkout pre-flight made to merge in.
func (a *localAccept) removeTempDest(ctx context.Context) {
	_ = a.git().ForceRemove(context.WithoutCancel(ctx), a.e.Dir(), a.pre.dest)
}

// stashDest stashes the destination's uncommitted changes, if any, and
// records the stash before anything else runs: a kill from here on
// leaves a record that doctor and status report. A failure after the
// stash gives the changes back before it returns.
func (a *localAccept) stashDest(ctx context.Context) error {
	if !a.pre.dirty {
		return nil
	}
	a.begin("stash")
	e, slug, dest, id := a.e, a.sn.Task.Slug, a.pre.dest, a.sn.Task.ID
	stash, err := a.e.Stashes().stashPush(ctx, dest, stashMessage(slug, id))
	if err != nil {
		return fmt.Errorf("accept %s: stash the uncommitted changes in %s: %w", slug, dest, err)
	}
	a.stash = stash
	if err := a.e.Stashes().keepStash(ctx, dest, id, stash); err != nil {
		return e.withStash(fmt.Errorf("accept %s: record the stash: %w", slug, err), dest, stash)
	}
	a.say(func(n Narrator) { n.Note("your uncommitted changes in " + dest + " are in stash " + stash) })
	sn, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Accept == nil {
			return nil, errors.New("the accept record vanished")
		}
		s.Task.Accept.StashSHA = stash
		return &task.Op{Name: "accept-stash", Actor: e.Actor, Reason: "stash " + stash}, nil
	})
	if err != nil {
		return e.withStash(fmt.Errorf("accept %s: record the stash: %w", slug, err), dest, stash)
	}
	a.sn = sn
	return nil
}

// squashMerge squash-merges the task branch into the destination and
// commits; on failure the destination is as it was and the stash, if
// any, is given back.
func (a *localAccept) squashMerge(ctx context.Context) error {
	a.begin("merge")
	if a.cand != nil {
		return a.land(ctx)
	}
	trailer := ""
	if a.opts.SkipGate {
		trailer = skipTrailer(a.opts.SkipReason)
	}
	trailer += approvedTrailer(a.approved)
	commit, err := a.e.squash(ctx, a.sn, a.pre, trailer)
	if err != nil {
		return a.e.withStash(fmt.Errorf("accept %s: %w", a.sn.Task.Slug, err), a.pre.dest, a.stash)
	}
	a.res.Commit = commit
	return nil
}

// giveBackStash re-applies the stash of the destination's changes after
// the merge. If they cannot be given back the accept still stands, and
// the result says the changes are owed (the command then fails).
func (a *localAccept) giveBackStash(ctx context.Context) {
	if a.stash == "" {
		return
	}
	a.begin("restore")
	if err := a.e.Stashes().stashPop(ctx, a.pre.dest, a.stash); err != nil {
		a.res.StashOwed = &StashOwedError{Task: a.sn.Task.Slug, Dest: a.pre.dest, SHA: a.stash, Cause: err}
	}
}

// finish records the task complete, accepted, with the squash commit.
// Its local record of the accept says first what the cleanup will
// remove, and the task's comment where the branch was: a kill from here
// on leaves both, and lazy doctor finishes the cleanup.
func (a *localAccept) finish(ctx context.Context) error {
	a.begin("finish")
	e, into, commit, warnings := a.e, a.pre.into, a.res.Commit, a.res.Warnings
	cl := e.Cleanups().markCleanup(ctx, &a.mine, a.sn, commit)
	sn, _, err := e.Store.Update(ctx, a.sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Merging {
			return nil, fmt.Errorf("the task became %s during the merge", s.Task.Status)
		}
		now := time.Now().UTC().Truncate(time.Second)
		FinishAccepted(s, now)
		text := fmt.Sprintf("accepted: squash-merged into %s as %s", into, commit) + cleanupNote(cl)
		for _, w := range warnings {
			text += "\n\nwarning: " + w
		}
		s.AddComment(task.Comment{Actor: e.Actor, At: now, Text: text})
		return &task.Op{Name: "accept", Actor: e.Actor, Reason: "merged into " + into + " as " + commit}, nil
	})
	if err != nil {
		// The merge landed; the reconciler's stranded-merge sweep finds
		// the squash commit and finishes the task.
		return fmt.Errorf("accept %s: the merge is committed (%s) but recording it failed; the reconciler will finish the task: %w", a.sn.Task.Slug, commit, err)
	}
	a.sn = sn
	a.res.Snapshot = sn
	return nil
}

// foldOwedStash folds the stash this accept could not give back into
// the one owed before in the same checkout, if any: the user's changes
// stay in one place.
func (a *localAccept) foldOwedStash(ctx context.Context) {
	if a.res.StashOwed == nil {
		return
	}
	if folded := a.e.Stashes().foldOwed(ctx, a.pre.into, a.sn.Task.ID); folded != "" {
		a.res.StashOwed.SHA, a.res.StashOwed.Folded = folded, true
	}
}

// cleanup removes the task's worktree and branch, now that the merge is
// recorded; what stays is a warning. The local record of the accept
// goes last: until then lazy doctor finishes a cleanup that was killed.
func (a *localAccept) cleanup(ctx context.Context) {
	a.begin("cleanup")
	a.res.Warnings = append(a.res.Warnings, a.e.cleanupAccepted(ctx, a.sn)...)
	a.forget()
}

// beginAccept records, on this machine only, the local accept of sn
// about to begin: the trust anchor of its recovery (see package owned).
func (e *Service) beginAccept(sn *task.Snapshot, from machine.Status, pre *acceptPre) (owned.Accept, error) {
	id, err := task.NewID()
	if err != nil {
		return owned.Accept{}, fmt.Errorf("accept %s: %w", sn.Task.Slug, err)
	}
	mine := owned.Accept{TaskID: sn.Task.ID, ID: id, From: string(from), Into: pre.into, IntoSHA: pre.intoSHA,
		DestDirty: pre.dirty, StartedAt: time.Now().UTC().Truncate(time.Second)}
	if err := e.Accepts().Save(mine); err != nil {
		return owned.Accept{}, fmt.Errorf("accept %s: %w", sn.Task.Slug, err)
	}
	return mine, nil
}

// runPreAccept runs the configured agent turn before a merge, under the
// task lock the caller holds: the turn is launched, then recorded by the
// reconciler that the accept itself runs (opts.Reconcile, under the
// hold), and must end parked back where the task was, with no violation.
func (e *Service) runPreAccept(ctx context.Context, sn *task.Snapshot, opts AcceptOptions) (*task.Snapshot, error) {
	from := sn.Task.Status
	sn, err := e.preAcceptTurn(ctx, sn, opts)
	if err != nil {
		return nil, err
	}
	return e.awaitPreAccept(ctx, sn, from, opts)
}

// preAcceptTurn launches the configured agent turn before the merge. The
// session records the status to park back to, so a submitted task comes
// back submitted.
func (e *Service) preAcceptTurn(ctx context.Context, sn *task.Snapshot, opts AcceptOptions) (*task.Snapshot, error) {
	if err := e.RequireLauncher("the pre-accept turn"); err != nil {
		return nil, err
	}
	prompt, err := session.RequiredProse("the pre-accept prompt", opts.PreTurn, "the pre-accept prompt is empty")
	if err != nil {
		return nil, err
	}
	from := sn.Task.Status
	var turn task.Turn
	sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != from {
			return nil, fmt.Errorf("accept %s: the task became %s meanwhile", s.Task.Slug, s.Task.Status)
		}
		if err := machine.Validate(s.Task.Status, machine.Working, e.Actor); err != nil {
			return nil, fmt.Errorf("accept %s: %w", s.Task.Slug, err)
		}
		turn = s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "pre-accept", Content: prompt, At: time.Now().UTC().Truncate(time.Second), Session: s.Session.ID})
		s.Session.Turn, s.Session.TurnKind = turn.Seq, "pre-accept"
		s.Session.ParkTo = ""
		if from == machine.Submitted {
			s.Session.ParkTo = machine.Submitted
		}
		s.Task.Status = machine.Working
		s.Task.Substate = "agent:pre-accept"
		return &task.Op{Name: "pre-accept", Actor: e.Actor}, nil
	})
	if err != nil {
		return nil, err
	}
	if err := e.Turns().Launch(sn, turn, "pre-accept", prompt, ""); err != nil {
		return nil, err
	}
	return sn, nil
}

// awaitPreAccept reconciles the task, under the accept's hold on its
// lock, until the pre-accept turn is recorded, and checks how it ended.
// On a timeout the task stays working; the reconciler records the turn
// when it ends, once the accept has let go of the lock.
func (e *Service) awaitPreAccept(ctx context.Context, sn *task.Snapshot, from machine.Status, opts AcceptOptions) (*task.Snapshot, error) {
	id, slug, seq := sn.Task.ID, sn.Task.Slug, sn.Session.Turn
	limit := opts.PreTurnTimeout
	if limit <= 0 {
		limit = DefaultPreTurnTimeout
	}
	held, deadline := session.Holding(ctx, id), time.Now().Add(limit)
	final := sn
	for final.Task.Status == machine.Working && final.Session != nil && final.Session.Turn == seq {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("accept %s: the pre-accept turn did not end within %s; nothing was merged (the task stays working, and the turn is recorded when it ends)", slug, limit)
		}
		opts.Reconcile(held, id)
		var err error
		if final, err = e.Store.Load(id); err != nil {
			return nil, err
		}
		if final.Task.Status != machine.Working {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("accept %s: %w; the pre-accept turn goes on, and is recorded when it ends", slug, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	turns, err := e.Store.Turns(final)
	if err != nil {
		return nil, err
	}
	for _, t := range turns {
		if t.Seq > seq && t.Role == task.RoleAgent && t.Error != "" {
			return nil, fmt.Errorf("accept %s: the pre-accept turn failed, nothing was merged (the task is %s): %s", slug, final.Task.Status, t.Error)
		}
	}
	st := final.Task.Status
	if parkedBack := st == from || st == machine.Conflict; !parkedBack {
		return nil, fmt.Errorf("accept %s: after the pre-accept turn the task is %s; nothing was merged", slug, st)
	}
	if final.PendingViolations() > 0 {
		return nil, fmt.Errorf("accept %s: the pre-accept turn changed files outside the allowed paths (%s); decide them with lazy unblock first; nothing was merged", slug, strings.Join(final.Violations.Pending, ", "))
	}
	return final, nil
}

// acceptSource is where an accept takes the task's work from: the
// session this machine runs, whose worktree must be idle and clean, or,
// for a pooled task a runner elsewhere ran, the branch its slug derives
// as lazy pull brought it from the pool's remote (never a name read
// from the record).
func (e *Service) acceptSource(ctx context.Context, sn *task.Snapshot) (owned.Session, error) {
	slug := sn.Task.Slug
	local, err := e.Owned(sn)
	if err != nil {
		if !e.lifecycle().ForRunner(sn) {
			return owned.Session{}, fmt.Errorf("accept %w", err)
		}
		branch := worktree.Branch(slug)
		if tip, berr := e.preflightGit().BranchTip(ctx, e.Dir(), branch); berr != nil || tip == "" {
			return owned.Session{}, fmt.Errorf("accept %s: a runner on host %s ran it, and its branch %s is not here yet; lazy pull brings it", slug, sn.Session.Host, branch)
		}
		return owned.Session{TaskID: sn.Task.ID, Branch: branch}, nil
	}
	if err := e.WorktreeFree(sn.Task.ID, "accept", slug); err != nil {
		return owned.Session{}, err
	}
	if dirty, err := e.preflightGit().Dirty(ctx, local.Worktree); err != nil {
		return owned.Session{}, fmt.Errorf("accept %s: inspect its worktree %s: %w", slug, local.Worktree, err)
	} else if dirty {
		return owned.Session{}, fmt.Errorf("accept %s: its worktree %s has uncommitted changes; commit or discard them (or lazy unblock the agent) first", slug, local.Worktree)
	}
	return local, nil
}

type acceptPre struct {
	into, intoSHA string
	dest          string // worktree where into is checked out
	temp          bool   // dest was created for this accept
	dirty         bool
	// branch is the task branch as this machine's session record names
	// it (never the record's copy).
	branch string
}

// acceptPreflight checks everything that can be checked before anything
// is written, and finds where the merge will run.
func (e *Service) acceptPreflight(ctx context.Context, sn *task.Snapshot) (*acceptPre, error) {
	slug := sn.Task.Slug
	switch st := sn.Task.Status; {
	case st == machine.Complete && sn.Task.Outcome == task.OutcomeAccepted:
		return nil, fmt.Errorf("accept %s: %w", slug, session.ErrAlreadyAccepted)
	case st == machine.Conflict || sn.PendingViolations() > 0:
		return nil, fmt.Errorf("accept %s: %s pending (%s); decide them with lazy unblock --approve-file PATH or --no-approve-files first",
			slug, words.Count(sn.PendingViolations(), "file-permission violation is", "file-permission violations are"), strings.Join(sn.Violations.Pending, ", "))
	case st != machine.Blocked && st != machine.Submitted:
		if err := AcceptableStatus(slug, st); err != nil {
			return nil, err
		}
		if err := machine.Validate(st, machine.Merging, e.Actor); err != nil {
			return nil, fmt.Errorf("accept %s: %w", slug, err)
		}
		return nil, fmt.Errorf("accept %s: the task is %s; accept works on blocked or submitted tasks", slug, st)
	}
	if sn.Session == nil {
		return nil, fmt.Errorf("accept %s: the task never ran, so there is nothing to merge", slug)
	}
	local, err := e.acceptSource(ctx, sn)
	if err != nil {
		return nil, err
	}
	entries, err := e.Store.List()
	if err != nil {
		return nil, err
	}
	var open []string
	for _, en := range entries {
		if en.Parent == sn.Task.ID && !en.Status.IsTerminal() {
			if s, err := en.Summary(); err == nil {
				open = append(open, s.Slug)
			}
		}
	}
	if len(open) > 0 {
		return nil, fmt.Errorf("accept %s: its subtasks %s are not finished; accept, reject or close them first (their branches start from this task's branch)", slug, strings.Join(open, ", "))
	}
	if sn.Task.Parent != "" {
		p, err := e.Store.Load(sn.Task.Parent)
		if err != nil {
			return nil, fmt.Errorf("accept %s: load its parent: %w", slug, err)
		}
		if p.Task.Status.IsActive() && !e.parentExempt(&p.Task) {
			return nil, fmt.Errorf("accept %s: its parent %s is %s; the merge goes into the parent's branch, so wait until it is parked", slug, p.Task.Slug, p.Task.Status)
		}
	}
	into, err := e.BaseBranch(ctx, sn, e.Dir())
	if err != nil {
		return nil, err
	}
	if err := task.ValidBranchName(into); err != nil {
		return nil, fmt.Errorf("accept %s: %w", slug, err)
	}
	pre := &acceptPre{into: into, branch: local.Branch}
	if pre.intoSHA, err = e.preflightGit().BranchCommit(ctx, e.Dir(), into); err != nil {
		return nil, fmt.Errorf("accept %s: the branch %s to merge into does not exist", slug, into)
	}
	if e.preflightGit().ChangesNothing(ctx, e.Dir(), pre.intoSHA, pre.branch) {
		return nil, fmt.Errorf("accept %s: its branch %s changes nothing relative to %s; nothing to merge (lazy close it instead)", slug, pre.branch, into)
	}
	dest, err := e.preflightGit().CheckedOutAt(ctx, e.Dir(), into)
	if err != nil {
		return nil, err
	}
	if dest == "" {
		dest = e.Repo.LazyDir("tmp", "accept-"+sn.Task.ID)
		_ = os.RemoveAll(dest)
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return nil, err
		}
		if err := e.preflightGit().Add(ctx, e.Dir(), dest, into); err != nil {
			return nil, fmt.Errorf("accept %s: check out %s to merge into: %w", slug, into, err)
		}
		pre.temp = true
	}
	if !pre.temp && e.Cleanups().isAcceptCheckout(dest) {
		// A checkout an accept that was killed made to merge into: no
		// accept into the branch runs (its lock is held here), so it is
		// a leftover, removed after this merge unless it holds changes.
		if dirty, err := e.preflightGit().Dirty(ctx, dest); err == nil && !dirty {
			pre.temp = true
		}
	}
	pre.dest = dest
	if pre.dirty, err = e.preflightGit().Dirty(ctx, dest); err != nil {
		return nil, fmt.Errorf("accept %s: inspect %s: %w", slug, dest, err)
	}
	return pre, nil
}

// squash merges the task branch into the destination and commits with
// the task's trailer. Any failure (conflicts, a pre-commit hook, no git
// identity) leaves the destination as it was before the merge.
func (e *Service) squash(ctx context.Context, sn *task.Snapshot, pre *acceptPre, trailer string) (string, error) {
	if conflicts, err := e.mergeGit().SquashMerge(ctx, pre.dest, pre.branch); len(conflicts) > 0 {
		return "", fmt.Errorf("the squash merge into %s conflicts in %s; lazy sync the task (or unblock it) to resolve upstream first", pre.into, strings.Join(conflicts, ", "))
	} else if err != nil {
		return "", fmt.Errorf("squash merge into %s: %w", pre.into, err)
	}
	msg, err := e.acceptMessage(sn, pre.branch)
	if err != nil {
		return "", err
	}
	commit, err := e.mergeGit().CommitStaged(ctx, pre.dest, msg+trailer)
	if ce := (*worktree.CommitError)(nil); errors.As(err, &ce) {
		return "", fmt.Errorf("the merge commit into %s failed (checks or hooks refused it, or git has no identity): %w", pre.into, ce.Err)
	}
	return commit, err
}

// squashMessage is the squash commit's message: the task's title and
// goal, with trailers naming the task and its branch and saying what it
// cost with its subtasks (spent; see cost.Trailers), so git log answers
// what a change cost.
func squashMessage(sn *task.Snapshot, branch string, spent task.Usage) string {
	goal, _ := sn.Goal()
	msg := sn.Task.Title
	if g := strings.TrimSpace(goal); g != "" {
		msg += "\n\n" + g
	}
	return msg + "\n\nLazy-Task: " + sn.Task.ID + "\nLazy-Branch: " + branch + "\n" + cost.Trailers(spent)
}

// restoreAfterAbort puts the task back where it was before the accept:
// the TRUE prior status, never a blanket blocked.
func (e *Service) restoreAfterAbort(ctx context.Context, id string, cause error) (*task.Snapshot, error) {
	sn, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Merging {
			return nil, nil
		}
		RestoreFromAccept(s)
		reason := session.OneLine(cause.Error())
		s.AddComment(task.Comment{Actor: e.Actor, At: time.Now().UTC().Truncate(time.Second), Text: "accept aborted: " + cause.Error()})
		return &task.Op{Name: "accept-abort", Actor: e.Actor, Reason: reason}, nil
	})
	return sn, err
}

// FinishAccepted marks a task complete with outcome accepted and ends its
// session: what a finished accept records, and what the reconciler
// records for a merge that landed without its accept finishing.
func FinishAccepted(s *task.Snapshot, now time.Time) {
	now = now.UTC().Truncate(time.Second)
	s.Task.Status = machine.Complete
	s.Task.Outcome = task.OutcomeAccepted
	s.Task.Accept = nil
	if s.Session != nil && s.Session.EndedAt == nil {
		s.Session.EndedAt = &now
		s.Session.Outcome = task.OutcomeAccepted
	}
}

// RestoreFromAccept moves a merging task back to the status its accept
// record says it had (conflict re-derived from pending violations).
func RestoreFromAccept(s *task.Snapshot) {
	to := machine.Blocked
	if s.Task.Accept != nil && s.Task.Accept.From != "" {
		to = s.Task.Accept.From
	}
	if to == machine.Blocked || to == machine.Conflict {
		to = machine.Park(s.PendingViolations())
	}
	s.Task.Status = to
	s.Task.Accept = nil
}

// withStash re-applies a stash after a failed merge and adds where the
// changes are if that fails too.
func (e *Service) withStash(cause error, dest, stash string) error {
	if stash == "" {
		return cause
	}
	if err := e.Stashes().stashPop(context.Background(), dest, stash); err != nil {
		return fmt.Errorf("%w; your uncommitted changes in %s are safe in stash %s (git -C %s stash apply %s)", cause, dest, stash, dest, stash)
	}
	return cause
}

// stashPush stashes everything uncommitted in dir (untracked included)
// and returns the stash commit.
func (e *Stashes) stashPush(ctx context.Context, dir, msg string) (string, error) {
	return e.git().StashPush(ctx, dir, msg)
}

// stashPop re-applies stash sha and drops it only if it applied cleanly;
// on a conflict the stash stays in the stash list.
func (e *Stashes) stashPop(ctx context.Context, dir, sha string) error {
	// A conflicting stash is not applied at all: conflict markers in the
	// user's files are worse than changes kept whole in a stash.
	if err := e.git().StashApplies(ctx, dir, sha); err != nil {
		return err
	}
	if err := e.git().StashApply(ctx, dir, sha); err != nil {
		return err
	}
	e.dropStash(ctx, dir, sha)
	return nil
}

// dropStash drops exactly stash sha, wherever it now is in the list:
// another stash may have been pushed on top meanwhile. Its caller knows
// the changes are back in the checkout, so lazy's record goes too.
func (e *Stashes) dropStash(ctx context.Context, dir, sha string) {
	e.forgetStash(ctx, dir, sha)
	_ = e.git().StashDrop(ctx, dir, sha)
}

// parentExempt is the spec's identity exemption: the parent's own agent,
// proven by the MCP token the daemon resolved into CallerTask (the CLI
// never sets it), may merge a subtask into its working or pairing parent.
func (e *Service) parentExempt(parent *task.Task) bool {
	return e.Actor == machine.Agent && e.CallerTask != "" && e.CallerTask == parent.ID &&
		(parent.Status == machine.Working || parent.Status == machine.Pairing)
}

// cleanupAccepted removes an accepted task's worktree and branch, which
// is safe only now that the merge is recorded. Whatever cannot be
// removed is left, reported, and recorded on the task with where it is.
func (e *Service) cleanupAccepted(ctx context.Context, sn *task.Snapshot) []string {
	var kept []string
	git := e.Cleanups().git() // the clean-up's role: this is its part of an accept
	if s, err := e.Owned(sn); err == nil {
		if _, err := os.Stat(s.Worktree); err == nil {
			if err := git.Remove(ctx, e.Dir(), s.Worktree); err != nil {
				kept = append(kept, fmt.Sprintf("the worktree %s, which git would not remove (%v)", s.Worktree, err))
			}
		}
		if tip, err := git.BranchTip(ctx, e.Dir(), s.Branch); err == nil && tip != "" {
			if err := git.DeleteBranch(ctx, e.Dir(), s.Branch); err != nil {
				kept = append(kept, fmt.Sprintf("the branch %s at %s (%v)", s.Branch, tip, err))
			}
		}
	}
	_ = os.RemoveAll(string(proto.ForTask(e.Repo.LazyDir(), sn.Task.ID)))
	return e.Cleanups().recordKept(ctx, sn.Task.ID, kept)
}
