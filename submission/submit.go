package submission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lazyorch/lazy/forge"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/quote"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// SubmitOptions configure a submit.
type SubmitOptions struct {
	Draft  bool
	Remote string // "" = the earlier submission's, lazy.forge.remote, origin
}

// SubmitResult says what a submit did.
type SubmitResult struct {
	Snapshot *task.Snapshot
	PR       *forge.PR
	Updated  bool // an open pull request was updated rather than opened
}

// Submit pushes a blocked task's branch and opens a pull request for it
// against its parent's branch (a subtask: the pull requests stack) or its
// target branch, or updates the one it has: blocked -> submitted. Run
// again after more turns, it pushes and updates the same pull request.
//
// The forge is checked before anything is pushed. The submission is
// recorded before the push, and the pull request is always looked up by
// its head branch before one is created, so a submit killed at any point
// leaves the task submitted (a resting status) and the next submit
// finishes the job without opening a second pull request. A push that
// fails (an unreachable remote, a rejected push) puts the record back as
// it was, since nothing left the machine.
func (sv *Service) Submit(ctx context.Context, name string, opts SubmitOptions) (*SubmitResult, error) {
	e := sv.Env
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if sn, err = sv.escapeStranded(ctx, sn, "submit"); err != nil {
		return nil, err
	}
	return sv.SubmitLocked(ctx, sn, opts)
}

// SubmitLocked is Submit under the task lock, for an accept that
// submits first.
func (sv *Service) SubmitLocked(ctx context.Context, sn *task.Snapshot, opts SubmitOptions) (*SubmitResult, error) {
	e := sv.Env
	if err := sv.Preflight(ctx, sn); err != nil {
		return nil, err
	}
	slug := sn.Task.Slug
	remote, err := sv.submitRemote(sn, opts.Remote)
	if err != nil {
		return nil, err
	}
	fg, err := sv.OpenForge(ctx, remote)
	if err != nil {
		return nil, fmt.Errorf("submit %s: %w", slug, err)
	}
	if err := fg.Ready(ctx); err != nil {
		return nil, fmt.Errorf("submit %s: nothing was pushed: %w", slug, err)
	}
	base, err := e.BaseBranch(ctx, sn, e.Dir())
	if err != nil {
		return nil, err
	}
	if err := task.ValidBranchName(base); err != nil {
		return nil, fmt.Errorf("submit %s: %w", slug, err)
	}
	if sn.Task.Parent != "" {
		// A subtask's pull request targets its parent's branch, which
		// must be on the forge: submit the parent first (stacking).
		if !sv.git().RemoteHasBranch(ctx, e.Dir(), remote, base) {
			return nil, fmt.Errorf("submit %s: its parent's branch %s is not on %s; submit the parent task first, then this one (its pull request stacks on the parent's)", slug, base, remote)
		}
	}
	return sv.SubmitTo(ctx, sn, fg, remote, base, opts.Draft)
}

// Preflight refuses what cannot be submitted; the caller holds the
// task lock.
func (sv *Service) Preflight(ctx context.Context, sn *task.Snapshot) error {
	e := sv.Env
	slug := sn.Task.Slug
	switch st := sn.Task.Status; {
	case st == machine.Merging && sn.Task.ForgePending():
		return fmt.Errorf("submit %s: a merge of pull request #%d is pending on the forge; run lazy accept to check on it", slug, sn.Task.Forge.Number)
	case st == machine.Conflict || sn.PendingViolations() > 0:
		return fmt.Errorf("submit %s: %s pending (%s); decide them with lazy unblock first", slug, words.Count(sn.PendingViolations(), "file-permission violation is", "file-permission violations are"), strings.Join(sn.Violations.Pending, ", "))
	case st != machine.Blocked && st != machine.Submitted:
		return fmt.Errorf("submit %s: the task is %s; submit works on blocked tasks (and re-submits submitted ones)", slug, st)
	}
	if sn.Session == nil {
		return fmt.Errorf("submit %s: the task never ran, so there is nothing to submit", slug)
	}
	// The branch pushed and the worktree checked are this machine's
	// record of the session, never the task record's (a fetch may have
	// written it): bind puts them into sn for what follows.
	if _, err := e.Bind(sn); err != nil {
		return fmt.Errorf("submit %w", err)
	}
	if err := e.WorktreeFree(sn.Task.ID, "submit", slug); err != nil {
		return err
	}
	if dirty, err := sv.git().Dirty(ctx, sn.Session.Worktree); err != nil {
		return fmt.Errorf("submit %s: inspect its worktree %s: %w", slug, sn.Session.Worktree, err)
	} else if dirty {
		return fmt.Errorf("submit %s: its worktree %s has uncommitted changes; commit or discard them (or lazy unblock the agent) first", slug, sn.Session.Worktree)
	}
	open, err := lifecycle.OpenSubtasks(e.Store, sn.Task.ID)
	if err != nil {
		return err
	}
	if len(open) > 0 {
		return fmt.Errorf("submit %s: its subtasks %s are not finished; accept, reject or close them first so the pull request holds the whole work", slug, strings.Join(open, ", "))
	}
	return nil
}

