// Package landing is what happens when a task is accepted: the squash
// merge into its target (lazy accept) and its preview (--dry-run), the
// merge gate run on the exact tree that lands, with its protected paths
// and this machine's own record of its runs; the accept through the
// forge (a submitted task's pull request, and its state as the forge
// settles it); the recovery of an accept that died (a stranded merge);
// the clean-up of an accepted or abandoned task's worktree and branch;
// the user's uncommitted changes kept in a stash when they could not be
// given back; and the test-only crash hook that kills an accept between
// phases.
//
// Each operation takes the task's lock, loads, validates against the
// state machine, records first and acts second, with the actor of the
// channel that asked (see package session, the core it runs on). The
// work is split by what it is about, each a view of one Service: Gates
// (the merge gate), Recovery (stranded accepts), Remote (the forge's
// side), Cleanups and Stashes.
//
// landing sits above lifecycle, submission, review, spending, attempts
// and the merge queue (package queue), and calls them; they ask it what
// is its (a stranded accept's recovery: lifecycle's and submission's
// Landing; the accept step and the gate a train runs: queue's Lander)
// through interfaces of their own, so the imports run one way.
package landing

import (
	"context"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/spending"
	"github.com/lazyorch/lazy/submission"
	"github.com/lazyorch/lazy/task"
)

// What landing consumes, besides the core (session.Env: the task store
// behind the task.Store port, the task lock, this machine's sessions, the
// launcher) and the capabilities below it (lifecycle, submission, review,
// spending, attempts, the merge queue): git, through the role each part
// declares (composed in Worktree, git.go), which the tests fake.

// Service runs the landing operations over the core env. The core is
// embedded: an accept reads the store, the actor and the repository as
// every operation of the core does.
type Service struct {
	*session.Env
	// CrashAt is the test-only crash hook (LAZY_TEST_CRASH_AT); nil,
	// which does nothing, everywhere but in tests.
	CrashAt *CrashPoint
	// GateReaper is the argv prefix each merge-gate command runs under
	// (lazy gate-reap --): its child subreaper, which ends everything the
	// command leaves running. nil: the gate ends what its commands leave
	// by their process group and the run's mark only.
	GateReaper []string
	// Worktrees is git's side (nil: Git{}).
	Worktrees Worktree
	// Submissions is the forge capability an accept through the forge
	// submits with (nil: submission.New over the same core, asking this
	// Service about stranded merges).
	Submissions *submission.Service
}

// New is the landing capability of env.
func New(env *session.Env) *Service { return &Service{Env: env} }

// worktrees is git's side of the landing, in every role. Only the role
// accessors call it (Gates.git, Service.mergeGit, ...): each part of
// landing asks git through its own role.
func (e *Service) worktrees() Worktree {
	if e.Worktrees == nil {
		return Git{}
	}
	return e.Worktrees
}

// lifecycle is the lifecycle capability over the same core, asking this
// Service about stranded merges.
func (e *Service) lifecycle() *lifecycle.Service {
	return lifecycle.New(e.Env, e, e.submission())
}

// submission is the forge capability over the same core.
func (e *Service) submission() *submission.Service {
	if e.Submissions != nil {
		return e.Submissions
	}
	return submission.New(e.Env, e)
}

// review is the review capability over the same core: what accept
// --dry-run measures.
func (e *Service) review() *review.Service { return review.New(e.Env) }

// spending is what a task spent, for the squash commit's trailers.
func (e *Service) spending() *spending.Service { return spending.New(e.Env) }

// queue is the merge queue of this machine over the same core.
func (e *Service) queue() *queue.Service { return queue.New(e.Env) }

// attempts is the attempts capability over the same core: a task tried
// several ways, settled once one lands.
func (e *Service) attempts() *attempts.Service {
	return attempts.New(e.Env, e.lifecycle(), e.review())
}

// Gates is the merge gate's side of landing.
func (e *Service) Gates() *Gates { return &Gates{e} }

// Recovery is the recovery of accepts that died.
func (e *Service) Recovery() *Recovery { return &Recovery{e} }

// Remote is the accept through the forge.
func (e *Service) Remote() *Remote { return &Remote{e} }

// Cleanups is the clean-up of accepted and abandoned tasks.
func (e *Service) Cleanups() *Cleanups { return &Cleanups{e} }

// Stashes is the user's changes kept in a stash by an accept.
func (e *Service) Stashes() *Stashes { return &Stashes{e} }

// Gates runs the merge gate: its plan at a target's tip, the candidate
// tree, the run in a scratch worktree, the protected paths, this
// machine's record of its runs and what a killed run left behind.
type Gates struct{ *Service }

// Recovery finds and undoes (or finishes) a local accept that died
// mid-way: the destination's lock, its half-made merge and stash, and
// this machine's own record of the accepts it began.
type Recovery struct{ *Service }

// Remote is an accept through the forge: the merge requested of a pull
// request, and what the forge's later state means for the task.
type Remote struct{ *Service }

// Cleanups removes an accepted or abandoned task's worktree and branch,
// and finishes a clean-up a killed accept left.
type Cleanups struct{ *Service }

// Stashes are the user's uncommitted changes an accept could not give
// back, kept under lazy's refs until they are restored.
type Stashes struct{ *Service }

var (
	_ lifecycle.Landing  = (*Service)(nil)
	_ submission.Landing = (*Service)(nil)
)

// EscapeStranded is Recovery's EscapeStranded: what lifecycle and
// submission ask of landing before a command changes a task.
func (e *Service) EscapeStranded(ctx context.Context, sn *task.Snapshot, verb string) (*task.Snapshot, error) {
	return e.Recovery().EscapeStranded(ctx, sn, verb)
}
