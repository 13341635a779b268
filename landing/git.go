package landing

import (
	"context"
	"time"

	"github.com/lazyorch/lazy/worktree"
)

// What landing asks of git: each part of landing declares the role it
// plays, beside the code that plays it, with only the methods that code
// calls (PreflightGit and MergeGit in accept.go, GateGit in gate.go,
// RecoveryGit in accept_recover.go, RemoteGit in accept_remote.go,
// CleanupGit in cleanup.go, StashGit in keptstash.go, PreviewGit in
// preview.go), and reaches git only through it; so a change to one part
// cannot quietly widen what another depends on. The merge queue's train
// asks nothing of git itself: it runs the gate and the accept.

// Worktree is all of git's side of landing: every role, because a
// Service is every part of landing and hands each its own. Package
// worktree's functions of the same names play it (Git{}), or a fake in
// tests (see seam_test.go), which embeds the roles it does not play, so
// any other git call fails loudly.
type Worktree interface {
	PreflightGit
	MergeGit
	GateGit
	RecoveryGit
	RemoteGit
	CleanupGit
	StashGit
	PreviewGit
}

// Git is the Worktree of package worktree: git in real checkouts.
type Git struct{}

// BranchCommit is worktree.BranchCommit.
func (Git) BranchCommit(ctx context.Context, repoDir, branch string) (string, error) {
	return worktree.BranchCommit(ctx, repoDir, branch)
}

// BranchTip is worktree.BranchTip.
func (Git) BranchTip(ctx context.Context, repoDir, branch string) (string, error) {
	return worktree.BranchTip(ctx, repoDir, branch)
}

// ChangesNothing is worktree.ChangesNothing.
func (Git) ChangesNothing(ctx context.Context, repoDir, base, branch string) bool {
	return worktree.ChangesNothing(ctx, repoDir, base, branch)
}

// CheckedOutAt is worktree.CheckedOutAt.
func (Git) CheckedOutAt(ctx context.Context, repoDir, branch string) (string, error) {
	return worktree.CheckedOutAt(ctx, repoDir, branch)
}

// CurrentBranch is worktree.CurrentBranch.
func (Git) CurrentBranch(ctx context.Context, dir string) (string, error) {
	return worktree.CurrentBranch(ctx, dir)
}

// IsAncestor is worktree.IsAncestor.
func (Git) IsAncestor(ctx context.Context, repoDir, ancestor, of string) bool {
	return worktree.IsAncestor(ctx, repoDir, ancestor, of)
}

// HasCommitWith is worktree.HasCommitWith.
func (Git) HasCommitWith(ctx context.Context, repoDir, text, since, branch string) (bool, error) {
	return worktree.HasCommitWith(ctx, repoDir, text, since, branch)
}

// DeleteBranch is worktree.DeleteBranch.
func (Git) DeleteBranch(ctx context.Context, repoDir, branch string) error {
	return worktree.DeleteBranch(ctx, repoDir, branch)
}

// CommitLog is worktree.CommitLog.
func (Git) CommitLog(ctx context.Context, repoDir, from, to string) ([]string, error) {
	return worktree.CommitLog(ctx, repoDir, from, to)
}

// NameStatus is worktree.NameStatus.
func (Git) NameStatus(ctx context.Context, repoDir, from, to string) ([]string, error) {
	return worktree.NameStatus(ctx, repoDir, from, to)
}

// Stat is worktree.Stat.
func (Git) Stat(ctx context.Context, repoDir, from, to string, wide bool) (string, error) {
	return worktree.Stat(ctx, repoDir, from, to, wide)
}

// ChangedPaths is worktree.ChangedPaths.
func (Git) ChangedPaths(ctx context.Context, repoDir, from, to string) ([]string, error) {
	return worktree.ChangedPaths(ctx, repoDir, from, to)
}

// RangeFiles is worktree.RangeFiles.
func (Git) RangeFiles(ctx context.Context, repoDir, base, tip string) (names []string, truncated bool, err error) {
	return worktree.RangeFiles(ctx, repoDir, base, tip)
}

// ExistingFiles is worktree.ExistingFiles.
func (Git) ExistingFiles(ctx context.Context, repoDir, commit string, paths []string) ([]string, error) {
	return worktree.ExistingFiles(ctx, repoDir, commit, paths)
}

// FileAt is worktree.FileAt.
func (Git) FileAt(ctx context.Context, repoDir, commit, path string) ([]byte, bool, error) {
	return worktree.FileAt(ctx, repoDir, commit, path)
}

// CommitInfo is worktree.CommitInfo.
func (Git) CommitInfo(ctx context.Context, dir, sha string) (time.Time, string, error) {
	return worktree.CommitInfo(ctx, dir, sha)
}

// CreateRef is worktree.CreateRef.
func (Git) CreateRef(ctx context.Context, dir, ref, sha, why string) error {
	return worktree.CreateRef(ctx, dir, ref, sha, why)
}

// SwapRef is worktree.SwapRef.
func (Git) SwapRef(ctx context.Context, dir, ref, sha, old, why string) error {
	return worktree.SwapRef(ctx, dir, ref, sha, old, why)
}

// DeleteRef is worktree.DeleteRef.
func (Git) DeleteRef(ctx context.Context, dir, ref, sha string) error {
	return worktree.DeleteRef(ctx, dir, ref, sha)
}

