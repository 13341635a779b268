package task

import (
	"context"
	"time"
)

// Store is the port the operations work on: task records resolved from
// what a user typed, loaded, created, changed by compare-and-swap,
// listed, read in their long parts, and watched for change. gitstore
// implements it over git refs. What only a repository has (pull and
// push, the list cache, housekeeping, doctor's repairs) stays on the
// implementation.
type Store interface {
	// Host is the host id recorded on the operations this store writes.
	Host() string
	// Resolve turns what a user typed (a slug, a full id or a unique id
	// prefix of at least MinIDPrefix characters) into a task id. A name
	// that names no task is ErrNotFound; a prefix of several ids is an
	// *AmbiguousError.
	Resolve(name string) (string, error)
	// Load reads the current snapshot of task id (a full id): ErrNotFound
	// when there is none, a *CorruptError when its record cannot be read.
	Load(id string) (*Snapshot, error)
	// Create records a new task in backlog (spec.ID, when set, makes the
	// create idempotent: a taken id is ErrExists).
	Create(spec CreateSpec) (*Snapshot, error)
	// Update applies fn to the newest snapshot of task id and commits
	// the result with compare-and-swap: when another writer changed the
	// task first, fn is applied again to the newer snapshot. A nil Op
	// from fn changes nothing; a status fn sets is a transition the
	// store checks with machine.Validate before anything is written.
	Update(ctx context.Context, id string, fn UpdateFunc) (*Snapshot, UpdateStats, error)
	// List returns every task, by creation time then id; a record that
	// cannot be read is an entry with Err, which hides no other.
	List() ([]Entry, error)
	// Turns and Comments read a snapshot's turns and comments in
	// sequence order, within the store's bounds of one read (the newest
	// that fit).
	Turns(sn *Snapshot) ([]Turn, error)
	Comments(sn *Snapshot) ([]Comment, error)
	// History returns the operations applied to the task of a
	// snapshot, oldest first.
	History(sn *Snapshot) ([]Change, error)
	// Watch returns a watch of the store's records; the caller closes it.
	Watch() Watch
}

// Watch tells, without reading the records, whether any of them may
// have changed: what a daemon looks at before it lists the tasks again.
type Watch interface {
	// Stamp is a token of the state of every task record, and the time
	// of the newest change it reflects. Two equal stamps mean that no
	// record changed in between only if the first was read when newest
	// was already older than the store's time granularity (a change
	// within the same tick can leave the stamp as it was), so a caller
	// trusts an equal stamp only then, and bounds how long it trusts one.
	Stamp() (stamp string, newest time.Time, err error)
	// Close releases what the watch holds; a closed watch still answers.
	Close() error
}
