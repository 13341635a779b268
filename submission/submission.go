// Package submission is a task's way to a forge: lazy submit pushes a
// blocked task's branch and opens (or updates) its pull request; what the
// pull request then says (failing checks, reviews, comments) is recorded
// as the agent's next feedback, and its state is kept in the task's forge
// record for show, list and status; an ended task's open pull request is
// closed. Each operation runs on the session core (package session): the
// task lock, this machine's record of the session, records first and
// acts second.
//
// Accepting a task through its pull request is package landing's:
// landing sits above this package and submits through it
// (a blocked task accepted in a repository that merges through the forge,
// a branch that moved since it was submitted). What submission needs of
// landing, an accept stranded in a merge, it asks through the Landing
// interface, so the imports run one way. Service is lifecycle's Forge.
package submission

import (
	"context"

	"github.com/lazyorch/lazy/forge"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// What submission consumes, besides the core (session.Env: the task
// store behind the task.Store port, the task lock, this machine's
// sessions, the launcher):

// Landing is what submission asks of landing, the capability above it:
// a task stranded in a local merge (an accept that died, while the
// caller holds the task lock) is recovered, or finished when the merge
// landed, before a submit changes it.
type Landing interface {
	EscapeStranded(ctx context.Context, sn *task.Snapshot, verb string) (*task.Snapshot, error)
}

// Worktree is what submission asks of git about the task's branch, its
// worktree and the remote: a remote's URL and branches, a branch's
// commit, a push, a credential, whether a worktree has uncommitted
// changes. Git{} runs git; tests fake it.
type Worktree interface {
	// RemoteURL is git remote get-url remote.
	RemoteURL(ctx context.Context, repoDir, remote string) (string, error)
	// RemoteHasBranch reports whether remote has refs/heads/branch.
	RemoteHasBranch(ctx context.Context, repoDir, remote, branch string) bool
	// BranchCommit is the commit at the tip of branch (worktree.BranchCommit).
	BranchCommit(ctx context.Context, repoDir, branch string) (string, error)
	// Push runs git push with args (the caller builds them), never
	// prompting for a password.
	Push(ctx context.Context, repoDir string, args []string) error
	// CredentialFill runs git credential fill with in as its input,
	// never prompting, and returns what it printed.
	CredentialFill(ctx context.Context, repoDir string, in []byte) (string, error)
	// Dirty reports whether the worktree at dir has uncommitted changes
	// (worktree.Dirty).
	Dirty(ctx context.Context, dir string) (bool, error)
}

// Service runs the submission operations over the core env.
type Service struct {
	// Env is the core: the store, who is asking, how turns run.
	Env *session.Env
	// Landing recovers an accept stranded in a merge. nil: no capability
	// can, and a submit of such a task refuses (lazy doctor recovers it).
	Landing Landing
	// Worktrees is git's side: remotes, branches, the push (nil: Git{}).
	Worktrees Worktree
	// Forges opens the forge a configuration names (nil: forge.Open);
	// tests hand a fake forge.
	Forges func(forge.Config) (forge.Forge, error)
}

// New is the submission capability of env, asking landing what is its.
func New(env *session.Env, landing Landing) *Service {
	return &Service{Env: env, Landing: landing}
}

func (sv *Service) git() Worktree {
	if sv.Worktrees == nil {
		return Git{}
	}
	return sv.Worktrees
}

// escapeStranded returns a task stranded in a local merge to a resting
// status through Landing before verb does its job; any other task comes
// back as it is.
func (sv *Service) escapeStranded(ctx context.Context, sn *task.Snapshot, verb string) (*task.Snapshot, error) {
	if sv.Landing != nil {
		return sv.Landing.EscapeStranded(ctx, sn, verb)
	}
	return lifecycle.RefuseStranded(sn, verb)
}

func (sv *Service) openForge(c forge.Config) (forge.Forge, error) {
	if sv.Forges == nil {
		return forge.Open(c)
	}
	return sv.Forges(c)
}

// Git is the Worktree of a real repository: git processes.
type Git struct{}

// RemoteURL is git remote get-url remote.
func (Git) RemoteURL(ctx context.Context, repoDir, remote string) (string, error) {
	return gitcli.New(repoDir, "remote", "get-url", remote).String(ctx)
}

// RemoteHasBranch is git ls-remote --exit-code --heads remote
// refs/heads/branch.
func (Git) RemoteHasBranch(ctx context.Context, repoDir, remote, branch string) bool {
	return gitcli.New(repoDir, "ls-remote", "--exit-code", "--heads", remote, "refs/heads/"+branch).Run(ctx) == nil
}

// BranchCommit is worktree.BranchCommit.
func (Git) BranchCommit(ctx context.Context, repoDir, branch string) (string, error) {
	return worktree.BranchCommit(ctx, repoDir, branch)
}

// Push runs git push args with no terminal prompt.
func (Git) Push(ctx context.Context, repoDir string, args []string) error {
	return gitcli.New(repoDir, append([]string{"push"}, args...)...).Env("GIT_TERMINAL_PROMPT=0").Run(ctx)
}

// CredentialFill runs git credential fill on in, with every prompt off.
func (Git) CredentialFill(ctx context.Context, repoDir string, in []byte) (string, error) {
	return gitcli.New(repoDir, "credential", "fill").Env("GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true", "SSH_ASKPASS=true").Stdin(in).String(ctx)
}

// Dirty is worktree.Dirty.
func (Git) Dirty(ctx context.Context, dir string) (bool, error) { return worktree.Dirty(ctx, dir) }

var _ Worktree = Git{}
