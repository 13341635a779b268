package task

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/lazyorch/lazy/machine"
)

// The rules of a write that every Store follows alike: what an
// operation may change, what the store stamps on it, and how an update
// that lost a race is applied again. A store supplies only how it loads
// the newest version of a task and commits a new one by
// compare-and-swap.

// Seal checks the change from prev (nil when creating) to next that op
// makes, and stamps it: op's From, To, Host, At and Clock, next's
// Clock, UpdatedAt and Version. A status change must be one the machine
// allows op's actor, a new task starts in backlog, and op needs a valid
// actor. now is cut to the second, as records keep it.
func Seal(prev, next *Snapshot, op *Op, host string, now time.Time) error {
	var from machine.Status
	if prev != nil {
		from = prev.Task.Status
	}
	to := next.Task.Status
	if prev != nil && from != to {
		if err := machine.Validate(from, to, op.Actor); err != nil {
			return err
		}
	}
	if prev == nil && to != machine.Backlog {
		return fmt.Errorf("a new task starts in backlog, not %s", to)
	}
	if !op.Actor.Valid() {
		return fmt.Errorf("operation %s has no valid actor (%q)", op.Name, op.Actor)
	}
	now = now.UTC().Truncate(time.Second)
	op.From, op.To = from, to
	op.Host = host
	op.At = now
	if prev != nil {
		next.Task.Clock = prev.Task.Clock + 1
	} else {
		next.Task.Clock = 1
	}
	op.Clock = next.Task.Clock
	next.Task.UpdatedAt = now
	next.Task.Version = SchemaVersion
	if next.Violations.Pending == nil {
		next.Violations.Pending = []string{}
	}
	return nil
}

// Subject is the one-line summary of op applied to t: the subject of
// the commit gitstore writes, and of the Change History lists.
func Subject(t *Task, op *Op) string {
	if op.From == "" || op.From == op.To {
		return fmt.Sprintf("%s %s: %s", op.Name, t.Slug, op.To)
	}
	return fmt.Sprintf("%s %s: %s -> %s", op.Name, t.Slug, op.From, op.To)
}

// ErrConflict is what a store's commit reports when another writer
// changed the task first (wrapped with the store's own cause): Update
// applies the operation again to the newer snapshot.
var ErrConflict = errors.New("another writer changed the task first")

// maxUpdateAttempts bounds the reload-and-reapply loop. Each attempt
// costs a millisecond or so in a repository; 200 is far beyond any
// contention a store sees and still ends a livelock with a clear error.
const maxUpdateAttempts = 200

// Committer is what RunUpdate needs of a store: the newest snapshot of a
// task, and a compare-and-swap that makes next (sealed, relative to cur)
// the task's version if cur still is, and returns next bound to it. A
// commit that lost the race returns an error that wraps ErrConflict.
type Committer interface {
	Load(id string) (*Snapshot, error)
	CommitNext(cur, next *Snapshot, op *Op) (*Snapshot, error)
}

// RunUpdate is Store.Update over a Committer: fn is applied to a clone
// of the newest snapshot of task id, and the result committed; when
// another writer changed the task first, fn is applied again to the
// newer snapshot, after a short random pause so racing writers spread
// out. A nil Op from fn changes nothing; an error from fn (or a panic,
// which propagates) leaves the task as it was.
func RunUpdate(ctx context.Context, c Committer, id string, fn UpdateFunc) (*Snapshot, UpdateStats, error) {
	var st UpdateStats
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, st, err
		}
		cur, err := c.Load(id)
		if err != nil {
			return nil, st, err
		}
		next := cur.Clone()
		op, err := fn(next)
		if err != nil {
			return nil, st, err
		}
		if op == nil {
			return cur, st, nil // nothing to do
		}
		next.SettleHold()
		done, err := c.CommitNext(cur, next, op)
		if err == nil {
			return done, st, nil
		}
		if !errors.Is(err, ErrConflict) {
			return nil, st, err
		}
		st.Retries++
		backoff(attempt)
	}
	return nil, st, fmt.Errorf("task %s: gave up after %d attempts: other writers keep changing it", id, maxUpdateAttempts)
}

// backoff sleeps a short random time so racing writers spread out instead
// of colliding again in lockstep.
func backoff(attempt int) {
	limit := int64(200 * (attempt + 1))
	if limit > 5000 {
		limit = 5000
	}
	n, err := rand.Int(rand.Reader, big.NewInt(limit))
	if err != nil {
		return
	}
	time.Sleep(time.Duration(n.Int64()) * time.Microsecond)
}
