package landing

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lazyorch/lazy/forge"
	"github.com/lazyorch/lazy/gate"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/submission"
	"github.com/lazyorch/lazy/task"
)

// RemoteAcceptPlan is the plan of an accept through the forge, built from
// the same phase table as a local accept. A fresh accept of a submitted
// task records merging, requests the merge and checks the result; the
// re-entry plan of a forge-pending merge (spec: acceptReentryPhasePlan)
// is check remote state -> finalize -> clean up.
func RemoteAcceptPlan(preTurn, resubmit, reentry bool) []Phase {
	ids := []string{"record", "request-merge", "check-remote", "finish", "cleanup"}
	if resubmit {
		ids = append([]string{"resubmit"}, ids...)
	}
	if preTurn {
		ids = append([]string{"pre-accept"}, ids...)
	}
	if reentry {
		ids = []string{"check-remote", "finish", "cleanup"}
	}
	var plan []Phase
	for _, id := range ids {
		for _, p := range AcceptPhases {
			if p.ID == id {
				plan = append(plan, p)
			}
		}
	}
	return plan
}

// acceptRemote is lazy accept on a submitted task, or its re-entry on a
// forge-pending merge (merging without accept_in_flight_from). The caller
// holds the task lock.
//
// Checks still pending or an approval still missing leave the task
// merging (the forge merges it on its own when it can) and return with
// Pending saying why; a later accept, or the daemon's forge sync,
// finishes it. Failing checks or a refused merge restore submitted, the
// status it actually had.
func (e *Remote) acceptRemote(ctx context.Context, sn *task.Snapshot, say func(func(Narrator)), opts AcceptOptions) (res *AcceptResult, err error) {
	if sn.Task.Status != machine.Merging {
		// A task whose agent fixed what its gate found re-enters here.
		if t := e.queue().ReenterThroughForge(sn.Task.ID); t != nil {
			defer func() { t.LeaveThroughForge(forgedResult(res), err) }()
		}
	}
	a := &remoteAccept{e: e.Service, say: say, opts: opts, slug: sn.Task.Slug}
	if err := a.open(ctx, sn); err != nil {
		return nil, err
	}
	if err := a.announcePlan(ctx); err != nil {
		return nil, err
	}
	if a.preTurn {
		if err := a.preAcceptTurn(ctx); err != nil {
			return nil, err
		}
	}
	if a.resubmit {
		if err := a.resubmitBranch(ctx); err != nil {
			return nil, err
		}
	}
	if !a.reentry {
		if err := a.gate(ctx); err != nil {
			return nil, err
		}
		if err := a.recordAndRequest(ctx); err != nil {
			return nil, err
		}
	}
	pr, err := a.checkRemote(ctx)
	if err != nil {
		return nil, err
	}
	return a.settle(ctx, pr)
}

// RemoteGit is what an accept through the forge asks of git: the task
// branch's tip, to tell whether it moved since the pull request's head
// and whether the forge merged all of it.
type RemoteGit interface {
	BranchCommit(ctx context.Context, repoDir, branch string) (string, error)
	IsAncestor(ctx context.Context, repoDir, ancestor, of string) bool
}

// git is git in the forge's role.
func (e *Remote) git() RemoteGit { return e.worktrees() }

// git is the forge's role: a remoteAccept's phases read the branch only.
func (a *remoteAccept) git() RemoteGit { return a.e.Remote().git() }

// remoteAccept is one accept through the forge in progress: the task as
// it now stands, its pull request and forge, the plan announced and how
// far it has got. Each phase is one method; acceptRemote calls them in
// order.
type remoteAccept struct {
	e    *Service
	say  func(func(Narrator))
	opts AcceptOptions
	slug string

	sn  *task.Snapshot
	rec *task.ForgeRecord // the pull request as recorded when the accept began
	fg  forge.Forge
	// reentry: the task was merging already (a forge-pending merge); the
	// merge was requested before, so only its outcome is checked.
	reentry  bool
	preTurn  bool // a pre-accept turn runs first
	resubmit bool // the branch moved since it was submitted: push it first

	plan []Phase
	step int // phases of plan begun so far
	res  *AcceptResult
	// gp is the gate run before the merge is requested (nil: none).
	gp *gatePlan
	// approved are the protected files a human approved with this
	// accept.
	approved    []string
	approvedTip string
}

