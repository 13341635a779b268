// Package review is what a person or an agent reads of a task's work
// before it lands, changing nothing: the range `lazy diff`, lazy_diff
// and accept --dry-run measure (the task branch against its merge base
// with its destination, Measure), the diff over it, the tail of the
// agent's log, and the files an active task's changes share with the
// other active tasks and with what landed on its target since it forked
// (Overlaps). Accept's own preview (what a local accept would merge, and
// its message) is landing's, over the same Measure.
//
// It runs on the session core (package session); the branch it measures
// is the one this machine's session record names, never a name read from
// the task's record.
package review

import (
	"context"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/worktree"
)

// What review consumes, besides the core (session.Env: the task store
// behind the task.Store port, this machine's sessions, lazy's directory):

// Worktree is what review asks of git about task branches: package
// worktree's functions of the same names (Git), or a fake in tests.
type Worktree interface {
	BranchCommit(ctx context.Context, repoDir, branch string) (string, error)
	MergeBase(ctx context.Context, repoDir, into, sha string) (string, error)
	DefaultBranch(ctx context.Context, repoDir string) (string, error)
	Stat(ctx context.Context, repoDir, from, to string, wide bool) (string, error)
	DiffNames(ctx context.Context, repoDir, from, to string) ([]string, error)
	Patch(ctx context.Context, repoDir, from, to string) ([]byte, error)
	Uncommitted(ctx context.Context, dir string) ([]string, error)
	RangeFiles(ctx context.Context, repoDir, base, tip string) (names []string, truncated bool, err error)
}

// Refs reads a branch's commit without a git process: the repository's
// refs (the core's gitrepo.Location), or a fake in tests.
type Refs interface {
	ReadRef(name string) (gitrepo.OID, bool, error)
}

// Service reads a task's work over the core env.
type Service struct {
	// Env is the core: the store, this machine's sessions, lazy's
	// directory.
	Env *session.Env
	// Worktrees is git's side of task branches (nil: Git).
	Worktrees Worktree
	// Refs reads branch tips for the overlap check (nil: the refs of
	// Env.Repo).
	Refs Refs
}

// New is the review capability over env.
func New(env *session.Env) *Service { return &Service{Env: env} }

func (rv *Service) worktrees() Worktree {
	if rv.Worktrees == nil {
		return Git{}
	}
	return rv.Worktrees
}

func (rv *Service) refs() Refs {
	if rv.Refs == nil {
		return rv.Env.Repo
	}
	return rv.Refs
}

// Git is the Worktree of package worktree: git in real checkouts.
type Git struct{}

// BranchCommit is worktree.BranchCommit.
func (Git) BranchCommit(ctx context.Context, repoDir, branch string) (string, error) {
	return worktree.BranchCommit(ctx, repoDir, branch)
}

// MergeBase is worktree.MergeBase.
func (Git) MergeBase(ctx context.Context, repoDir, into, sha string) (string, error) {
	return worktree.MergeBase(ctx, repoDir, into, sha)
}

// DefaultBranch is worktree.DefaultBranch.
func (Git) DefaultBranch(ctx context.Context, repoDir string) (string, error) {
	return worktree.DefaultBranch(ctx, repoDir)
}

// Stat is worktree.Stat.
func (Git) Stat(ctx context.Context, repoDir, from, to string, wide bool) (string, error) {
	return worktree.Stat(ctx, repoDir, from, to, wide)
}

// DiffNames is worktree.DiffNames.
func (Git) DiffNames(ctx context.Context, repoDir, from, to string) ([]string, error) {
	return worktree.DiffNames(ctx, repoDir, from, to)
}

// Patch is worktree.Patch.
func (Git) Patch(ctx context.Context, repoDir, from, to string) ([]byte, error) {
	return worktree.Patch(ctx, repoDir, from, to)
}

// Uncommitted is worktree.Uncommitted.
func (Git) Uncommitted(ctx context.Context, dir string) ([]string, error) {
	return worktree.Uncommitted(ctx, dir)
}

// RangeFiles is worktree.RangeFiles.
func (Git) RangeFiles(ctx context.Context, repoDir, base, tip string) ([]string, bool, error) {
	return worktree.RangeFiles(ctx, repoDir, base, tip)
}

var _ Worktree = Git{}
