// Package lifecycle is what happens to a task from its creation to its
// end, short of landing it: create, comment, edit, reparent, allow,
// close, reject and reopen; start, unblock, resume, stop, the daemon's
// auto-resume and resume after a usage limit; the end of a working
// turn the reconciler finds (its response recorded, a dead supervisor's
// turn interrupted) and the system's other steps; take-over and moving a
// worktree; and the decisions on file-permission violations an unblock
// carries. Each operation takes the task's lock, loads, validates against
// the state machine, records first and acts second, with the actor of the
// channel that asked (see package session, the core it runs on).
//
// Accepting a task is package landing's: lifecycle
// sits below it, and asks it only through the Landing interface, so the
// imports run one way (landing hands a failed gate back with Unblock).
package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"github.com/lazyorch/lazy/forge"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// What lifecycle consumes, besides the core (session.Env: the task
// store behind the task.Store port, the task lock, this machine's
// sessions, the launcher):

// Landing is what lifecycle asks of landing, the capability above it: a
// task stranded in a local merge (an accept that died, while the caller
// holds the task lock) is recovered, or finished when the merge landed,
// before a command changes it (spec: reject, close, submit and unblock
// escape a stranded merge).
type Landing interface {
	EscapeStranded(ctx context.Context, sn *task.Snapshot, verb string) (*task.Snapshot, error)
}

// Forge is what lifecycle asks of the forge path: the open pull request
// of a task that ends is closed, with why as its comment.
type Forge interface {
	ClosePR(ctx context.Context, sn *task.Snapshot, why string) error
}

// Worktree is what lifecycle asks of git about task branches and
// worktrees: package worktree's functions of the same names (Git), or a
// fake in tests.
type Worktree interface {
	NoCommits(ctx context.Context, repoDir string) bool
	Create(ctx context.Context, repoDir, dir, branch, base string) (startSHA string, err error)
	CreateBranch(ctx context.Context, repoDir, branch, from string) error
	Move(ctx context.Context, repoDir, from, to string) error
	BranchCommit(ctx context.Context, repoDir, branch string) (string, error)
	BranchTip(ctx context.Context, repoDir, branch string) (string, error)
	CheckedOutAt(ctx context.Context, repoDir, branch string) (string, error)
	RefsUnder(ctx context.Context, dir, prefix string) ([]worktree.Ref, error)
	Head(ctx context.Context, dir string) (string, error)
	Dirty(ctx context.Context, dir string) (bool, error)
	RevertFile(ctx context.Context, dir, path, base string) (bool, error)
	CommitAsLazy(ctx context.Context, dir, msg string, paths []string) error
	ClearKilledIndexLock(ctx context.Context, dir string) bool
}

// Service runs the lifecycle operations over the core env.
type Service struct {
	// Env is the core: the store, who is asking, how turns run.
	Env *session.Env
	// Landing recovers an accept stranded in a merge. nil: no capability
	// can, and a command on such a task refuses (lazy doctor recovers it).
	Landing Landing
	// Forge closes an ended task's pull request. nil: an open one is not
	// closed, and the command says so.
	Forge Forge
	// Worktrees is git's side of branches and worktrees (nil: Git).
	Worktrees Worktree
	// Spending prices and sums the usage of the turns the reconciler
	// records (nil: kept as reported, unpriced).
	Spending Spending
}

// New is the lifecycle of env, asking landing and forge what is theirs.
func New(env *session.Env, landing Landing, forge Forge) *Service {
	return &Service{Env: env, Landing: landing, Forge: forge}
}

func (l *Service) worktrees() Worktree {
	if l.Worktrees == nil {
		return Git{}
	}
	return l.Worktrees
}

// escapeStranded returns a task stranded in a local merge to a resting
// status through Landing before verb does its job; any other task comes
// back as it is.
func (l *Service) escapeStranded(ctx context.Context, sn *task.Snapshot, verb string) (*task.Snapshot, error) {
	if l.Landing != nil {
		return l.Landing.EscapeStranded(ctx, sn, verb)
	}
	return RefuseStranded(sn, verb)
}