// SubmitTo records, pushes and opens on fg; the caller holds the lock
// and has checked everything (Preflight).
func (sv *Service) SubmitTo(ctx context.Context, sn *task.Snapshot, fg forge.Forge, remote, base string, draft bool) (*SubmitResult, error) {
	e := sv.Env
	slug, head := sn.Task.Slug, sn.Session.Branch
	from := sn.Task.Status
	var prior *task.ForgeRecord
	if sn.Task.Forge != nil {
		f := *sn.Task.Forge
		prior = &f
	}
	// Record first: the task is submitted before anything leaves.
	sn, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != from {
			return nil, fmt.Errorf("submit %s: the task became %s meanwhile", slug, s.Task.Status)
		}
		f := s.Task.Forge
		if f == nil || f.Kind != fg.Kind() || f.Remote != remote || f.Head != head {
			f = &task.ForgeRecord{Kind: fg.Kind(), Remote: remote, Head: head}
		}
		f.Base, f.Revising, f.Draft = base, false, draft
		if f.State == forge.StateClosed || f.State == forge.StateMerged {
			f.Number, f.URL, f.State = 0, "", "" // a new pull request
		}
		s.Task.Forge = f
		s.Task.Status = machine.Submitted
		return &task.Op{Name: "submit", Actor: e.Actor, Reason: "submitting to " + remote}, nil
	})
	if err != nil {
		return nil, err
	}
	fail := func(cause error) error {
		return fmt.Errorf("submit %s: %w; the task stays submitted and lazy submit %s finishes the job (it finds an opened pull request by its branch)", slug, cause, slug)
	}
	// undo puts the record back as it was before this submit when
	// nothing left the machine, so no task rests in submitted without
	// a pull request because of a push that never happened.
	undo := func(cause error) (*SubmitResult, error) {
		if _, _, uerr := e.Store.Update(context.WithoutCancel(ctx), sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			if s.Task.Status != machine.Submitted {
				return nil, nil
			}
			if from != machine.Submitted {
				if err := machine.Validate(machine.Submitted, from, e.Actor); err != nil {
					return nil, err
				}
			}
			s.Task.Status, s.Task.Forge = from, prior
			return &task.Op{Name: "submit-undone", Actor: e.Actor, Reason: "nothing reached " + remote}, nil
		}); uerr != nil {
			return nil, fail(fmt.Errorf("%w (restoring the status before the submit also failed: %w)", cause, uerr))
		}
		return nil, fmt.Errorf("submit %s: %w; the task is %s again, as before the submit", slug, cause, from)
	}
	tip, err := sv.git().BranchCommit(ctx, e.Dir(), head)
	if err != nil {
		return undo(fmt.Errorf("its branch %s is missing: %w", head, err))
	}
	if err := sv.push(ctx, remote, head, sn.Task.Forge.HeadSHA); err != nil {
		if ctx.Err() != nil {
			return nil, fail(err) // interrupted: the push may have gone through
		}
		return undo(err)
	}
	body, err := sv.prBody(sn)
	if err != nil {
		return nil, fail(err)
	}
	hadPR := sn.Task.Forge.Number > 0
	pr, err := fg.Open(ctx, forge.Spec{Head: head, Base: base, Title: sn.Task.Title, Body: body, Draft: draft})
	if err != nil {
		return nil, fail(err)
	}
	now := time.Now().UTC()
	sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Forge == nil {
			return nil, errors.New("the forge record vanished")
		}
		RecordPR(s.Task.Forge, pr, now)
		s.Task.Forge.HeadSHA = tip
		verb := "opened"
		if hadPR {
			verb = "updated"
		}
		s.AddComment(task.Comment{Actor: e.Actor, At: now.Truncate(time.Second), Text: fmt.Sprintf("submitted: %s pull request #%d (%s) at %s", verb, pr.Number, pr.URL, shortHash(tip))})
		return &task.Op{Name: "submit", Actor: e.Actor, Reason: fmt.Sprintf("pull request #%d", pr.Number)}, nil
	})
	if err != nil {
		return nil, fail(err)
	}
	return &SubmitResult{Snapshot: sn, PR: pr, Updated: hadPR}, nil
}

