package landing

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// markCleanup writes into this machine's record of the accept mine what
// its cleanup will remove (the worktree and branch of the session this
// machine runs, the branch's tip, the squash commit), before the task is
// recorded complete: an accept killed during its cleanup then leaves a
// record that lazy doctor finishes (FinishCleanup), never a worktree or
// branch nothing accounts for. It returns what it recorded (nil when the
// task has no session of this machine, so nothing is removed).
func (e *Cleanups) markCleanup(ctx context.Context, mine *owned.Accept, sn *task.Snapshot, commit string) *owned.Cleanup {
	s, err := e.Owned(sn)
	if err != nil {
		return nil
	}
	cl := &owned.Cleanup{Worktree: s.Worktree, Branch: s.Branch, Commit: commit, At: time.Now().UTC().Truncate(time.Second)}
	if tip, err := e.git().BranchTip(ctx, e.Dir(), s.Branch); err == nil {
		cl.Tip = tip
	}
	if mine.ID != "" {
		mine.Cleanup = cl
		_ = e.Accepts().Save(*mine) // the task's comment records the tip too
	}
	return cl
}

// cleanupNote is what the completion's comment says of the cleanup to
// come: where the branch was, so that deleting it loses nothing.
func cleanupNote(cl *owned.Cleanup) string {
	if cl == nil || cl.Branch == "" || cl.Tip == "" {
		return ""
	}
	return fmt.Sprintf("; its branch %s was at %s (git branch %s %s recreates it)", cl.Branch, cl.Tip, cl.Branch, cl.Tip)
}

// PendingCleanup is an accept this machine recorded complete whose
// cleanup did not finish (it was killed during it).
type PendingCleanup struct {
	TaskID   string `json:"task_id"`
	Slug     string `json:"slug,omitempty"`
	AcceptID string `json:"accept_id"`
	owned.Cleanup
}

// Describe is one sentence about the pending cleanup for a report.
func (p PendingCleanup) Describe() string {
	what := "its worktree " + p.Worktree
	if p.Branch != "" {
		what += " and its branch " + p.Branch
		if p.Tip != "" {
			what += " (at " + p.Tip + ")"
		}
	}
	return fmt.Sprintf("the accept of %s merged it (%s) and recorded it complete, but was killed before it removed %s", p.label(), p.Commit, what)
}

func (p PendingCleanup) label() string {
	if p.Slug != "" {
		return p.Slug
	}
	return p.TaskID
}

// PendingCleanups lists the accepts this machine began whose cleanup is
// still to do, and whose task no accept runs now (its lock is free); an
// accept still running does its own.
func (e *Cleanups) PendingCleanups() ([]PendingCleanup, error) {
	all, err := e.Accepts().All()
	if err != nil {
		return nil, err
	}
	var out []PendingCleanup
	for _, a := range all {
		if a.Cleanup == nil {
			continue
		}
		unlock, err := e.TryLockTask(a.TaskID)
		if errors.Is(err, flock.ErrHeld) {
			continue
		}
		if err == nil {
			unlock()
		}
		p := PendingCleanup{TaskID: a.TaskID, AcceptID: a.ID, Cleanup: *a.Cleanup}
		if sn, err := e.Store.Load(a.TaskID); err == nil {
			if sn.Task.Status == machine.Merging {
				continue // the recovery of its accept cleans up too
			}
			p.Slug = sn.Task.Slug
		}
		out = append(out, p)
	}
	return out, nil
}