// open finds the task's pull request and a forge that is ready to act on
// it. A blocked task in a repository that merges through the forge is
// submitted first.
func (a *remoteAccept) open(ctx context.Context, sn *task.Snapshot) error {
	e, slug := a.e, a.slug
	if sn.Task.Status == machine.Blocked {
		// The repository merges through the forge, or the task's pull
		// request was being revised (the re-entry after a gate fix):
		// submit first.
		why := "this repository merges through the forge (lazy.accept.viaForge)"
		if a.opts.ViaForge {
			why = "the task goes back to its pull request with its agent's fix"
		}
		a.say(func(n Narrator) { n.Note(why + "; submitting first") })
		sub, err := e.submission().SubmitLocked(ctx, sn, submission.SubmitOptions{})
		if err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		sn = sub.Snapshot
	}
	a.sn, a.rec = sn, sn.Task.Forge
	if a.rec == nil || a.rec.Number <= 0 {
		return fmt.Errorf("accept %s: the task is submitted but has no pull request yet; run lazy submit %s to finish opening it", slug, slug)
	}
	fg, err := e.submission().ForgeOf(ctx, sn)
	if err != nil {
		return fmt.Errorf("accept %s: %w", slug, err)
	}
	if err := fg.Ready(ctx); err != nil {
		return fmt.Errorf("accept %s: %w", slug, err)
	}
	a.fg = fg
	a.res = &AcceptResult{Into: a.rec.Base}
	return nil
}

// announcePlan decides which phases run (a re-entry only checks the
// outcome; a fresh accept resubmits a branch that moved) and tells the
// narrator.
func (a *remoteAccept) announcePlan(ctx context.Context) error {
	a.reentry = a.sn.Task.Status == machine.Merging
	a.preTurn = !a.reentry && a.e.preTurn(a.opts)
	if !a.reentry {
		var err error
		if a.resubmit, err = a.branchMoved(ctx); err != nil {
			return err
		}
		if a.gp, err = a.e.Gates().forgeGate(ctx, a.rec.Base, a.opts); err != nil {
			return fmt.Errorf("accept %s: %w", a.slug, err)
		}
		if err := a.protect(ctx); err != nil {
			return err
		}
	}
	a.announce(RemoteAcceptPlan(a.preTurn, a.resubmit, a.reentry))
	return nil
}

// announce makes plan the accept's plan and tells the narrator.
func (a *remoteAccept) announce(plan []Phase) {
	if a.gp.enabled() {
		plan = withGate(plan)
	}
	a.plan = plan
	a.say(func(n Narrator) { n.Plan(plan) })
}

// begin numbers and narrates phase id if the plan has it.
func (a *remoteAccept) begin(id string) {
	for _, p := range a.plan {
		if p.ID == id {
			a.step++
			s := a.step
			a.say(func(n Narrator) { n.Step(s, len(a.plan), p) })
		}
	}
}

// branchMoved reports whether the task's branch moved since the pull
// request was opened, after the same pre-flight as a submit.
func (a *remoteAccept) branchMoved(ctx context.Context) (bool, error) {
	if err := a.e.submission().Preflight(ctx, a.sn); err != nil {
		return false, fmt.Errorf("accept: %w", err)
	}
	tip, err := a.git().BranchCommit(ctx, a.e.Dir(), a.sn.Session.Branch)
	if err != nil {
		return false, fmt.Errorf("accept %s: its branch %s is missing", a.slug, a.sn.Session.Branch)
	}
	return tip != a.rec.HeadSHA, nil
}

// preAcceptTurn runs the same pre-accept turn as a local accept's, under
// the task lock; the task parks back submitted, and what the turn
// committed is pushed before the merge is requested (the plan says so
// when that changes it).
func (a *remoteAccept) preAcceptTurn(ctx context.Context) error {
	a.begin("pre-accept")
	sn, err := a.e.runPreAccept(ctx, a.sn, a.opts)
	if err != nil {
		return err
	}
	a.sn = sn
	was := a.resubmit
	if a.resubmit, err = a.branchMoved(ctx); err != nil {
		return err
	}
	if a.resubmit != was {
		a.announce(RemoteAcceptPlan(true, a.resubmit, false))
	}
	return a.protect(ctx)
}

