// Package handoff is a task handed from one worker to the next: another
// agent takes a parked task over on the same branch and worktree (lazy
// handoff, or lazy start --agent on a parked task another agent
// worked), or a human does with lazy pair. What the next worker reads is the handoff record (Record):
// the goal, where the work stands, what the previous agent said last,
// the human's decisions, what was tried and failed, the feedback still
// pending, the last gate result and the next step.
//
// The record goes into a prompt whole, so it is a security boundary:
// lazy's own sections are "## " headings, and every word someone else
// wrote (the title and goal, the agents' words, the messages, the gate's
// command and output, file names and commit subjects) enters only
// through internal/quote, fenced or escaped on its line, so that nothing
// in it can pass for a section of lazy's, a human's decision among them;
// the gate's output has its secrets taken out.
//
// It runs on the session core (package session): the task lock, this
// machine's record of the session (the new session keeps the old one's
// worktree, branch and sandbox, and is held to its confinement), and the
// launch of the handoff turn, recorded first and launched second.
package handoff

import (
	"context"

	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/worktree"
)

// What handoff consumes, besides the core (session.Env: the task store
// behind the task.Store port, the task lock, this machine's sessions,
// confinement, the launcher a turn starts through):

// Worktree is what handoff asks of git about the task's branch: its
// commits since the task began, the files they touched, what is
// uncommitted. Git{} runs git; tests fake it.
type Worktree interface {
	CommitLog(ctx context.Context, dir, from, to string) ([]string, error)
	DiffNames(ctx context.Context, dir, from, to string) ([]string, error)
	Uncommitted(ctx context.Context, dir string) ([]string, error)
}

// Service hands tasks over, over the core env.
type Service struct {
	// Env is the core: the store, who is asking, how turns run.
	Env *session.Env
	// Worktrees is git's side of the record's state (nil: Git{}).
	Worktrees Worktree
}

// New is the handoff capability of env.
func New(env *session.Env) *Service { return &Service{Env: env} }

func (h *Service) worktrees() Worktree {
	if h.Worktrees == nil {
		return Git{}
	}
	return h.Worktrees
}

// Git is the Worktree of package worktree: git in real checkouts.
type Git struct{}

// CommitLog is worktree.CommitLog.
func (Git) CommitLog(ctx context.Context, dir, from, to string) ([]string, error) {
	return worktree.CommitLog(ctx, dir, from, to)
}

// DiffNames is worktree.DiffNames.
func (Git) DiffNames(ctx context.Context, dir, from, to string) ([]string, error) {
	return worktree.DiffNames(ctx, dir, from, to)
}

// Uncommitted is worktree.Uncommitted.
func (Git) Uncommitted(ctx context.Context, dir string) ([]string, error) {
	return worktree.Uncommitted(ctx, dir)
}

var _ Worktree = Git{}
