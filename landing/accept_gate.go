package landing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/task"
)

// gate runs the gate on the exact tree the accept would land: the task's
// squash onto the target's tip, which the destination lock now holds
// still. The passing run's tree is what land commits; a run that passed
// on this very tree before (on this machine: a speculative run of the
// queue, or an earlier accept) is not run again.
func (a *localAccept) gate(ctx context.Context) error {
	if !a.gp.enabled() {
		return nil
	}
	a.begin("gate")
	e, slug, into := a.e, a.sn.Task.Slug, a.pre.into
	e.Gates().SweepGateLeftovers(ctx)
	if c, how, ok := a.laneVouched(ctx); ok {
		a.say(func(n Narrator) { n.Note("the gate " + how + "; not running it again") })
		a.cand, a.runID = c, a.opts.lane.Run
		return nil
	}
	a.ticket.Set(queue.Gating, "on "+into+" at "+short(a.pre.intoSHA))
	c, reused, run, err := e.Gates().gateTree(ctx, "accept", a.sn, a.gp, a.pre.intoSHA, a.pre.branch, into, a.opts, func(c *candidate) {
		if claim := e.Gates().remoteClaim(a.sn, c.tree); claim != "" {
			a.ticket.Set(queue.Gating, "on "+into+" at "+short(a.pre.intoSHA)+"; "+claim)
			a.say(func(n Narrator) { n.Note(claim) })
		}
		a.say(func(n Narrator) {
			n.Note(fmt.Sprintf("gate: %s from %s on %s, timeout %s", words.Count(len(a.gp.cmds), "command", "commands"), a.gp.source, short(c.tree), a.gp.Timeout))
		})
	})
	switch {
	case err != nil:
		return err
	case reused != "":
		a.say(func(n Narrator) {
			n.Note("the gate passed on this exact tree already (run " + reused + "); not running it again")
		})
		a.cand, a.runID = c, reused
		return nil
	case !run.Passed:
		return &GateError{Task: slug, Run: *run}
	}
	a.say(func(n Narrator) {
		n.Note(fmt.Sprintf("the gate passed (run %s, %.1fs)", run.ID, float64(run.DurationMS)/1000))
	})
	a.cand, a.runID = c, run.ID
	return nil
}

// gateTree gates the task's branch merged onto base, for a landing in
// into: the candidate tree, and either the id of a run that passed on
// that very tree on this machine before (reused, nothing runs) or the
// run made now, recorded on the task. starting hears the candidate
// before a run begins.
func (e *Gates) gateTree(ctx context.Context, verb string, sn *task.Snapshot, gp *gatePlan, base, branch, into string, opts AcceptOptions, starting func(*candidate)) (*candidate, string, *task.GateRun, error) {
	slug := sn.Task.Slug
	c, err := e.buildCandidate(ctx, base, branch, slug, into)
	if err != nil {
		return nil, "", nil, err
	}
	if id, ok := e.passedBefore(c.tree, gp.cmds); ok {
		return c, id, nil, nil
	}
	if starting != nil {
		starting(c)
	}
	run, err := e.gateRun(ctx, sn, gp, c, into, opts, false)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s %s: record the gate run: %w", verb, slug, err)
	}
	return c, "", &run, nil
}

// recheckDest looks at the destination again after a gate ran: the user
// may have edited it meanwhile, and those changes must be stashed and
// given back like any others.
func (a *localAccept) recheckDest(ctx context.Context) error {
	if !a.gp.enabled() || a.pre.dirty {
		return nil
	}
	dirty, err := a.git().Dirty(ctx, a.pre.dest)
	if err != nil {
		return fmt.Errorf("accept %s: inspect %s: %w", a.sn.Task.Slug, a.pre.dest, err)
	}
	if dirty {
		a.pre.dirty = true
		a.announce(AcceptPlan(a.e.preTurn(a.opts), true))
	}
	return nil
}

