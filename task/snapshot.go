package task

import (
	"maps"
	"slices"

	"github.com/lazyorch/lazy/internal/oid"
	"github.com/lazyorch/lazy/machine"
)

// Snapshot is a task record as of one version (for gitstore, one commit
// of the task's ref). Operations mutate a snapshot inside Update; the
// store turns the changes into a new version.
//
// The long parts of a record (the goal, the turns) are read on demand,
// from the Source the store that loaded the snapshot bound to it with
// Bind, together with whatever state of its own it keeps on the
// snapshot (gitstore: the entries of the commit's tree). The changes an
// operation makes beyond the fields (a new goal, new and edited turns,
// new comments) are pending until the store commits them: see
// GoalChange, NewTurns, EditedTurns and NewComments.
type Snapshot struct {
	// Commit is the version the snapshot was loaded from (zero while
	// creating).
	Commit     oid.OID
	Task       Task
	Session    *Session
	Violations Violations

	src   Source
	state any

	goal        *string
	goalChanged bool
	newTurns    []Turn
	editedTurns []Turn
	newComments []Comment
}

// Source is where a snapshot reads what it loads on demand: the store
// that loaded it.
type Source interface {
	// ReadGoal reads the stored goal of sn ("" when it has none).
	ReadGoal(sn *Snapshot) (string, error)
	// Turns reads the stored turns of sn in sequence order.
	Turns(sn *Snapshot) ([]Turn, error)
}

// Bind makes src the snapshot's source and state the store's own state
// of it, which the snapshot carries (and Clone shares) without looking
// at it: a store that changes its state gives the snapshot a new one.
func (sn *Snapshot) Bind(src Source, state any) { sn.src, sn.state = src, state }

// Source is the source bound to the snapshot (nil: none, a snapshot
// nothing was stored of).
func (sn *Snapshot) Source() Source { return sn.src }

// State is the store's own state of the snapshot, as Bind left it.
func (sn *Snapshot) State() any { return sn.state }

// EditTurns applies fn to every existing turn; turns for which fn returns
// true are rewritten in the next commit. Turns stay append-only in order
// and number; only fields like feedback_delivery change.
func (sn *Snapshot) EditTurns(fn func(t *Turn) bool) error {
	var turns []Turn
	if sn.src != nil {
		var err error
		if turns, err = sn.src.Turns(sn); err != nil {
			return err
		}
	}
	for i := range turns {
		if fn(&turns[i]) {
			sn.editedTurns = append(sn.editedTurns, turns[i])
		}
	}
	for i := range sn.newTurns {
		fn(&sn.newTurns[i])
	}
	return nil
}

// Goal returns the task's long description.
func (sn *Snapshot) Goal() (string, error) {
	if sn.goal != nil {
		return *sn.goal, nil
	}
	if sn.src == nil {
		return "", nil
	}
	g, err := sn.src.ReadGoal(sn)
	if err != nil {
		return "", err
	}
	sn.goal = &g
	return g, nil
}

// SetGoal replaces the long description.
func (sn *Snapshot) SetGoal(g string) {
	sn.goal = &g
	sn.goalChanged = true
}

// GoalChange is the goal SetGoal set since the snapshot was loaded, for
// the store to commit; changed is false when it was not set.
func (sn *Snapshot) GoalChange() (goal string, changed bool) {
	if !sn.goalChanged {
		return "", false
	}
	return *sn.goal, true
}

// AddTurn appends a turn, assigning its sequence number.
func (sn *Snapshot) AddTurn(t Turn) Turn {
	sn.Task.Turns++
	t.Seq = sn.Task.Turns
	sn.newTurns = append(sn.newTurns, t)
	return t
}

// NewTurns are the turns AddTurn appended, for the store to commit.
func (sn *Snapshot) NewTurns() []Turn { return sn.newTurns }

// EditedTurns are the stored turns EditTurns changed, for the store to
// rewrite.
func (sn *Snapshot) EditedTurns() []Turn { return sn.editedTurns }

// AddComment appends a comment, assigning its sequence number.
func (sn *Snapshot) AddComment(c Comment) Comment {
	sn.Task.Comments++
	c.Seq = sn.Task.Comments
	sn.newComments = append(sn.newComments, c)
	return c
}

// NewComments are the comments AddComment appended, for the store to
// commit.
func (sn *Snapshot) NewComments() []Comment { return sn.newComments }

// PendingViolations is the number of files that still owe a decision.
func (sn *Snapshot) PendingViolations() int { return len(sn.Violations.Pending) }

// Clone is a copy of sn an operation can change without touching sn:
// the record's fields deep, the source and the store's state shared, and
// no pending changes. Update hands an operation a clone of the newest
// snapshot.
func (sn *Snapshot) Clone() *Snapshot {
	c := *sn
	c.Task.AllowedPaths = append([]string(nil), sn.Task.AllowedPaths...)
	if sn.Task.Metadata != nil {
		c.Task.Metadata = maps.Clone(sn.Task.Metadata)
	}
	if sn.Session != nil {
		s := *sn.Session
		c.Session = &s
	}
	c.Violations.Pending = append([]string(nil), sn.Violations.Pending...)
	if sn.Violations.Decided != nil {
		c.Violations.Decided = maps.Clone(sn.Violations.Decided)
	}
	if sn.Violations.Bases != nil {
		c.Violations.Bases = maps.Clone(sn.Violations.Bases)
	}
	if sn.Task.Accept != nil {
		a := *sn.Task.Accept
		c.Task.Accept = &a
	}
	if sn.Task.Forge != nil {
		c.Task.Forge = sn.Task.Forge.clone()
	}
	c.Task.Gate = sn.Task.Gate.clone()
	c.Task.Pool = sn.Task.Pool.clone()
	c.Task.Hold = sn.Task.Hold.clone()
	c.Task.After = slices.Clone(sn.Task.After)
	c.Task.Attempts = slices.Clone(sn.Task.Attempts)
	c.Task.Pick = sn.Task.Pick.clone()
	c.newTurns, c.editedTurns, c.newComments, c.goalChanged = nil, nil, nil, false
	return &c
}

// UpdateFunc applies one operation to a snapshot. It must validate against
// the snapshot it is given: on a lost race it is called again with the
// newer snapshot. Changing sn.Task.Status is a transition that the store
// checks with machine.Validate before anything is written.
type UpdateFunc func(sn *Snapshot) (*Op, error)

// UpdateStats reports how an Update went.
type UpdateStats struct {
	// Retries counts compare-and-swap races lost to other writers.
	Retries int
}

// CreateSpec describes a new task.
type CreateSpec struct {
	// ID, when set, is the new task's id (ValidID), for an idempotent
	// create: a task with that id already existing fails with ErrExists.
	ID           string
	Title        string
	Goal         string
	Slug         string // optional; derived from Title when empty
	Parent       string // full id of an existing task, or ""
	TargetBranch string
	AllowedPaths []string
	Metadata     map[string]string
	After        []string // full ids of the tasks it waits for
	BudgetUSD    *float64 // the task's own budget (nil: lazy.budget.task; 0 allows no spend)
	// AttemptOf and Attempt make the task attempt K of a group (see
	// Task.AttemptOf).
	AttemptOf string
	Attempt   int
	Actor     machine.Actor
}

// MaxAttempts bounds how many ways one task is tried at once (lazy
// start --attempts): each is a worktree and an agent at work.
const MaxAttempts = 8
