package machine

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Actor records who caused a turn or a transition. It is provenance: it
// never gates behaviour, with one exception, zombie, which only the system
// may enter (spec: "Actors").
type Actor string

// The five actors.
const (
	Human      Actor = "human"      // a person at the CLI
	Builder    Actor = "builder"    // the AI builder over MCP
	Agent      Actor = "agent"      // a task agent driving its own subtree over MCP
	System     Actor = "system"     // the daemon/reconciler acting on its own
	Supervisor Actor = "supervisor" // the per-turn supervisor authoring prompts
)

var actors = [...]Actor{Human, Builder, Agent, System, Supervisor}

// Actors returns the five actors in a stable order.
func Actors() []Actor {
	out := make([]Actor, len(actors))
	copy(out, actors[:])
	return out
}

// ParseActor turns text (for example the LAZY_ACTOR environment variable)
// into an Actor.
func ParseActor(s string) (Actor, error) {
	want := Actor(strings.ToLower(strings.TrimSpace(s)))
	for _, a := range actors {
		if a == want {
			return a, nil
		}
	}
	names := make([]string, len(actors))
	for i, a := range actors {
		names[i] = string(a)
	}
	return "", fmt.Errorf("unknown actor %q (valid: %s)", s, strings.Join(names, ", "))
}

// Valid reports whether a is one of the five actors.
func (a Actor) Valid() bool {
	for _, x := range actors {
		if x == a {
			return true
		}
	}
	return false
}

// Edge is one allowed transition with the triggers that take it.
type Edge struct {
	From, To Status
	// Triggers names what moves a task along this edge, for help text and
	// error messages.
	Triggers []string
	// SystemOnly edges may be taken by the System actor alone.
	SystemOnly bool
}

// table is the transition table of the specification ("Valid State
// Transitions"). The additions are blocked -> submitted (lazy submit),
// the edge the spec implies by listing `submitted` as a status that accept
// restores and `submit` as a command but never naming its entry, and
// complete|abandoned -> conflict: a reopen parks, and every park derives
// its label from the pending violations (spec: "conflict is DERIVED").
var table = []Edge{
	{Backlog, Working, []string{"lazy start"}, false},
	{Backlog, Abandoned, []string{"lazy close"}, false},
	// An attempt group never runs itself: it waits in backlog while its
	// attempts do, and completes when one of them lands.
	{Backlog, Complete, []string{"lazy accept --attempt: one of its attempts landed"}, false},

	{Working, Blocked, []string{"reconciler: agent turn completed", "reconciler: unrecoverable agent failure", "lazy stop", "ask ends (status restored)"}, false},
	{Working, Conflict, []string{"reconciler: turn completed with file-permission violations", "lazy accept: pre-accept turn ends (status restored)", "ask ends (status restored)"}, false},
	{Working, Submitted, []string{"lazy accept: pre-accept turn ends (status restored)"}, false},
	{Working, Interrupted, []string{"reconciler: supervisor died without a response"}, false},

	{Blocked, Working, []string{"lazy unblock", "lazy ask", "lazy accept: pre-accept turn"}, false},
	{Blocked, Conflict, []string{"park: pending violations re-derived"}, false},
	{Blocked, Pairing, []string{"lazy pair"}, false},
	{Blocked, Merging, []string{"lazy accept"}, false},
	{Blocked, Submitted, []string{"lazy submit"}, false},
	{Blocked, Abandoned, []string{"lazy reject", "lazy close"}, false},
	{Blocked, Backlog, []string{"reconciler: blocked task without a session"}, false},

	{Conflict, Working, []string{"lazy unblock", "lazy ask"}, false},
	{Conflict, Blocked, []string{"park: every violation decided"}, false},
	{Conflict, Pairing, []string{"lazy pair"}, false},
	{Conflict, Abandoned, []string{"lazy reject", "lazy close"}, false},

	{Interrupted, Working, []string{"reconciler: auto-resume", "lazy resume", "lazy unblock", "reconciler: late completed response"}, false},
	{Interrupted, Pairing, []string{"lazy pair"}, false},
	{Interrupted, Abandoned, []string{"lazy reject", "lazy close"}, false},

	{Pairing, Blocked, []string{"pairing ends", "reconciler: stale pairing"}, false},
	{Pairing, Conflict, []string{"pairing ends with pending violations", "reconciler: stale pairing with pending violations"}, false},

	{Merging, Complete, []string{"lazy accept: merge succeeded", "reconciler: merge completed"}, false},
	{Merging, Blocked, []string{"lazy accept: checks failed or merge aborted", "reconciler: stranded merge recovered", "reconciler: PR/MR closed"}, false},
	{Merging, Conflict, []string{"lazy accept: merge aborted on a conflict task"}, false},
	{Merging, Submitted, []string{"lazy accept: merge aborted on a submitted task"}, false},

	{Submitted, Merging, []string{"lazy accept"}, false},
	{Submitted, Working, []string{"lazy accept: pre-accept turn"}, false},
	{Submitted, Blocked, []string{"lazy unblock (withdraws the submission)", "reconciler: PR/MR closed"}, false},
	{Submitted, Abandoned, []string{"lazy reject", "lazy close"}, false},

	{Zombie, Complete, []string{"reconciler: merged-branch sweep"}, false},

	{Complete, Blocked, []string{"lazy reopen --reason"}, false},
	{Complete, Conflict, []string{"lazy reopen --reason (violations still pending)"}, false},
	{Complete, Backlog, []string{"lazy reopen (no session)"}, false},

	{Abandoned, Backlog, []string{"lazy reopen (no agent work)"}, false},
	{Abandoned, Blocked, []string{"lazy reopen (with agent work)"}, false},
	{Abandoned, Conflict, []string{"lazy reopen (with agent work and violations still pending)"}, false},
}

