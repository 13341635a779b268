// Package session is the core every capability shares: what it takes to
// act on a task and its agent session, and nothing that is one
// capability's own. It holds
//
//   - the task lock (lock.go): every operation resolves, locks, loads and
//     writes by compare-and-swap under it; the worktree lock a chat holds;
//   - the local session binding (owned.go): this machine's record of the
//     sessions it started is what decides what runs, where, and what is
//     stopped, never the record a remote may have written;
//   - confinement and permissions (confine.go, permissions.go): how a new
//     session is confined, never looser than what asks for it;
//   - launching a turn on a session (launch.go, turn.go, feedback.go): the
//     launcher check, the guard every next turn shares, its prompt with
//     the messages still pending, command.json, the supervisor's launch;
//   - the supervisors (supervisor.go), the budget a turn runs under
//     (budget.go) and the note of a hold (hold.go);
//   - the text rules every intake shares (env.go) and the secrets taken
//     out of what leaves (secrets.go).
//
// The seams. The capabilities (lifecycle, landing, conversation, review,
// attempts, handoff, runner, budget) sit on top of this package and call
// one another only downwards; this package calls none of them. Where an
// operation of the core needs something of a capability, the capability
// does it before or after calling the core (an accept stranded in a merge
// is recovered by landing before lifecycle unblocks; a pooled task's
// feedback is left for its runner by lifecycle before a turn would be
// launched here). The store is the task.Store port and the repository
// is a gitrepo.Location (lazy's host-local directory and git config): no
// store implementation is imported, so a capability runs on any store.
//
// One type does not do it all: Env holds the settings and the lock,
// binding and confinement; Turns launches turns, Budgets checks what a
// turn may spend and Supervisors watches and stops the processes that
// run turns, each a view of the same Env.
package session

// Turns launches turns on existing sessions (see turn.go).
type Turns struct{ e *Env }

// Turns is e's view for launching turns.
func (e *Env) Turns() Turns { return Turns{e} }

// Budgets are the budgets a turn runs under (see budget.go).
type Budgets struct{ e *Env }

// Budgets is e's view of the budgets.
func (e *Env) Budgets() Budgets { return Budgets{e} }

// Supervisors are the processes that run this repository's turns (see
// supervisor.go).
type Supervisors struct{ e *Env }

// Supervisors is e's view of the supervisors.
func (e *Env) Supervisors() Supervisors { return Supervisors{e} }