func shortHash(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// push sends the task branch to remote. Never forced without a lease:
// with the commit lazy pushed last as the lease a rewritten branch may
// replace exactly that commit; without one only a fast-forward goes.
func (sv *Service) push(ctx context.Context, remote, head, lease string) error {
	e := sv.Env
	ref := "refs/heads/" + head
	args := []string{"--quiet", "--no-verify"}
	if lease != "" && task.ValidHex(lease) {
		args = append(args, "--force-with-lease="+ref+":"+lease)
	}
	args = append(args, remote, ref+":"+ref)
	if err := sv.git().Push(ctx, e.Dir(), args); err != nil {
		return pushError(head, remote, err)
	}
	return nil
}

// pushError words a failed push by its cause: only a rejected push is
// blamed on someone else's push.
func pushError(head, remote string, err error) error {
	msg := ""
	var ge *gitcli.Error
	if errors.As(err, &ge) {
		msg = strings.ToLower(ge.Stderr)
	}
	switch {
	case unreachable(msg):
		return fmt.Errorf("could not reach remote %s: %w; check the network and run lazy submit again", remote, err)
	case strings.Contains(msg, "[rejected]") || strings.Contains(msg, "stale info") || strings.Contains(msg, "non-fast-forward") || strings.Contains(msg, "fetch first"):
		return fmt.Errorf("push %s to %s was rejected (someone else may have pushed to it; fetch and lazy sync, then submit again): %w", head, remote, err)
	default:
		return fmt.Errorf("push %s to %s: %w", head, remote, err)
	}
}

// unreachableSigns are what git and its transports print when the remote
// cannot be reached at all.
var unreachableSigns = []string{
	"could not resolve host", "failed to connect", "couldn't connect to server", "connection refused",
	"connection timed out", "operation timed out", "network is unreachable", "no route to host",
	"could not resolve hostname", "temporary failure in name resolution", "connection reset",
	"name or service not known",
}

func unreachable(stderr string) bool {
	for _, s := range unreachableSigns {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// prBody is the pull request description: the goal, the turns, and the
// Lazy-Task trailer that ties the pull request to the task.
func (sv *Service) prBody(sn *task.Snapshot) (string, error) {
	e := sv.Env
	goal, err := sn.Goal()
	if err != nil {
		return "", err
	}
	turns, err := e.Store.Turns(sn)
	if err != nil {
		return "", err
	}
	return prDescription(sn, goal, turns), nil
}

// prDescription writes the pull request description of prBody.
func prDescription(sn *task.Snapshot, goal string, turns []task.Turn) string {
	var b strings.Builder
	if g := strings.TrimSpace(goal); g != "" {
		// A person's goal is markdown for the forge to render; a goal an
		// agent or the builder wrote is their words, fenced, so it cannot
		// hide or fake the rest of the description.
		if sn.Task.CreatedBy != "" && sn.Task.CreatedBy != machine.Human {
			g = quote.Block(g)
		}
		b.WriteString(forge.Bound(g, 20000) + "\n\n")
	}
	b.WriteString("### Turns\n\n")
	for _, t := range turns {
		who := t.Role
		if t.Role == task.RoleHuman && t.Actor != "" {
			who = string(t.Actor)
		}
		line := strings.Join(strings.Fields(sanitize.Field(t.Content)), " ")
		if r := []rune(line); len(r) > 120 {
			line = string(r[:119]) + "…"
		}
		// A turn's text is someone's words on a line of lazy's: plain text
		// on the forge, never a link, HTML or a comment that hides the rest.
		line = quote.Markdown(line)
		kind := t.Kind
		if kind == "" {
			kind = "reply"
		}
		fmt.Fprintf(&b, "%d. **%s** (%s): %s\n", t.Seq, who, kind, line)
	}
	b.WriteString("\n" + session.AcceptTrailer(sn.Task.ID) + "\n" + forgeMarker + "\n")
	return b.String()
}