// protect checks the change against the protected paths of the gate of
// the pull request's base (the forge's checks count as its gate under
// lazy.gate.forge checks: the task must not rewrite its CI either).
func (a *remoteAccept) protect(ctx context.Context) error {
	e, base := a.e, a.rec.Base
	tip, err := a.git().BranchCommit(ctx, e.Dir(), base)
	if err != nil {
		return nil // no copy of the base here: the forge gate says so when it runs
	}
	gp, err := e.Gates().gateAt(ctx, base, tip)
	if err != nil {
		if a.opts.SkipGate {
			return nil
		}
		return fmt.Errorf("accept %s: %w", a.slug, err)
	}
	a.approved, err = e.Gates().checkProtected(ctx, a.slug, gp, tip, a.sn.Session.Branch, gp.Forge == gate.ForgeChecks, a.opts)
	a.approvedTip, _ = a.git().BranchCommit(ctx, e.Dir(), a.sn.Session.Branch)
	if err == nil && len(a.approved) > 0 {
		files := listProtected(a.approved, false)
		a.say(func(n Narrator) { n.Note("protected paths approved by a human: " + files) })
	}
	return err
}

// resubmitBranch pushes the branch that moved to the pull request.
func (a *remoteAccept) resubmitBranch(ctx context.Context) error {
	a.begin("resubmit")
	sub, err := a.e.submission().SubmitTo(ctx, a.sn, a.fg, a.rec.Remote, a.rec.Base, a.rec.Draft)
	if err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	a.sn = sub.Snapshot
	return nil
}

// recordAndRequest records the task merging (forge-pending: no
// accept_in_flight_from), with the merge method, before the merge is
// requested: a crash in between is re-entered as a check of the outcome.
func (a *remoteAccept) recordAndRequest(ctx context.Context) error {
	e, slug, rec := a.e, a.slug, a.rec
	a.begin("record")
	method, err := e.Remote().mergeMethod(ctx, a.fg)
	if err != nil {
		return fmt.Errorf("accept %s: %w", slug, err)
	}
	a.sn, _, err = e.Store.Update(ctx, a.sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Submitted || s.Task.Forge == nil {
			return nil, fmt.Errorf("accept %s: the task became %s meanwhile", slug, s.Task.Status)
		}
		s.Task.Status = machine.Merging
		s.Task.Accept = nil // forge-pending: no accept_in_flight_from
		s.Task.Forge.MergeMethod = method
		s.Task.Forge.MergeRequested = nil
		reason := fmt.Sprintf("merging pull request #%d on the forge (%s)", rec.Number, method)
		if len(a.approved) > 0 {
			if s.Task.Gate == nil {
				s.Task.Gate = &task.GateRecord{}
			}
			s.Task.Gate.Approved = e.Gates().approval(a.approved, a.approvedTip, time.Now())
			reason += "; a human approved the protected paths " + session.OneLine(listProtected(a.approved, false))
		}
		return &task.Op{Name: "accept", Actor: e.Actor, Reason: reason}, nil
	})
	if err != nil {
		return err
	}
	a.begin("request-merge")
	return e.Remote().requestMerge(ctx, a.sn, a.fg, method)
}

// checkRemote reads the pull request back from the forge once its merge
// was requested (now or by an earlier accept).
func (a *remoteAccept) checkRemote(ctx context.Context) (*forge.PR, error) {
	a.begin("check-remote")
	pr, err := a.fg.View(ctx, a.rec.Number)
	if err != nil {
		return nil, fmt.Errorf("accept %s: the merge of pull request #%d was requested, but reading it back failed; lazy accept %s checks again: %w", a.slug, a.rec.Number, a.slug, err)
	}
	a.res.PR = pr
	return pr, nil
}

