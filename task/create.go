package task

import (
	"errors"
	"fmt"
	"time"

	"github.com/lazyorch/lazy/machine"
)

// The rules of a create that every Store follows alike: which id a new
// task gets, which slug, and the record it starts as. A store supplies
// only how it reserves a slug and writes the record.

// NewTaskID is the id a create records: spec.ID when set (which must be
// an id lazy mints; exists reports whether a task has it, and a taken
// one is ErrExists), else a fresh one.
func NewTaskID(spec CreateSpec, exists func(id string) bool) (string, error) {
	if spec.ID == "" {
		return NewID()
	}
	if !ValidID(spec.ID) {
		return "", fmt.Errorf("task id %q is not an id lazy mints", spec.ID)
	}
	if exists(spec.ID) {
		return "", fmt.Errorf("task %s: %w", spec.ID, ErrExists)
	}
	return spec.ID, nil
}

// ErrSlugTaken is what a store's reserve says of a slug another task
// holds (see SettleSlug).
var ErrSlugTaken = errors.New("slug taken")

// maxSlugTries bounds the search for a free "-N" suffix.
const maxSlugTries = 1000

// SettleSlug finds the slug of a new task: spec.Slug when given (checked,
// and an error when taken), else the slug of its title, or the first of
// its "-2", "-3"... variants that reserve takes. reserve claims a slug
// for the task and reports ErrSlugTaken (wrapped or not) when another
// task holds it; any other error ends the search.
func SettleSlug(spec CreateSpec, reserve func(slug string) error) (string, error) {
	base := spec.Slug
	explicit := base != ""
	if !explicit {
		base = Slugify(spec.Title)
	} else if !ValidSlug(base) {
		return "", fmt.Errorf("invalid slug %q: use lowercase letters, digits and single dashes, starting with a letter, at most %d characters", base, MaxSlugLen)
	} else if ShadowsID(base) {
		return "", fmt.Errorf("slug %q could be read as a task id prefix (it is all hex digits); add a non-hex letter or a dash, for example t-%s", base, base)
	}
	for n := 1; n <= maxSlugTries; n++ {
		cand := base
		if n > 1 {
			cand = SlugWithSuffix(base, n)
		}
		err := reserve(cand)
		if err == nil {
			return cand, nil
		}
		if !errors.Is(err, ErrSlugTaken) {
			return "", err
		}
		if explicit {
			return "", fmt.Errorf("slug %q is already taken by another task", base)
		}
	}
	return "", fmt.Errorf("no free slug for %q after %d tries", base, maxSlugTries)
}

// NewRecord is the snapshot a create commits: task id with slug, in
// backlog, created at now, with spec's fields and goal.
func NewRecord(spec CreateSpec, id, slug string, now time.Time) *Snapshot {
	sn := &Snapshot{}
	sn.Task = Task{
		ID: id, Slug: slug, Title: spec.Title, Status: machine.Backlog,
		Parent: spec.Parent, TargetBranch: spec.TargetBranch,
		CreatedAt: now, CreatedBy: spec.Actor, AllowedPaths: spec.AllowedPaths, Metadata: spec.Metadata, After: spec.After, BudgetUSD: spec.BudgetUSD,
		AttemptOf: spec.AttemptOf, Attempt: spec.Attempt,
	}
	if spec.Goal != "" {
		sn.SetGoal(spec.Goal)
	}
	return sn
}

// CreateOp is the operation a create records.
func CreateOp(spec CreateSpec) *Op { return &Op{Name: "create", Actor: spec.Actor} }
