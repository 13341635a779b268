package review

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// Review is what a task's work is measured against: its branch, the
// branch it merges into, and their merge base.
type Review struct {
	Slug      string `json:"slug"`
	Branch    string `json:"branch"`
	Into      string `json:"into"`
	MergeBase string `json:"merge_base"`
	BranchSHA string `json:"branch_sha"`
	// Worktree is the task's worktree on this machine, "" when it has
	// none here.
	Worktree string `json:"worktree,omitempty"`
}

// ReviewRange finds the range `lazy diff` shows: the task branch against
// its merge base with its destination.
func (rv *Service) ReviewRange(ctx context.Context, name string) (*Review, error) {
	sn, err := rv.load(name)
	if err != nil {
		return nil, err
	}
	r, _, err := rv.Measure(ctx, sn, "no work to review")
	return r, err
}

// Measure is the one place `lazy diff`, lazy_diff and accept --dry-run
// find a started task's work, so all three measure the same range the
// same way. lacks completes the refusal of an unstarted task ("it has
// ..."). The branch is the one this machine made (then wt is its
// worktree), or the one its slug derives, never a name read from the
// record, so refs pulled from a remote cannot point git elsewhere. The
// range is given as commits, not names, so callers read one consistent
// state even if a branch moves meanwhile.
func (rv *Service) Measure(ctx context.Context, sn *task.Snapshot, lacks string) (r *Review, wt string, err error) {
	e := rv.Env
	slug := sn.Task.Slug
	if sn.Session == nil {
		return nil, "", fmt.Errorf("%s has not started, so it has %s; lazy start %s first", slug, lacks, slug)
	}
	branch := worktree.Branch(slug)
	if local, err := e.Owned(sn); err == nil {
		branch, wt = local.Branch, local.Worktree
	}
	if err := task.ValidBranchName(branch); err != nil {
		return nil, "", fmt.Errorf("%s: %w", slug, err)
	}
	r = &Review{Slug: slug, Branch: branch, Worktree: wt}
	if r.BranchSHA, err = rv.worktrees().BranchCommit(ctx, e.Dir(), branch); err != nil || r.BranchSHA == "" {
		if sn.Task.Status == machine.Complete {
			return nil, "", fmt.Errorf("%s is complete and its branch %s is gone; its work is in the squash commit (git log --grep='Lazy-Task: %s')", slug, branch, sn.Task.ID)
		}
		return nil, "", fmt.Errorf("%s: its branch %s does not exist on this machine; lazy pull, or run this where the task runs", slug, branch)
	}
	if r.Into, err = e.BaseBranch(ctx, sn, e.Dir()); err != nil {
		return nil, "", fmt.Errorf("%s: %w", slug, err)
	}
	if err := task.ValidBranchName(r.Into); err != nil {
		return nil, "", fmt.Errorf("%s: %w", slug, err)
	}
	if r.MergeBase, err = rv.worktrees().MergeBase(ctx, e.Dir(), r.Into, r.BranchSHA); err != nil {
		return nil, "", fmt.Errorf("%s: the branch %s it merges into does not exist or shares no history with %s", slug, r.Into, branch)
	}
	return r, wt, nil
}

// load resolves name and loads the task, without a lock: for reads.
func (rv *Service) load(name string) (*task.Snapshot, error) {
	id, err := rv.Env.Store.Resolve(name)
	if err != nil {
		return nil, err
	}
	return rv.Env.Store.Load(id)
}