// FinishCleanup finishes the cleanup of an accept killed during it,
// under the task's lock: an accepted task's worktree and branch (the
// ones this machine's session made, never names from a record) are
// removed as the accept would have, what must stay (a worktree with
// uncommitted changes) is kept and recorded on the task, and then the
// local record goes. A task that is no longer complete (reopened since)
// keeps its worktree and branch: only the record goes. A task still
// merging is left to the recovery of its accept, which cleans up too.
// It returns what it did, a line each.
func (e *Cleanups) FinishCleanup(ctx context.Context, p PendingCleanup) ([]string, error) {
	unlock, err := e.LockTask(ctx, p.TaskID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	local, err := e.Accepts().Match(p.TaskID, p.AcceptID)
	if err != nil || local.Cleanup == nil {
		return nil, nil // finished meanwhile
	}
	sn, err := e.Store.Load(p.TaskID)
	if err != nil {
		return nil, err
	}
	switch {
	case sn.Task.Status == machine.Merging:
		return []string{"left to the recovery of its interrupted accept, which cleans up too"}, nil
	case sn.Task.Status != machine.Complete || sn.Task.Outcome != task.OutcomeAccepted:
		e.Accepts().Forget(p.TaskID, p.AcceptID)
		return []string{fmt.Sprintf("the task is %s now, so its worktree and branch stay; dropped the record", sn.Task.Status)}, nil
	}
	kept := e.cleanupAccepted(ctx, sn)
	done := []string{"removed what was left of its worktree and branch"}
	if p.Branch != "" && p.Tip != "" {
		done[0] += fmt.Sprintf(" (git branch %s %s recreates the branch)", p.Branch, p.Tip)
	}
	e.Accepts().Forget(p.TaskID, p.AcceptID)
	return append(done, kept...), nil
}

// acceptCheckoutPrefix names the checkouts an accept makes to merge
// into a branch no worktree has checked out: <lazy dir>/tmp/accept-<task>.
const acceptCheckoutPrefix = "accept-"

// isAcceptCheckout reports whether dir is a checkout an accept made.
func (e *Cleanups) isAcceptCheckout(dir string) bool {
	tmp := e.Repo.LazyDir("tmp")
	return filepath.Dir(dir) == tmp && strings.HasPrefix(filepath.Base(dir), acceptCheckoutPrefix)
}

// LeftCheckout is a checkout an accept made to merge into a branch and
// did not remove (it was killed).
type LeftCheckout struct {
	Dir    string `json:"dir"`
	TaskID string `json:"task_id"`
	Branch string `json:"branch,omitempty"`
	// Dirty says it has uncommitted changes: lazy leaves it.
	Dirty bool `json:"dirty"`
}

// LeftCheckouts lists the checkouts accepts made and left, whose task no
// accept runs now and whose accept is not waiting for its recovery (the
// recovery merges there).
func (e *Cleanups) LeftCheckouts(ctx context.Context) []LeftCheckout {
	dirs, _ := filepath.Glob(e.Repo.LazyDir("tmp", acceptCheckoutPrefix+"*"))
	var out []LeftCheckout
	for _, dir := range dirs {
		id := strings.TrimPrefix(filepath.Base(dir), acceptCheckoutPrefix)
		if !task.ValidID(id) {
			continue
		}
		unlock, err := e.TryLockTask(id)
		if err != nil {
			continue // its accept runs
		}
		sn, lerr := e.Store.Load(id)
		unlock()
		if lerr == nil && sn.Task.Status == machine.Merging && e.Recovery().OwnsAccept(sn) {
			continue // its recovery merges there
		}
		l := LeftCheckout{Dir: dir, TaskID: id}
		l.Branch, _ = e.git().CurrentBranch(ctx, dir)
		dirty, err := e.git().Dirty(ctx, dir)
		l.Dirty = err != nil || dirty
		out = append(out, l)
	}
	return out
}

// RemoveLeftCheckout removes a clean checkout an accept left (git
// worktree remove, which refuses one with changes).
func (e *Cleanups) RemoveLeftCheckout(ctx context.Context, l LeftCheckout) error {
	if !e.isAcceptCheckout(l.Dir) || l.Dirty {
		return fmt.Errorf("%s is not a clean checkout an accept left", l.Dir)
	}
	return e.git().Remove(ctx, e.Dir(), l.Dir)
}
