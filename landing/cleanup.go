package landing

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// CleanupGit is what the clean-up of a task asks of git: whether its
// worktree is clean before removing it, and whether its branch holds
// work not merged before deleting it; and, for a checkout an accept
// added, which branch it has out.
type CleanupGit interface {
	Dirty(ctx context.Context, dir string) (bool, error)
	Remove(ctx context.Context, repoDir, dir string) error
	BranchTip(ctx context.Context, repoDir, branch string) (string, error)
	ChangesNothing(ctx context.Context, repoDir, base, branch string) bool
	DeleteBranch(ctx context.Context, repoDir, branch string) error
	CurrentBranch(ctx context.Context, dir string) (string, error)
}

// git is git in the clean-up's role.
func (e *Cleanups) git() CleanupGit { return e.worktrees() }

// CleanupAbandoned tidies a task that was just closed or rejected (spec:
// they clean up worktree and branch), without destroying work: a clean
// worktree is removed, a dirty one is kept; a branch that holds nothing
// unmerged into its base is deleted, one that does is kept unless
// deleteBranch says to delete it anyway. Whatever is kept is named, with
// where the work is, in a comment on the task (the durable record), and
// a deleted branch's tip is recorded before it is deleted. It returns
// what it did, one line each.
func (e *Cleanups) CleanupAbandoned(ctx context.Context, sn *task.Snapshot, deleteBranch bool) ([]string, error) {
	if sn.Session == nil {
		if deleteBranch {
			return []string{"the task never ran; there is no branch to delete"}, nil
		}
		return nil, nil
	}
	// Only what this machine created is removed: the worktree and branch
	// of a session it started, never paths or names read from the record.
	s, err := e.Owned(sn)
	if err != nil {
		return []string{"left every worktree and branch alone: " + err.Error()}, nil
	}
	repo := e.Dir()
	_ = os.RemoveAll(string(proto.ForTask(e.Repo.LazyDir(), sn.Task.ID)))
	var notes, kept []string
	worktreeGone := true
	if _, err := os.Stat(s.Worktree); err == nil {
		dirty, err := e.git().Dirty(ctx, s.Worktree)
		switch {
		case err != nil || dirty:
			worktreeGone = false
			kept = append(kept, fmt.Sprintf("the worktree %s, which has uncommitted changes (inspect them, then git worktree remove --force %s)", s.Worktree, s.Worktree))
		default:
			if err := e.git().Remove(ctx, repo, s.Worktree); err != nil {
				worktreeGone = false
				kept = append(kept, fmt.Sprintf("the worktree %s, which git would not remove (%v)", s.Worktree, err))
			} else {
				notes = append(notes, "removed the clean worktree "+s.Worktree)
			}
		}
	}
	tip, err := e.git().BranchTip(ctx, repo, s.Branch)
	switch {
	case err != nil || tip == "":
		// no branch (already deleted)
	case !worktreeGone:
		kept = append(kept, fmt.Sprintf("the branch %s at %s, checked out in that worktree", s.Branch, tip))
	default:
		base, unmerged := e.unmergedWork(ctx, sn, s.Branch)
		if unmerged && !deleteBranch {
			kept = append(kept, fmt.Sprintf("the branch %s at %s, which holds work not merged into %s (delete it with git branch -D %s)", s.Branch, tip, base, s.Branch))
			break
		}
		note, err := e.deleteBranch(ctx, sn.Task.ID, s.Branch, tip, unmerged)
		if err != nil {
			return append(notes, e.recordKept(ctx, sn.Task.ID, kept)...), err
		}
		notes = append(notes, note)
	}
	return append(notes, e.recordKept(ctx, sn.Task.ID, kept)...), nil
}

// unmergedWork reports whether branch changes anything relative to the
// task's base (its parent's or target branch), and names the base. Any
// doubt reads as unmerged: the branch is then kept.
func (e *Cleanups) unmergedWork(ctx context.Context, sn *task.Snapshot, branch string) (string, bool) {
	base, err := e.BaseBranch(ctx, sn, e.Dir())
	if err != nil || task.ValidBranchName(base) != nil {
		return "its base", true
	}
	return base, !e.git().ChangesNothing(ctx, e.Dir(), "refs/heads/"+base, branch)
}

// deleteBranch records branch's tip in a comment, then deletes it.
func (e *Cleanups) deleteBranch(ctx context.Context, id, branch, tip string, unmerged bool) (string, error) {
	what := "it held nothing that is not in its base"
	if unmerged {
		what = "as --delete-branch decided"
	}
	if _, _, err := e.Store.Update(ctx, id, func(x *task.Snapshot) (*task.Op, error) {
		x.AddComment(task.Comment{Actor: e.Actor, At: time.Now().UTC().Truncate(time.Second),
			Text: fmt.Sprintf("deleted the branch %s at %s, %s (recreate it with: git branch %s %s)", branch, tip, what, branch, tip)})
		return &task.Op{Name: "delete-branch", Actor: e.Actor, Reason: branch + " at " + tip}, nil
	}); err != nil {
		return "", fmt.Errorf("record the branch tip before deleting it (nothing was deleted): %w", err)
	}
	if err := e.git().DeleteBranch(ctx, e.Dir(), branch); err != nil {
		return "", fmt.Errorf("delete the branch %s: %w", branch, err)
	}
	return fmt.Sprintf("deleted the branch %s (it was at %s; recorded in a comment)", branch, tip), nil
}

// recordKept writes what a cleanup kept, and where the work is, as a
// comment on the task: the durable record that keeping it needs. It
// returns the notes to print.
func (e *Cleanups) recordKept(ctx context.Context, id string, kept []string) []string {
	if len(kept) == 0 {
		return nil
	}
	text := "kept, with work in it: " + strings.Join(kept, "; ")
	notes := make([]string, len(kept))
	for i, k := range kept {
		notes[i] = "kept " + k
	}
	if _, _, err := e.Store.Update(ctx, id, func(x *task.Snapshot) (*task.Op, error) {
		x.AddComment(task.Comment{Actor: e.Actor, At: time.Now().UTC().Truncate(time.Second), Text: text})
		return &task.Op{Name: "cleanup-kept", Actor: e.Actor, Reason: session.OneLine(text)}, nil
	}); err != nil {
		notes = append(notes, "this could not be recorded on the task, so note it: "+err.Error())
	}
	return notes
}
