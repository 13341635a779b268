package wire

import (
	"context"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/worktree"
)

// What the reconciler reads of git and of the store's files that only
// packages worktree and gitstore answer: it declares what it consumes
// (reconcile.Git, its stamp watcher) and finds the adapters here, below
// it, so it imports neither.

// ReconcileGit is the reconciler's Git: package worktree's functions of
// the same names.
type ReconcileGit struct{}

// Branch is worktree.Branch: the branch lazy names after slug.
func (ReconcileGit) Branch(slug string) string { return worktree.Branch(slug) }

// DefaultBranch is worktree.DefaultBranch.
func (ReconcileGit) DefaultBranch(ctx context.Context, repoDir string) (string, error) {
	return worktree.DefaultBranch(ctx, repoDir)
}

// Dirty is worktree.Dirty.
func (ReconcileGit) Dirty(ctx context.Context, dir string) (bool, error) {
	return worktree.Dirty(ctx, dir)
}

// ClearKilledIndexLock is worktree.ClearKilledIndexLock.
func (ReconcileGit) ClearKilledIndexLock(ctx context.Context, dir string) bool {
	return worktree.ClearKilledIndexLock(ctx, dir)
}

// UndoReadOnly is worktree.UndoReadOnly, from the state a read-only
// turn's supervisor recorded.
func (ReconcileGit) UndoReadOnly(ctx context.Context, dir string, before proto.TreeState, keep string) string {
	return worktree.UndoReadOnly(ctx, dir, worktree.State(before), keep)
}

// Commits is worktree.Commits.
func (ReconcileGit) Commits(ctx context.Context, dir, base string) ([]string, error) {
	return worktree.Commits(ctx, dir, base)
}

// ChangedFiles is worktree.ChangedFiles.
func (ReconcileGit) ChangedFiles(ctx context.Context, dir, base string) ([]string, error) {
	return worktree.ChangedFiles(ctx, dir, base)
}

// StaleRefLock is gitstore.StaleLockAge, which pull's lock error names:
// how old a ref lock must be before it is taken as left by a dead git.
const StaleRefLock = gitstore.StaleLockAge

// TransientReadError is gitstore.TransientReadError: a record that could
// not be read now may read on the next pass.
func TransientReadError(err error) bool { return gitstore.TransientReadError(err) }

// NewStampWatcher is gitstore's watcher of the files a reconcile pass
// stamps.
func NewStampWatcher() *gitstore.StampWatcher { return gitstore.NewStampWatcher() }

// TaskRefStampPaths are the files whose stamps move with e's task refs.
func (e *Env) TaskRefStampPaths() []string {
	return e.Store.Repo().RefStampPaths(gitstore.TasksPrefix)
}
