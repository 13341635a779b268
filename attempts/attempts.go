// Package attempts is one task tried N ways side by side (lazy start
// TASK --attempts N), and the comparison of those ways until one lands.
//
// lazy's state machine is one task = one session = one branch, so the N
// ways are N tasks of their own, its attempts: each has its branch
// (lazy/<slug>-a<K>), worktree, session, agent, model, turns and cost,
// and every operation works on it as on any task. The original task
// becomes the attempt group: it never runs, waits in backlog while its
// attempts do (Task.Attempts lists them), and completes when one of
// them is accepted; the others are then closed with the reason.
//
// An attempt is not a subtask of its group (Task.Parent): a subtask
// starts from its parent's branch and lands on it, but the group has no
// branch. An attempt instead carries its group's Parent and TargetBranch,
// so BaseBranch, accept, sync, the merge queue and the merged-branch
// sweep send it exactly where the group itself would have gone (its
// parent's branch, its target branch, or the default branch), with no
// special case; Task.AttemptOf ties it to its group for every surface
// and for the budget tree (a group's budget covers its attempts).
//
// Landing an attempt is landing's: accept asks this
// package which attempt is chosen (Choose), whether another was chosen
// first (SiblingChosen), and settles the group once one landed
// (Settle); this package never merges, so the imports run one way.
package attempts

import (
	"context"

	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// What attempts consumes, besides the core (session.Env: the task store
// behind the task.Store port, the task lock, this machine's sessions,
// confinement):

// Lifecycle is what attempts asks of lifecycle: each attempt is started
// as any backlog task is, and the attempts not chosen are stopped and
// closed with the reason.
type Lifecycle interface {
	Start(ctx context.Context, name string, in session.StartInput) (*task.Snapshot, error)
	Stop(ctx context.Context, name, reason string) (*task.Snapshot, error)
	Close(ctx context.Context, name, reason string) (*task.Snapshot, error)
}

// Review is what attempts asks of review to compare the attempts: the
// range an attempt's work is measured on (review.Service.Measure).
type Review interface {
	Measure(ctx context.Context, sn *task.Snapshot, lacks string) (r *review.Review, wt string, err error)
}

// Worktree is what attempts asks of git: whether the repository has a
// commit to branch from, and an attempt's diff stat. Git{} runs git;
// tests fake it.
type Worktree interface {
	NoCommits(ctx context.Context, repoDir string) bool
	Numstat(ctx context.Context, repoDir, from, to string) (worktree.DiffStat, error)
}

// Service runs the attempts operations over the core env.
type Service struct {
	// Env is the core: the store, who is asking, how turns run.
	Env *session.Env
	// Lifecycle starts, stops and closes the attempts.
	Lifecycle Lifecycle
	// Review measures an attempt's work for the comparison (nil:
	// review.New over Env).
	Review Review
	// Worktrees is git's side (nil: Git{}).
	Worktrees Worktree
	// Gater gates an attempt's tree and Lander lands a proposed attempt
	// for the pick by the gate (nil: PickStep cannot gate, and proposes
	// without landing).
	Gater  Gater
	Lander Lander
}

// New is the attempts capability of env, starting and ending attempts
// through lc and measuring them through rv.
func New(env *session.Env, lc Lifecycle, rv Review) *Service {
	return &Service{Env: env, Lifecycle: lc, Review: rv}
}

func (at *Service) worktrees() Worktree {
	if at.Worktrees == nil {
		return Git{}
	}
	return at.Worktrees
}

func (at *Service) review() Review {
	if at.Review == nil {
		return review.New(at.Env)
	}
	return at.Review
}

// load resolves name and loads the task, without a lock: for reads.
func (at *Service) load(name string) (*task.Snapshot, error) {
	id, err := at.Env.Store.Resolve(name)
	if err != nil {
		return nil, err
	}
	return at.Env.Store.Load(id)
}

// Git is the Worktree of package worktree: git in real checkouts.
type Git struct{}

// NoCommits is worktree.NoCommits.
func (Git) NoCommits(ctx context.Context, repoDir string) bool {
	return worktree.NoCommits(ctx, repoDir)
}

// Numstat is worktree.Numstat.
func (Git) Numstat(ctx context.Context, repoDir, from, to string) (worktree.DiffStat, error) {
	return worktree.Numstat(ctx, repoDir, from, to)
}

var _ Worktree = Git{}
