// Package runner is a machine's runner in the pool: lazy start --pool
// marks a task for it, lazy runner claims the pooled tasks this
// machine's labels and agents fit from the git remote by
// compare-and-swap pushes, runs their turns here, renews its leases,
// pushes each task's record, branch and log fenced by its claim, and
// releases it when the task ends; lazy pool release frees a claim (a
// human's decision, fencing the runner that held it). A start that waits
// for other tasks is kept here, deferred, until they are complete.
//
// The claims, leases and generations on the remote are package pool's
// (below it); the runner decides which to take, when to renew, what to
// push and when a claim is lost. It starts, resumes, stops and takes
// over a task's session through Lifecycle, and reaches the task store's
// side on the remote (its pull) through Sync, so it never imports the
// store's git implementation.
package runner

import (
	"context"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/pool"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// What the runner consumes, besides the core (session.Env: the task
// store behind the task.Store port, the task lock, this machine's
// sessions, the launcher):

// Lifecycle is what the runner asks of lifecycle: a claimed backlog task
// is started, an interrupted one resumed, one another runner held taken
// over, and a turn still running when the runner stops is stopped.
type Lifecycle interface {
	Start(ctx context.Context, name string, in session.StartInput) (*task.Snapshot, error)
	Resume(ctx context.Context, name string) (*task.Snapshot, error)
	Stop(ctx context.Context, name, reason string) (*task.Snapshot, error)
	TakeOver(ctx context.Context, name string, in session.StartInput) (*task.Snapshot, error)
}

// Sync is what the runner asks of the task store on the remote: its pull
// (the records other clones wrote), the ref a task's record is pushed
// to, and the record of a task as the remote had it at the last pull.
type Sync interface {
	Pull(ctx context.Context, remote string) error
	TaskRef(id string) string
	Fetched(ctx context.Context, remote, id string) string
}

// Pool is what the runner asks of the claims on the remote: package
// pool's Remote, or a fake in tests.
type Pool interface {
	Fetch(ctx context.Context) error
	Claims(ctx context.Context, now time.Time) (map[string]pool.Held, []pool.Problem, error)
	Current(ctx context.Context, reader string, now time.Time) (map[string]pool.Held, error)
	Take(ctx context.Context, task, runner string, prev *pool.Held, lease time.Duration, now time.Time) (pool.Held, error)
	Renew(ctx context.Context, held []pool.Held, rn pool.Runner, lease time.Duration, now time.Time) ([]pool.Held, error)
	Fenced(ctx context.Context, h pool.Held, lease time.Duration, now time.Time, results []pool.Update) (pool.Held, error)
	Release(ctx context.Context, h pool.Held, now time.Time) error
	Free(ctx context.Context, h pool.Held, by string, now time.Time) (pool.Held, error)
	WriteLog(ctx context.Context, task string, log []byte) (string, error)
}

// Worktree is what the runner asks of git about task branches: the tip
// it pushes, and a branch another runner pushed, fetched before a
// take-over. Package worktree's functions of the same names (Git), or a
// fake in tests.
type Worktree interface {
	BranchTip(ctx context.Context, repoDir, branch string) (string, error)
	FetchBranch(ctx context.Context, repoDir, remote, branch string) error
}

// Service runs the runner and the pool's decisions over the core env.
type Service struct {
	// Env is the core: the store, who is asking, how turns run.
	Env *session.Env
	// Lifecycle starts, resumes, stops and takes over the sessions of
	// the tasks the runner claims.
	Lifecycle Lifecycle
	// Sync pulls the task records from the remote.
	Sync Sync
	// Worktrees is git's side of task branches (nil: Git).
	Worktrees Worktree
	// OpenPool opens the pool on a remote, counting claims whose lease
	// runs out later than maxLease from now as expired (nil: package
	// pool's Remote in the repository).
	OpenPool func(remote string, maxLease time.Duration) (Pool, error)
	// Objects writes the pool's commits in process (the repository's
	// object writer); nil: through git processes.
	Objects gitrepo.ObjectWriter
}

// New is the runner of env, asking lifecycle for sessions and sync for
// the remote's records.
func New(env *session.Env, lifecycle Lifecycle, sync Sync) *Service {
	return &Service{Env: env, Lifecycle: lifecycle, Sync: sync}
}

func (s *Service) worktrees() Worktree {
	if s.Worktrees == nil {
		return Git{}
	}
	return s.Worktrees
}

func (s *Service) openPool(remote string, maxLease time.Duration) (Pool, error) {
	if s.OpenPool != nil {
		return s.OpenPool(remote, maxLease)
	}
	p, err := pool.New(s.Env.Dir(), remote)
	if err != nil {
		return nil, err
	}
	p.MaxLease, p.Objects = maxLease, s.Objects
	return p, nil
}

// Git is the Worktree of package worktree: git in real checkouts.
type Git struct{}

// BranchTip is worktree.BranchTip.
func (Git) BranchTip(ctx context.Context, repoDir, branch string) (string, error) {
	return worktree.BranchTip(ctx, repoDir, branch)
}

// FetchBranch is worktree.FetchBranch.
func (Git) FetchBranch(ctx context.Context, repoDir, remote, branch string) error {
	return worktree.FetchBranch(ctx, repoDir, remote, branch)
}

var (
	_ Worktree = Git{}
	_ Pool     = (*pool.Remote)(nil)
)
