// Package conversation is talking with a task's agent, and the human
// working beside it, without moving the task on: ask (one question,
// answered read-only) and sync (upstream merged into the task branch),
// each a turn that parks the task back as it was; chat, a read-only
// conversation held open with the agent; pair, a human taking over the
// worktree through the agent's CLI, whose commits are then recorded and
// held to the task's allowed paths; and the journal, the agent's record
// of why a turn did what it did.
//
// It runs on the session core (package session): the task lock, this
// machine's session binding (what decides where the agent runs), and
// launching a turn on a session.
package conversation

import (
	"context"

	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/worktree"
)

// What conversation consumes, besides the core (session.Env: the task
// store behind the task.Store port, the task lock, this machine's
// sessions, the launcher):

// Worktree is what a pairing asks of git about the task's worktree:
// package worktree's functions of the same names (Git), or a fake in
// tests.
type Worktree interface {
	Head(ctx context.Context, dir string) (string, error)
	Commits(ctx context.Context, dir, base string) ([]string, error)
	ChangedFiles(ctx context.Context, dir, base string) ([]string, error)
}

// Service talks with tasks' agents over the core env.
type Service struct {
	// Env is the core: the store, who is asking, how turns run.
	Env *session.Env
	// Worktrees is git's side of a pairing's worktree (nil: Git).
	Worktrees Worktree
}

// New is the conversation capability over env.
func New(env *session.Env) *Service { return &Service{Env: env} }

func (cv *Service) worktrees() Worktree {
	if cv.Worktrees == nil {
		return Git{}
	}
	return cv.Worktrees
}

// Git is the Worktree of package worktree: git in real checkouts.
type Git struct{}

// Head is worktree.Head.
func (Git) Head(ctx context.Context, dir string) (string, error) { return worktree.Head(ctx, dir) }

// Commits is worktree.Commits.
func (Git) Commits(ctx context.Context, dir, base string) ([]string, error) {
	return worktree.Commits(ctx, dir, base)
}

// ChangedFiles is worktree.ChangedFiles.
func (Git) ChangedFiles(ctx context.Context, dir, base string) ([]string, error) {
	return worktree.ChangedFiles(ctx, dir, base)
}

var _ Worktree = Git{}