// settle acts on the pull request's state: closed unmerged blocks the
// task again, failing checks put it back submitted, an open one that is
// still waiting leaves it merging (asking again on a re-entry once it is
// mergeable), and a merged one is finished.
func (a *remoteAccept) settle(ctx context.Context, pr *forge.PR) (*AcceptResult, error) {
	e, slug, id := a.e, a.slug, a.sn.Task.ID
	switch pr.State {
	case forge.StateClosed:
		_, _ = e.Remote().forgeRestore(ctx, id, machine.Blocked, pr, fmt.Sprintf("pull request #%d was closed on the forge without merging", pr.Number))
		return nil, fmt.Errorf("accept %s: pull request #%d (%s) was closed on the forge without merging; the task is blocked again (lazy submit opens a new one)", slug, pr.Number, pr.URL)
	case forge.StateOpen:
		if pr.ChecksState() == forge.ChecksFailing {
			why := fmt.Sprintf("checks failed on pull request #%d: %s", pr.Number, strings.Join(failing(pr), ", "))
			_, _ = e.Remote().forgeRestore(ctx, id, machine.Submitted, pr, "accept aborted: "+why)
			return nil, fmt.Errorf("accept %s: %s; nothing was merged and the task is submitted again (fix them with lazy unblock, then lazy submit)", slug, why)
		}
		if a.reentry && Mergeable(pr) {
			var err error
			if pr, err = a.askAgain(ctx, pr); err != nil {
				return nil, err
			}
			if pr.State == forge.StateMerged {
				return e.Remote().finishRemote(ctx, a.sn, pr, a.res, a.begin)
			}
		}
		return a.leaveMerging(ctx, pr)
	}
	return e.Remote().finishRemote(ctx, a.sn, pr, a.res, a.begin)
}

// askAgain requests the merge again of a pull request that is ready now
// but was not merged by the forge itself (no auto-merge), and reads it
// back; a failed read keeps what was known.
func (a *remoteAccept) askAgain(ctx context.Context, pr *forge.PR) (*forge.PR, error) {
	if err := a.e.Remote().requestMerge(ctx, a.sn, a.fg, a.sn.Task.Forge.MergeMethod); err != nil {
		return nil, err
	}
	if again, err := a.fg.View(ctx, a.rec.Number); err == nil {
		pr, a.res.PR = again, again
	}
	return pr, nil
}

// leaveMerging records what holds the pull request back and leaves the
// task merging: the forge merges it on its own when it can, and a later
// lazy accept (or the daemon's forge sync) finishes it.
func (a *remoteAccept) leaveMerging(ctx context.Context, pr *forge.PR) (*AcceptResult, error) {
	e, res := a.e, a.res
	res.Pending = pendingReason(pr)
	sn, _, err := e.Store.Update(ctx, a.sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Forge == nil {
			return nil, nil
		}
		submission.RecordPR(s.Task.Forge, pr, time.Now())
		return &task.Op{Name: "pr-sync", Actor: e.Actor, Reason: res.Pending}, nil
	})
	if err != nil {
		return nil, err
	}
	a.say(func(n Narrator) {
		n.Note(fmt.Sprintf("pull request #%d is not merged yet: %s; it stays merging and lazy accept (or the daemon) finishes it once the forge merges", pr.Number, res.Pending))
	})
	res.Snapshot = sn
	return res, nil
}

// finishRemote runs the finalize and clean-up phases of a forge merge.
func (e *Remote) finishRemote(ctx context.Context, sn *task.Snapshot, pr *forge.PR, res *AcceptResult, begin func(string)) (*AcceptResult, error) {
	begin("finish")
	sn, err := e.finishForgeMerge(ctx, sn.Task.ID, pr)
	if err != nil {
		return nil, err
	}
	res.Snapshot, res.Commit = sn, pr.MergeCommit
	begin("cleanup")
	res.Warnings = append(res.Warnings, e.cleanupForge(ctx, sn)...)
	return res, nil
}

// waitingOnly reports whether an open pull request is held back only by
// checks still running or an approval still missing.
func waitingOnly(pr *forge.PR) bool {
	return pr.ChecksState() == forge.ChecksPending || pr.Review == forge.ReviewRequired
}