// RefExists is worktree.RefExists.
func (Git) RefExists(ctx context.Context, dir, ref string) bool {
	return worktree.RefExists(ctx, dir, ref)
}

// RefsUnder is worktree.RefsUnder.
func (Git) RefsUnder(ctx context.Context, dir, prefix string) ([]worktree.Ref, error) {
	return worktree.RefsUnder(ctx, dir, prefix)
}

// Add is worktree.Add.
func (Git) Add(ctx context.Context, repoDir, dir, branch string) error {
	return worktree.Add(ctx, repoDir, dir, branch)
}

// Remove is worktree.Remove.
func (Git) Remove(ctx context.Context, repoDir, dir string) error {
	return worktree.Remove(ctx, repoDir, dir)
}

// ForceRemove is worktree.ForceRemove.
func (Git) ForceRemove(ctx context.Context, repoDir, dir string) error {
	return worktree.ForceRemove(ctx, repoDir, dir)
}

// Dirty is worktree.Dirty.
func (Git) Dirty(ctx context.Context, dir string) (bool, error) {
	return worktree.Dirty(ctx, dir)
}

// SquashMerge is worktree.SquashMerge.
func (Git) SquashMerge(ctx context.Context, dir, branch string) (conflicts []string, err error) {
	return worktree.SquashMerge(ctx, dir, branch)
}

// CommitStaged is worktree.CommitStaged.
func (Git) CommitStaged(ctx context.Context, dir, msg string) (string, error) {
	return worktree.CommitStaged(ctx, dir, msg)
}

// FastForward is worktree.FastForward.
func (Git) FastForward(ctx context.Context, dir, commit string) error {
	return worktree.FastForward(ctx, dir, commit)
}

// ResetToHead is worktree.ResetToHead.
func (Git) ResetToHead(ctx context.Context, dir string) error {
	return worktree.ResetToHead(ctx, dir)
}

// HalfSquash is worktree.HalfSquash.
func (Git) HalfSquash(ctx context.Context, repoDir, dir, base, branch string) bool {
	return worktree.HalfSquash(ctx, repoDir, dir, base, branch)
}

// UndoSquash is worktree.UndoSquash.
func (Git) UndoSquash(ctx context.Context, dir, sha string) error {
	return worktree.UndoSquash(ctx, dir, sha)
}

// AddDetached is worktree.AddDetached.
func (Git) AddDetached(ctx context.Context, repoDir, dir, commit string) error {
	return worktree.AddDetached(ctx, repoDir, dir, commit)
}

// RemoveScratch is worktree.RemoveScratch.
func (Git) RemoveScratch(ctx context.Context, repoDir, dir string) error {
	return worktree.RemoveScratch(ctx, repoDir, dir)
}

// MergeTree is worktree.MergeTree.
func (Git) MergeTree(ctx context.Context, repoDir, ours, branch string) (tree string, conflicts []string, err error) {
	return worktree.MergeTree(ctx, repoDir, ours, branch)
}

// CommitTree is worktree.CommitTree.
func (Git) CommitTree(ctx context.Context, repoDir, tree, parent, message string) (string, error) {
	return worktree.CommitTree(ctx, repoDir, tree, parent, message)
}

// StashPush is worktree.StashPush.
func (Git) StashPush(ctx context.Context, dir, msg string) (string, error) {
	return worktree.StashPush(ctx, dir, msg)
}

// StashApply is worktree.StashApply.
func (Git) StashApply(ctx context.Context, dir, sha string) error {
	return worktree.StashApply(ctx, dir, sha)
}

// StashApplies is worktree.StashApplies.
func (Git) StashApplies(ctx context.Context, dir, sha string) error {
	return worktree.StashApplies(ctx, dir, sha)
}

// StashDrop is worktree.StashDrop.
func (Git) StashDrop(ctx context.Context, dir, sha string) error {
	return worktree.StashDrop(ctx, dir, sha)
}

// Stashes is worktree.Stashes.
func (Git) Stashes(ctx context.Context, dir string) ([]worktree.Stash, error) {
	return worktree.Stashes(ctx, dir)
}

// StashInWorktree is worktree.StashInWorktree.
func (Git) StashInWorktree(ctx context.Context, dir, sha string) bool {
	return worktree.StashInWorktree(ctx, dir, sha)
}

// FoldStashes is worktree.FoldStashes.
func (Git) FoldStashes(ctx context.Context, dir, branch, older, newer string, count int, conflicts []string) (worktree.Folded, error) {
	return worktree.FoldStashes(ctx, dir, branch, older, newer, count, conflicts)
}

// StashStore is worktree.StashStore.
func (Git) StashStore(ctx context.Context, dir, sha, msg string) error {
	return worktree.StashStore(ctx, dir, sha, msg)
}

// StashParts is worktree.StashParts.
func (Git) StashParts(ctx context.Context, dir, sha string) ([]string, []string, error) {
	return worktree.StashParts(ctx, dir, sha)
}

// Git plays every role.
var (
	_ Worktree     = Git{}
	_ PreflightGit = Git{}
	_ MergeGit     = Git{}
	_ GateGit      = Git{}
	_ RecoveryGit  = Git{}
	_ RemoteGit    = Git{}
	_ CleanupGit   = Git{}
	_ Stashing     = Git{}
	_ StashRefs    = Git{}
	_ StashGit     = Git{}
	_ PreviewGit   = Git{}
)