// land commits the gated tree onto the target's tip as the squash commit
// (with the gate's trailer) and fast-forwards the destination to it, so
// the target moves to exactly the tree that passed. A target that moved
// meanwhile (a commit made outside lazy) refuses the fast-forward and
// nothing lands; so does one git cannot move (a killed git's lock), and
// the files the fast-forward wrote before it failed are put back.
func (a *localAccept) land(ctx context.Context) error {
	e, slug, into := a.e, a.sn.Task.Slug, a.pre.into
	msg, err := e.acceptMessage(a.sn, a.pre.branch)
	if err != nil {
		return e.withStash(fmt.Errorf("accept %s: %w", slug, err), a.pre.dest, a.stash)
	}
	commit, err := a.git().CommitTree(ctx, e.Dir(), a.cand.tree, a.pre.intoSHA, msg+gateTrailer(a.runID, a.gp)+approvedTrailer(a.approved))
	if err != nil {
		return e.withStash(fmt.Errorf("accept %s: commit the gated tree: %w", slug, err), a.pre.dest, a.stash)
	}
	if err := a.git().FastForward(ctx, a.pre.dest, commit); err != nil {
		if tip, terr := a.git().BranchCommit(ctx, e.Dir(), into); terr == nil && tip != a.pre.intoSHA {
			return e.withStash(fmt.Errorf("accept %s: %s moved while the gate ran (a commit made outside lazy), so the gated tree is not what would land; nothing was merged, accept again to gate the new tip: %w", slug, into, err), a.pre.dest, a.stash)
		}
		// The branch did not move, yet git could not move it: a lock a
		// killed git left on it or on HEAD. git writes the files before
		// the ref, so the checkout holds the gated tree: put it back.
		if a.halfLanded(ctx) {
			if rerr := a.git().ResetToHead(context.WithoutCancel(ctx), a.pre.dest); rerr != nil {
				return fmt.Errorf("accept %s: %s could not be moved to the gated commit (%w), and the files it left in %s could not be put back (%w); nothing was merged: lazy doctor removes a stale lock and undoes it", slug, into, err, a.pre.dest, rerr)
			}
		}
		return e.withStash(fmt.Errorf("accept %s: git could not move %s to the gated commit %s in %s, so nothing was merged (a git killed there may have left its lock; lazy doctor removes it once it is stale, then accept again): %w", slug, into, short(commit), a.pre.dest, err), a.pre.dest, a.stash)
	}
	a.res.Commit, a.res.Gate = commit, a.runID
	return nil
}

// halfLanded reports whether the destination holds exactly the gated
// tree on the untouched target tip, and nothing else: a fast-forward that
// wrote the files and could not move the branch.
func (a *localAccept) halfLanded(ctx context.Context) bool {
	return a.git().HalfSquash(ctx, a.e.Dir(), a.pre.dest, a.pre.intoSHA, a.pre.branch)
}

// handBack gives a failed gate or a conflict to the task's agent when
// lazy.gate.autoFix is on: the failure goes to it as feedback, and the
// task re-enters the queue after its turn, for at most
// lazy.gate.maxAttempts rounds; after that it stays parked for a human,
// with the history. err is returned, saying which it was.
func (e *Service) handBack(ctx context.Context, err error, opts AcceptOptions) error {
	var ge *GateError
	var ce *ConflictError
	var slug, into, feedback string
	switch {
	case errors.As(err, &ge):
		slug, into, feedback = ge.Task, ge.Run.Target, gateFeedback(ge.Run.Target, ge.Run)
	case errors.As(err, &ce):
		slug, into, feedback = ce.Task, ce.Into, conflictFeedback(ce)
	default:
		return err
	}
	s, serr := e.Gates().GateSettings()
	if serr != nil || !s.AutoFix {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	round := opts.FixRound + 1
	if round > s.MaxAttempts {
		e.noteGaveUp(ctx, slug, s.MaxAttempts)
		return fmt.Errorf("%w (lazy.gate.autoFix gave up after %d rounds; the task stays blocked for you)", err, s.MaxAttempts)
	}
	// A submitted task was being merged through the forge: the fix turn
	// revises its submission (it parks blocked), and it re-enters through
	// the forge again, never as a local merge beside its open pull
	// request.
	viaForge := opts.ViaForge
	if id, rerr := e.Store.Resolve(slug); rerr == nil {
		if prior, lerr := e.Store.Load(id); lerr == nil && prior.Task.Status == machine.Submitted {
			viaForge = true
		}
	}
	sn, uerr := e.lifecycle().Unblock(ctx, slug, feedback, lifecycle.Decisions{})
	if uerr != nil {
		return fmt.Errorf("%w; handing it to the agent (lazy.gate.autoFix) failed too: %w", err, uerr)
	}
	if qerr := e.queue().Requeue(sn, into, round, sn.Session.Turn, viaForge); qerr != nil {
		return fmt.Errorf("%w; the agent is fixing it, but the task could not be queued to re-enter: %w", err, qerr)
	}
	fix := task.GateFix{Round: round, Max: s.MaxAttempts, Turn: sn.Session.Turn, At: time.Now().UTC().Truncate(time.Second)}
	if ge != nil {
		fix.Run = ge.Run.ID
	}
	e.noteFixRound(ctx, sn.Task.ID, fix)
	if ge != nil {
		ge.Fixing, ge.Round, ge.Max = true, round, s.MaxAttempts
		return ge
	}
	return fmt.Errorf("%w (the agent was asked to resolve them, fix round %d of %d; the task re-enters the queue after its turn)", err, round, s.MaxAttempts)
}

// conflictFeedback asks the agent to resolve a conflict with its target.
func conflictFeedback(c *ConflictError) string {
	return fmt.Sprintf("Your branch no longer merges cleanly into %s: it conflicts in %s. %s has been merged into your branch for you; resolve the conflicts, keep both sides' intent, and commit. lazy gates and lands the work after your turn.",
		c.Into, strings.Join(sanitizeAll(c.Files), ", "), c.Into)
}

// noteFixRound records fix round f on the task. Its turn is running: the
// agent turn's record gives the round its resume (lifecycle's
// RecordResponse), unless that turn already ended, when it is read here.
func (e *Service) noteFixRound(ctx context.Context, id string, f task.GateFix) {
	_, _, _ = e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Gate == nil {
			s.Task.Gate = &task.GateRecord{}
		}
		s.Task.Gate.FixRounds = f.Round
		if turns, err := e.Store.Turns(s); err == nil {
			for _, t := range turns {
				if t.Seq > f.Turn && t.Role == task.RoleAgent {
					if t.Resume != nil {
						r := *t.Resume
						f.Resume = &r
					}
					break
				}
			}
		}
		s.Task.Gate.NoteFix(f)
		return &task.Op{Name: "gate-fix", Actor: e.Actor, Reason: fmt.Sprintf("fix round %d", f.Round)}, nil
	})
}

