package ops

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lazyorch/lazy/gitcli"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/worktree"
)

// CleanupAbandoned tidies a task that was just closed or rejected: a
// clean worktree is removed (the branch keeps every commit), a dirty one
// is kept and reported. The branch itself, which may hold work no one
// merged, is deleted only when deleteBranch says so, and only after its
// tip is recorded in a comment so it can be recreated. It returns what it
// did, one line each.
func (e *Env) CleanupAbandoned(ctx context.Context, sn *gitstore.Snapshot, deleteBranch bool) ([]string, error) {
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
	var notes []string
	repo := e.repoDir()
	_ = os.RemoveAll(string(proto.ForTask(e.Store.Repo().LazyDir(), sn.Task.ID)))
	worktreeGone := true
	if _, err := os.Stat(s.Worktree); err == nil {
		dirty, err := worktree.Dirty(ctx, s.Worktree)
		switch {
		case err != nil || dirty:
			worktreeGone = false
			notes = append(notes, fmt.Sprintf("kept the worktree %s: it has uncommitted changes (inspect them, then git worktree remove --force %s)", s.Worktree, s.Worktree))
		default:
			if err := gitcli.New(repo, "worktree", "remove", s.Worktree).Run(ctx); err != nil {
				worktreeGone = false
				notes = append(notes, fmt.Sprintf("kept the worktree %s: %v", s.Worktree, err))
			} else {
				notes = append(notes, "removed the clean worktree "+s.Worktree)
			}
		}
	}
	tip, err := gitcli.New(repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+s.Branch).String(ctx)
	if err != nil || tip == "" {
		return notes, nil // no branch (already deleted)
	}
	if !deleteBranch {
		return append(notes, fmt.Sprintf("kept the branch %s (at %s); pass --delete-branch to delete it", s.Branch, tip)), nil
	}
	if !worktreeGone {
		return append(notes, fmt.Sprintf("kept the branch %s: its worktree is still checked out", s.Branch)), nil
	}
	// The durable record comes first: the tip, and how to get it back.
	if _, _, err := e.Store.Update(ctx, sn.Task.ID, func(x *gitstore.Snapshot) (*gitstore.Op, error) {
		x.AddComment(gitstore.Comment{Actor: e.Actor, At: time.Now().UTC().Truncate(time.Second),
			Text: fmt.Sprintf("deleted the branch %s at %s (recreate it with: git branch %s %s)", s.Branch, tip, s.Branch, tip)})
		return &gitstore.Op{Name: "delete-branch", Actor: e.Actor, Reason: s.Branch + " at " + tip}, nil
	}); err != nil {
		return notes, fmt.Errorf("record the branch tip before deleting it (nothing was deleted): %w", err)
	}
	if err := gitcli.New(repo, "branch", "-D", "--quiet", s.Branch).Run(ctx); err != nil {
		return notes, fmt.Errorf("delete the branch %s: %w", s.Branch, err)
	}
	return append(notes, fmt.Sprintf("deleted the branch %s (it was at %s; recorded in a comment)", s.Branch, tip)), nil
}