type pair struct{ from, to Status }

// index is built once from table; it is read-only after init, so it is not
// mutable global state in any meaningful sense.
var index = buildIndex()

func buildIndex() map[pair]Edge {
	m := make(map[pair]Edge, len(table)+len(statuses))
	for _, e := range table {
		m[pair{e.From, e.To}] = e
	}
	// Any non-terminal status may become zombie, system only.
	for _, s := range statuses {
		if s.IsTerminal() || s == Zombie {
			continue
		}
		m[pair{s, Zombie}] = Edge{From: s, To: Zombie, Triggers: []string{"reconciler: branch found merged"}, SystemOnly: true}
	}
	return m
}

// Lookup returns the edge from -> to, if the table allows it at all.
func Lookup(from, to Status) (Edge, bool) {
	e, ok := index[pair{from, to}]
	return e, ok
}

// Edges returns every allowed transition, sorted by (from, to) order of
// Statuses.
func Edges() []Edge {
	out := make([]Edge, 0, len(index))
	for _, e := range index {
		out = append(out, e)
	}
	pos := map[Status]int{}
	for i, s := range statuses {
		pos[s] = i
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].From != out[j].From {
			return pos[out[i].From] < pos[out[j].From]
		}
		return pos[out[i].To] < pos[out[j].To]
	})
	return out
}

// Next returns the statuses reachable from `from` in one step by actor.
func Next(from Status, actor Actor) []Status {
	var out []Status
	for _, s := range statuses {
		if e, ok := Lookup(from, s); ok && (!e.SystemOnly || actor == System) {
			out = append(out, s)
		}
	}
	return out
}

// ErrTransition is matched (errors.Is) by every refusal from Validate.
var ErrTransition = errors.New("transition not allowed")

// TransitionError explains a refused transition in words a user can act on.
type TransitionError struct {
	From, To Status
	Actor    Actor
	Reason   string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("cannot move a task from %s to %s: %s", e.From, e.To, e.Reason)
}

// Unwrap lets errors.Is(err, ErrTransition) match.
func (e *TransitionError) Unwrap() error { return ErrTransition }

// Validate reports whether actor may move a task from -> to. The error says
// why not and what the task can do instead.
func Validate(from, to Status, actor Actor) error {
	fail := func(reason string) error {
		return &TransitionError{From: from, To: to, Actor: actor, Reason: reason}
	}
	switch {
	case !from.Valid():
		return fail(fmt.Sprintf("%q is not a status", from))
	case !to.Valid():
		return fail(fmt.Sprintf("%q is not a status", to))
	case !actor.Valid():
		return fail(fmt.Sprintf("%q is not an actor", actor))
	case from == to:
		return fail(fmt.Sprintf("the task is already %s", from))
	}
	e, ok := Lookup(from, to)
	if !ok {
		return fail(refusalReason(from, to))
	}
	if e.SystemOnly && actor != System {
		return fail(fmt.Sprintf("only the system may mark a task %s (asked by %s)", to, actor))
	}
	return nil
}

func refusalReason(from, to Status) string {
	if from.IsTerminal() && to == Zombie {
		return "a finished task cannot become zombie"
	}
	switch (pair{from, to}) {
	case pair{Blocked, Complete}, pair{Conflict, Complete}:
		return "a task must be merged by lazy accept (through merging) to complete"
	case pair{Conflict, Merging}:
		return "pending file-permission violations must be approved or reverted (lazy unblock --approve-file / --no-approve-files) before accept"
	case pair{Working, Pairing}, pair{Working, Abandoned}:
		return "the agent is running; stop it first (lazy stop)"
	case pair{Interrupted, Merging}, pair{Interrupted, Complete}:
		return "an interrupted task must be resumed or reviewed before accept"
	case pair{Merging, Abandoned}:
		return "a merge either succeeds or restores the status the task had before accept"
	}
	next := Next(from, Human)
	if len(next) == 0 {
		return fmt.Sprintf("a %s task can only be moved by the system", from)
	}
	return fmt.Sprintf("from %s a task can go to: %s", from, joinStatuses(next))
}