func (e *Service) noteGaveUp(ctx context.Context, name string, rounds int) {
	id, err := e.Store.Resolve(name)
	if err != nil {
		return
	}
	_, _, _ = e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		s.AddComment(task.Comment{Actor: e.Actor, At: time.Now().UTC().Truncate(time.Second),
			Text: fmt.Sprintf("the merge gate failed after %d automatic fix rounds (lazy.gate.maxAttempts); parked for a human: lazy show has every run", rounds)})
		return &task.Op{Name: "gate-gave-up", Actor: e.Actor}, nil
	})
}

// forgeGate is the gate of a merge through the forge into base: the
// same gate, run locally before the merge is requested, unless the
// repository says the forge's required checks are its gate
// (lazy.gate.forge = checks) or a human skips it.
func (e *Gates) forgeGate(ctx context.Context, base string, opts AcceptOptions) (*gatePlan, error) {
	if opts.SkipGate {
		return nil, nil
	}
	s, err := e.GateSettings()
	if err != nil || s.Forge == "checks" {
		return nil, err
	}
	tip, err := e.git().BranchCommit(ctx, e.Dir(), base)
	if err != nil {
		return nil, fmt.Errorf("the branch %s the pull request merges into is not here to gate against (git fetch it, or set lazy.gate.forge to checks): %w", base, err)
	}
	return e.gateAt(ctx, base, tip)
}

// gate runs the gate on the task's branch merged onto this machine's
// copy of the pull request's base, before the forge is asked to merge.
func (a *remoteAccept) gate(ctx context.Context) error {
	if !a.gp.enabled() {
		return nil
	}
	a.begin("gate")
	e, base := a.e, a.rec.Base
	tip, err := a.git().BranchCommit(ctx, e.Dir(), base)
	if err != nil {
		return fmt.Errorf("accept %s: %w", a.slug, err)
	}
	_, reused, run, err := e.Gates().gateTree(ctx, "accept", a.sn, a.gp, tip, a.sn.Session.Branch, base, a.opts, nil)
	switch {
	case err != nil:
		return err
	case reused != "":
		a.say(func(n Narrator) { n.Note("the gate passed on this exact tree already (run " + reused + ")") })
	case !run.Passed:
		return &GateError{Task: a.slug, Run: *run}
	}
	return nil
}

// GateCheck is what lazy gate did: the run (reused when this machine's
// gate passed on the same tree before), or that there is no gate.
type GateCheck struct {
	Run    *task.GateRun
	Reused string // the id of the earlier passing run on the same tree
	Into   string
	// NoGate says neither lazy.gate nor .lazy/gate at the target's tip
	// names a command.
	NoGate bool
}

// Gate runs the gate now on the tree an accept of the task would land
// (its squash onto the target's current tip) and records the run,
// without landing anything: a check before accept. A pass is marked, so
// an accept onto the same tip lands without running it again.
func (e *Gates) Gate(ctx context.Context, name string, opts AcceptOptions) (*GateCheck, error) {
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	slug := sn.Task.Slug
	if sn.Task.Status.IsTerminal() || sn.Session == nil {
		return nil, fmt.Errorf("gate %s: the task is %s with no branch to gate", slug, sn.Task.Status)
	}
	local, err := e.Owned(sn)
	if err != nil {
		return nil, fmt.Errorf("gate %w", err)
	}
	into, err := e.BaseBranch(ctx, sn, e.Dir())
	if err != nil {
		return nil, err
	}
	tip, err := e.git().BranchCommit(ctx, e.Dir(), into)
	if err != nil {
		return nil, fmt.Errorf("gate %s: the branch %s it merges into does not exist", slug, into)
	}
	gp, err := e.gateAt(ctx, into, tip)
	if err != nil {
		return nil, fmt.Errorf("gate %s: %w", slug, err)
	}
	if !gp.enabled() {
		return &GateCheck{Into: into, NoGate: true}, nil
	}
	_, reused, run, err := e.gateTree(ctx, "gate", sn, gp, tip, local.Branch, into, opts, nil)
	if err != nil {
		return nil, err
	}
	return &GateCheck{Into: into, Reused: reused, Run: run}, nil
}