// Mergeable reports whether an open pull request has nothing holding it
// back that lazy can see: no failing or pending check, no missing
// approval or requested change.
func Mergeable(pr *forge.PR) bool {
	c := pr.ChecksState()
	return pr.State == forge.StateOpen && (c == forge.ChecksPassing || c == forge.ChecksNone) &&
		pr.Review != forge.ReviewRequired && pr.Review != forge.ReviewChangesRequested && pr.Blocked == ""
}

// mergesThroughForge reports whether an accept of this blocked task
// goes through the forge: git config lazy.accept.viaForge.
func (e *Remote) mergesThroughForge(sn *task.Snapshot) (bool, error) {
	if sn.Task.Status != machine.Blocked {
		return false, nil
	}
	cfg, err := e.Repo.Config()
	if err != nil {
		return false, err
	}
	return cfg.Bool("lazy.accept.viaForge", false)
}

// mergeMethod is git config lazy.forge.mergeMethod (default squash),
// or the first method the repository allows when that one is not.
func (e *Remote) mergeMethod(ctx context.Context, fg forge.Forge) (string, error) {
	want := ""
	if cfg, err := e.Repo.Config(); err == nil {
		want, _ = cfg.Get("lazy.forge.mergeMethod")
	}
	allowed, err := fg.Methods(ctx)
	if err != nil {
		allowed = nil // unknown: ask for what is configured and let the forge say
	}
	return forge.PickMethod(strings.TrimSpace(want), allowed)
}

// requestMerge asks the forge to merge and records that it was asked; a
// refusal restores submitted.
func (e *Remote) requestMerge(ctx context.Context, sn *task.Snapshot, fg forge.Forge, method string) error {
	n := sn.Task.Forge.Number
	if err := fg.Merge(ctx, n, method); err != nil {
		pr, verr := fg.View(ctx, n)
		// Merged meanwhile; or only waiting (checks running, approval
		// missing) on a forge that cannot merge by itself later: the
		// request stands, and a later accept or the forge sync asks
		// again once it can merge.
		standing := verr == nil && (pr.State == forge.StateMerged || pr.State == forge.StateOpen && waitingOnly(pr))
		if !standing {
			_, _ = e.forgeRestore(ctx, sn.Task.ID, machine.Submitted, nil, fmt.Sprintf("accept aborted: the forge refused to merge pull request #%d: %v", n, err))
			return fmt.Errorf("accept %s: the forge refused to merge pull request #%d; the task is submitted again: %w", sn.Task.Slug, n, err)
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	_, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Merging || s.Task.Forge == nil {
			return nil, nil
		}
		s.Task.Forge.MergeRequested = &now
		return &task.Op{Name: "merge-requested", Actor: e.Actor, Reason: fmt.Sprintf("asked the forge to %s-merge pull request #%d", method, n)}, nil
	})
	return err
}

func failing(pr *forge.PR) []string {
	var names []string
	for _, c := range pr.Checks {
		if c.State == forge.ChecksFailing {
			names = append(names, c.Name)
		}
	}
	return names
}

// pendingReason says why an open pull request is not merged yet.
func pendingReason(pr *forge.PR) string {
	var why []string
	if pr.ChecksState() == forge.ChecksPending {
		n := 0
		for _, c := range pr.Checks {
			if c.State == forge.ChecksPending {
				n++
			}
		}
		why = append(why, fmt.Sprintf("%s pending", words.Count(n, "check", "checks")))
	}
	switch pr.Review {
	case forge.ReviewRequired:
		why = append(why, "approval required")
	case forge.ReviewChangesRequested:
		why = append(why, "changes requested in review")
	}
	if len(why) == 0 && pr.Blocked != "" {
		why = append(why, "the forge reports it "+pr.Blocked)
	}
	if len(why) == 0 {
		why = append(why, "waiting for the forge to merge it")
	}
	return strings.Join(why, ", ")
}