// RefuseStranded is what a command does with a task stranded in a local
// merge when no landing capability can recover it: it refuses, naming
// lazy doctor; any other task comes back as it is.
func RefuseStranded(sn *task.Snapshot, verb string) (*task.Snapshot, error) {
	if sn.Task.Status == machine.Merging && sn.Task.Accept != nil && !sn.Task.ForgePending() {
		return nil, fmt.Errorf("%s %s: an interrupted accept holds it in a merge; recover it first with lazy doctor", verb, sn.Task.Slug)
	}
	return sn, nil
}

// closePR closes sn's open pull request through Forge.
func (l *Service) closePR(ctx context.Context, sn *task.Snapshot, why string) error {
	if l.Forge != nil {
		return l.Forge.ClosePR(ctx, sn, why)
	}
	if f := sn.Task.Forge; f != nil && f.Number > 0 && f.State != forge.StateMerged && f.State != forge.StateClosed {
		return errors.New(sn.Task.Slug + " is abandoned, but its pull request is still open; close it on the forge")
	}
	return nil
}

// Git is the Worktree of package worktree: git in real checkouts.
type Git struct{}

// NoCommits is worktree.NoCommits.
func (Git) NoCommits(ctx context.Context, repoDir string) bool {
	return worktree.NoCommits(ctx, repoDir)
}

// Create is worktree.Create.
func (Git) Create(ctx context.Context, repoDir, dir, branch, base string) (string, error) {
	return worktree.Create(ctx, repoDir, dir, branch, base)
}

// CreateBranch is worktree.CreateBranch.
func (Git) CreateBranch(ctx context.Context, repoDir, branch, from string) error {
	return worktree.CreateBranch(ctx, repoDir, branch, from)
}

// Move is worktree.Move.
func (Git) Move(ctx context.Context, repoDir, from, to string) error {
	return worktree.Move(ctx, repoDir, from, to)
}

// BranchCommit is worktree.BranchCommit.
func (Git) BranchCommit(ctx context.Context, repoDir, branch string) (string, error) {
	return worktree.BranchCommit(ctx, repoDir, branch)
}

// BranchTip is worktree.BranchTip.
func (Git) BranchTip(ctx context.Context, repoDir, branch string) (string, error) {
	return worktree.BranchTip(ctx, repoDir, branch)
}

// CheckedOutAt is worktree.CheckedOutAt.
func (Git) CheckedOutAt(ctx context.Context, repoDir, branch string) (string, error) {
	return worktree.CheckedOutAt(ctx, repoDir, branch)
}

// RefsUnder is worktree.RefsUnder.
func (Git) RefsUnder(ctx context.Context, dir, prefix string) ([]worktree.Ref, error) {
	return worktree.RefsUnder(ctx, dir, prefix)
}

// Head is worktree.Head.
func (Git) Head(ctx context.Context, dir string) (string, error) { return worktree.Head(ctx, dir) }

// Dirty is worktree.Dirty.
func (Git) Dirty(ctx context.Context, dir string) (bool, error) { return worktree.Dirty(ctx, dir) }

// RevertFile is worktree.RevertFile.
func (Git) RevertFile(ctx context.Context, dir, path, base string) (bool, error) {
	return worktree.RevertFile(ctx, dir, path, base)
}

// CommitAsLazy is worktree.CommitAsLazy.
func (Git) CommitAsLazy(ctx context.Context, dir, msg string, paths []string) error {
	return worktree.CommitAsLazy(ctx, dir, msg, paths)
}

// ClearKilledIndexLock is worktree.ClearKilledIndexLock.
func (Git) ClearKilledIndexLock(ctx context.Context, dir string) bool {
	return worktree.ClearKilledIndexLock(ctx, dir)
}

var _ Worktree = Git{}
