// Package wire builds the capabilities over one task store and wires them
// to one another: lifecycle asks landing to recover a stranded accept and
// submission to close a pull request, attempts start through lifecycle and
// are measured through review, and so on. Each capability declares the
// small interfaces it consumes; this package is the one place that knows
// which concrete capability answers each, so the capabilities never import
// one another upward. It holds no operation of its own: the CLI, MCP, the
// web view and the daemon build an Env once per run and call the
// capability an action belongs to (Env.Landing().Accept, ...).
package wire

import (
	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/conversation"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/handoff"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/spending"
	"github.com/lazyorch/lazy/submission"
)

// Env is the shared core (session.Env: the store, who is asking, how
// turns run; embedded by value, so a copy of an Env is a copy of its
// settings), the settings only accept uses, and the capabilities built
// over them.
type Env struct {
	session.Env
	// Store is the task store over git, with what only it has (its Repo,
	// pull); the core's Store is the same store, through the task.Store
	// port.
	Store *gitstore.Store
	// CrashAt is the test-only crash hook (LAZY_TEST_CRASH_AT); nil,
	// which does nothing, everywhere but in tests.
	CrashAt *CrashPoint
	// GateReaper is the argv prefix each merge-gate command runs under
	// (lazy gate-reap --): its child subreaper, which ends everything the
	// command leaves running. nil: the gate ends what its commands leave
	// by their process group and the run's mark only.
	GateReaper []string
}

// New is the Env over st with the core settings of core (its Store and
// Repo are st's).
func New(st *gitstore.Store, core session.Env) *Env {
	core.Store, core.Repo = st, st.Repo()
	return &Env{Env: core, Store: st}
}

// WithAccept sets what only accept uses: the crash hook and the gate's
// reaper. It returns e.
func (e *Env) WithAccept(crash *CrashPoint, gateReaper []string) *Env {
	e.CrashAt, e.GateReaper = crash, gateReaper
	return e
}

// Lifecycle is the lifecycle capability over e's core, asking e what is
// landing (a stranded accept's recovery) and submission to close a pull
// request.
func (e *Env) Lifecycle() *lifecycle.Service {
	l := lifecycle.New(&e.Env, e.Landing(), e.Submission())
	l.Spending = e.Spending()
	return l
}

// Submission is the forge capability (submit, a pull request's feedback
// and state) over e's core, asking landing to recover a stranded
// accept.
func (e *Env) Submission() *submission.Service {
	return submission.New(&e.Env, e.Landing())
}

// Spending is the spending capability over e's core: what a task spent,
// raising the budget that holds it, the prices of turns.
func (e *Env) Spending() *spending.Service { return spending.New(&e.Env) }

// Review is the review capability over e's core: the range a task's
// work is measured on, its diff and log, and the overlaps.
func (e *Env) Review() *review.Service {
	return review.New(&e.Env)
}

// Conversation is the conversation capability over e's core: ask, sync,
// chat, pair and the journal.
func (e *Env) Conversation() *conversation.Service { return conversation.New(&e.Env) }

// Attempts is the attempts capability over e's core: a task tried N
// ways, starting and ending its attempts through e's lifecycle,
// comparing them through e's review, and picking one by e's gate.
func (e *Env) Attempts() *attempts.Service {
	at := attempts.New(&e.Env, e.Lifecycle(), e.Review())
	at.Gater, at.Lander = pickGates{e}, pickGates{e}
	return at
}

// Queue is this machine's merge queues of e's repository: what they
// hold, taking a task out, the train of several accepts.
func (e *Env) Queue() *queue.Service { return queue.New(&e.Env) }

// Handoff is the handoff capability over e's core: a parked task handed
// to another agent (or a human pairing) with the record of where its
// work stands.
func (e *Env) Handoff() *handoff.Service { return handoff.New(&e.Env) }