// forgeRestore moves a task off a forge merge to status to (submitted
// after an aborted accept, blocked when the pull request was closed),
// with the reason as a comment.
func (e *Remote) forgeRestore(ctx context.Context, id string, to machine.Status, pr *forge.PR, why string) (*task.Snapshot, error) {
	sn, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Merging && s.Task.Status != machine.Submitted || s.Task.Status == to {
			return nil, nil
		}
		if f := s.Task.Forge; f != nil {
			f.MergeRequested = nil
			if pr != nil {
				submission.RecordPR(f, pr, time.Now())
			}
		}
		s.Task.Status = to
		if to == machine.Blocked {
			s.Task.Status = machine.Park(s.PendingViolations())
			s.Task.Reason = why
		}
		s.AddComment(task.Comment{Actor: e.Actor, At: time.Now().UTC().Truncate(time.Second), Text: why})
		return &task.Op{Name: "forge-restore", Actor: e.Actor, Reason: why}, nil
	})
	return sn, err
}

// ClosedOnForge returns a submitted or forge-merging task whose pull
// request was closed unmerged to blocked, with the reason.
func (e *Remote) ClosedOnForge(ctx context.Context, id string, pr *forge.PR) (*task.Snapshot, error) {
	return e.forgeRestore(ctx, id, machine.Blocked, pr, fmt.Sprintf("pull request #%d (%s) was closed on the forge without merging", pr.Number, pr.URL))
}

// finishForgeMerge records a pull request the forge merged: the task
// completes with outcome accepted and the merge commit recorded. A
// submitted task passes through merging, as every accept does.
func (e *Remote) finishForgeMerge(ctx context.Context, id string, pr *forge.PR) (*task.Snapshot, error) {
	var sn *task.Snapshot
	_, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Submitted {
			return nil, nil
		}
		s.Task.Status = machine.Merging
		s.Task.Accept = nil
		return &task.Op{Name: "accept", Actor: e.Actor, Reason: fmt.Sprintf("pull request #%d was merged on the forge", pr.Number)}, nil
	})
	if err != nil {
		return nil, err
	}
	sn, _, err = e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Merging || !s.Task.ForgePending() {
			return nil, fmt.Errorf("the task is %s, not waiting for the forge", s.Task.Status)
		}
		now := time.Now().UTC()
		submission.RecordPR(s.Task.Forge, pr, now)
		FinishAccepted(s, now)
		text := fmt.Sprintf("accepted: pull request #%d (%s) merged into %s", pr.Number, pr.URL, s.Task.Forge.Base)
		if s.Task.Forge.MergeCommit != "" {
			text += " as " + s.Task.Forge.MergeCommit
		}
		s.AddComment(task.Comment{Actor: e.Actor, At: now.Truncate(time.Second), Text: text})
		return &task.Op{Name: "accept", Actor: e.Actor, Reason: fmt.Sprintf("pull request #%d merged on the forge", pr.Number)}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("pull request #%d is merged, but recording it failed; the daemon's forge sync retries: %w", pr.Number, err)
	}
	return sn, nil
}

// MergedOnForge finishes a task whose pull request the forge merged and
// cleans up its worktree and branch; it returns what was kept.
func (e *Remote) MergedOnForge(ctx context.Context, id string, pr *forge.PR) (*task.Snapshot, []string, error) {
	sn, err := e.finishForgeMerge(ctx, id, pr)
	if err != nil {
		return nil, nil, err
	}
	return sn, e.cleanupForge(ctx, sn), nil
}

// cleanupForge removes a forge-merged task's worktree and branch, unless
// the branch holds commits the forge never saw (the agent kept working
// after the last submit): those are kept and reported.
func (e *Remote) cleanupForge(ctx context.Context, sn *task.Snapshot) []string {
	f := sn.Task.Forge
	if sn.Session == nil || f == nil {
		return nil
	}
	s, err := e.Owned(sn)
	if err != nil {
		return []string{"its worktree and branch were left alone: " + err.Error()}
	}
	tip, err := e.git().BranchCommit(ctx, e.Dir(), s.Branch)
	if err != nil {
		return e.cleanupAccepted(ctx, sn) // the branch is gone already
	}
	if f.HeadSHA == "" || (tip != f.HeadSHA && !e.git().IsAncestor(ctx, e.Dir(), tip, f.HeadSHA)) {
		return []string{fmt.Sprintf("the branch %s and its worktree %s were kept: they hold commits pull request #%d never had", s.Branch, s.Worktree, f.Number)}
	}
	return e.cleanupAccepted(ctx, sn)
}
