// Package machine is lazy's task state machine: statuses, actors, the
// transition table, validation, classification and the derived park label.
//
// It is pure Go with no I/O and imports nothing else of lazy's, so every
// other package can depend on it and it can be tested exhaustively.
package machine

import (
	"fmt"
	"strings"
)

// Status is the lifecycle status of a task.
type Status string

// The statuses of the specification (spec: "Status Definitions").
const (
	Backlog     Status = "backlog"     // created, never started, no session
	Working     Status = "working"     // an agent turn is running
	Blocked     Status = "blocked"     // a turn ended; waiting for human review
	Conflict    Status = "conflict"    // blocked with pending file-permission violations (derived)
	Pairing     Status = "pairing"     // a human works interactively in the worktree
	Interrupted Status = "interrupted" // the agent or its supervisor died without a response
	Merging     Status = "merging"     // a merge is in flight (local accept or forge)
	Submitted   Status = "submitted"   // work is out for review on a forge (PR/MR open)
	Zombie      Status = "zombie"      // system-only: branch merged but status never updated
	Complete    Status = "complete"    // accepted and merged
	Abandoned   Status = "abandoned"   // rejected or closed
)

// Statuses lists every status in a stable, documented order.
var statuses = [...]Status{
	Backlog, Working, Blocked, Conflict, Pairing, Interrupted,
	Merging, Submitted, Zombie, Complete, Abandoned,
}

// Statuses returns every status in a stable order (a fresh slice, so
// callers may modify it).
func Statuses() []Status {
	out := make([]Status, len(statuses))
	copy(out, statuses[:])
	return out
}

// ParseStatus turns user text into a Status, case-insensitively.
func ParseStatus(s string) (Status, error) {
	want := Status(strings.ToLower(strings.TrimSpace(s)))
	for _, st := range statuses {
		if st == want {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown status %q (valid: %s)", s, joinStatuses(statuses[:]))
}

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	for _, st := range statuses {
		if st == s {
			return true
		}
	}
	return false
}

// Category groups statuses by what they mean for the humans and for the
// reconciler.
type Category string

// Categories (spec: "Status Categories"). Resting covers the statuses the
// spec leaves out of the three named groups: backlog, submitted and zombie.
const (
	CategoryTerminal Category = "terminal" // finished; core fields frozen
	CategoryBlocked  Category = "blocked"  // waiting for a human
	CategoryActive   Category = "active"   // a live worktree that must not be merged into
	CategoryResting  Category = "resting"  // none of the above
)

// Category classifies the status.
func (s Status) Category() Category {
	switch s {
	case Complete, Abandoned:
		return CategoryTerminal
	case Blocked, Conflict:
		return CategoryBlocked
	case Working, Interrupted, Pairing, Merging:
		return CategoryActive
	default:
		return CategoryResting
	}
}

// IsTerminal reports whether the task is finished (complete or abandoned).
func (s Status) IsTerminal() bool { return s.Category() == CategoryTerminal }

// IsBlocked reports whether the task waits for a human (blocked or conflict).
func (s Status) IsBlocked() bool { return s.Category() == CategoryBlocked }

// IsActive reports whether the task has a live worktree (working,
// interrupted, pairing or merging).
func (s Status) IsActive() bool { return s.Category() == CategoryActive }

// Park returns the label a paused task wears: conflict while any
// file-permission violation is still pending, blocked otherwise.
//
// Conflict is derived, never asserted (spec: "conflict is DERIVED"): every
// path that parks a task calls Park with the pending count rather than
// choosing a status itself.
func Park(pendingViolations int) Status {
	if pendingViolations > 0 {
		return Conflict
	}
	return Blocked
}

func joinStatuses(list []Status) string {
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}
