// Package spending is what agent work costs a task and the budgets over
// it, as a capability: what a task and everything under it spent (the
// figure an accept's trailers and lazy show carry, with the figures out
// of bounds flagged), raising the budget that holds a task, and the
// prices a turn that reported only tokens is priced by (lazy.price over
// lazy's table).
//
// The budgets a turn runs under (the task's, its parents', the day's)
// and the hold a spent one parks a task with are the core's (package
// session, Budgets), since every turn launched anywhere checks them;
// this package holds what only its callers ask for. The sums are package
// cost's, the rules of a budget line and the ledger package budget's.
package spending

import "github.com/lazyorch/lazy/session"

// What spending consumes is the core alone (session.Env): the task store
// behind the task.Store port, the task lock, who is asking, and the
// repository's git config and host-local directory (the budgets'
// settings, lazy.price, the day's ledger).

// Service is the spending capability over the core env.
type Service struct {
	// Env is the core: the store, who is asking, git config.
	Env *session.Env
}

// New is the spending capability of env.
func New(env *session.Env) *Service { return &Service{Env: env} }
