// Package reconcile moves tasks one valid step toward what the protocol
// files, processes and branches say is true. It is level-triggered and
// idempotent: every step takes the task lock and writes by
// compare-and-swap, and re-checks what it saw under the lock, so two
// reconcilers at once (a CLI read and the daemon) never double-apply.
//
// The sweeps are the spec's "System Actions (reconciler)": working tasks
// (record a response, leave a live supervisor, interrupt a dead one and
// maybe auto-resume it), interrupted tasks (a late completed response,
// auto-resume within the circuit breaker), stale pairing, blocked tasks
// without a session, supervisors left behind by finished tasks, and
// branches merged outside lazy. A pass costs in proportion to the tasks
// that are active, not to all tasks; only the merged-branch sweep looks at
// parked tasks, with one git process per target branch.
package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/ops"
	"github.com/lazyorch/lazy/proto"
)

// DefaultStartGrace is how long a newly working task is left alone before
// a missing supervisor counts as a crash (spec: "Grace period").
const DefaultStartGrace = 30 * time.Second

// Action is one thing a sweep did.
type Action struct {
	TaskID string         `json:"task_id"`
	Slug   string         `json:"slug"`
	From   machine.Status `json:"from"`
	To     machine.Status `json:"to"`
	Why    string         `json:"why"`
}

// Reconciler sweeps one repository.
type Reconciler struct {
	Env *ops.Env // its actor is machine.System
	// Launch starts a supervisor; nil disables auto-resume.
	Launch ops.Launcher
	// NoAutoResume leaves interrupted tasks for a human (git config
	// lazy.autoResume false).
	NoAutoResume bool
	// StartGrace overrides DefaultStartGrace when positive.
	StartGrace time.Duration
	Now        func() time.Time
	// Forge, when set (the daemon), follows submitted tasks' pull
	// requests on their forge; nil leaves the forge alone (CLI reads).
	Forge *ForgeSync
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) grace() time.Duration {
	if r.StartGrace > 0 {
		return r.StartGrace
	}
	return DefaultStartGrace
}

func (r *Reconciler) proto(id string) proto.Dir {
	return proto.ForTask(r.Env.Store.Repo().LazyDir(), id)
}

// sweepable says whether a task's status gives a per-task sweep anything
// to judge.
func sweepable(e *gitstore.Entry) bool {
	if e.Err != nil {
		return false
	}
	switch e.Status {
	case machine.Working, machine.Interrupted, machine.Pairing, machine.Zombie, machine.Merging:
		return true
	case machine.Blocked:
		return !hasSession(e)
	}
	return false
}

// hasSession reads the session count from the summary bytes without
// decoding them: the blocked-to-backlog check runs over every blocked
// task on every pass.
func hasSession(e *gitstore.Entry) bool {
	return !bytes.Contains(e.JSON, []byte(`"sessions":0,`))
}

// Sweep runs every sweep over entries (the output of Store.List). Errors
// of one task never stop the others; they are joined in the result.
func (r *Reconciler) Sweep(ctx context.Context, entries []gitstore.Entry) ([]Action, error) {
	var actions []Action
	var errs []error
	add := func(id string, as []Action, err error) {
		actions = append(actions, as...)
		if err != nil {
			errs = append(errs, fmt.Errorf("reconcile %s: %w", id, err))
		}
	}
	for i := range entries {
		e := &entries[i]
		if !sweepable(e) {
			continue
		}
		var as []Action
		var err error
		switch e.Status {
		case machine.Working:
			as, err = r.sweepWorking(ctx, e.ID)
		case machine.Interrupted:
			as, err = r.sweepInterrupted(ctx, e.ID)
		case machine.Pairing:
			as, err = r.sweepPairing(ctx, e.ID)
		case machine.Zombie:
			as, err = r.completeZombie(ctx, e.ID, "")
		case machine.Merging:
			as, err = r.sweepMerging(ctx, e.ID)
		case machine.Blocked:
			as, err = r.sweepSessionless(ctx, e.ID)
		}
		add(e.ID, as, err)
	}
	as, err := r.sweepTerminal(ctx, entries)
	add("finished tasks", as, err)
	as, err = r.sweepMerged(ctx, entries)
	add("merged branches", as, err)
	if r.Forge != nil {
		as, err = r.sweepForge(ctx, entries)
		add("forge sync", as, err)
	}
	return actions, errors.Join(errs...)
}

// one wraps a single optional action.
func one(a *Action) []Action {
	if a == nil {
		return nil
	}
	return []Action{*a}
}
