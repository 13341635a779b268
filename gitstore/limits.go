package gitstore

import (
	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/task"
)

// Size limits of the objects of a task record. Records come from other
// machines, and anyone who can push to a shared remote can write one of
// any size, so every read checks the object's size from its header (git's
// loose-object header, the pack entry header, or `git cat-file
// --batch-check`) before it reads a byte of content: an oversize record is
// reported as corrupt in milliseconds and never loaded. lazy's own writes
// stay under the same limits (see Store.commit), and the operations refuse
// larger texts at intake.
const (
	// MaxMetaRecord bounds task.json, session.json and op.json: fields,
	// ids and a title, never long texts (goal.md holds the goal).
	MaxMetaRecord = task.MaxMetaRecord
	// MaxViolationsRecord bounds violations.json: paths an agent changed
	// outside its allowed paths, which an agent decides the number of.
	MaxViolationsRecord = task.MaxViolationsRecord
	// MaxTextRecord bounds goal.md and each turns/*.json and
	// comments/*.json: one or two texts of up to MaxText, JSON-escaped.
	MaxTextRecord = task.MaxTextRecord
	// MaxTree bounds a tree: the snapshot's entries, or one entry per
	// turn or comment (about 40 bytes each).
	MaxTree = gitrepo.MaxTree
	// MaxCommit bounds a commit: a human line and lazy's trailers.
	MaxCommit = gitrepo.MaxCommit
	// MaxSlugRecord bounds a slug ref's blob: one id and a newline.
	MaxSlugRecord = task.MaxSlugRecord
)

// Errors of the repository layer, for errors.Is.
var (
	// ErrOversize marks a record object over its size limit.
	ErrOversize = gitrepo.ErrOversize
	// ErrMissingObject means a ref or tree names an object the repository
	// does not have (a damaged or partially fetched repository).
	ErrMissingObject = gitrepo.ErrMissing
	// ErrStale is returned by a compare-and-swap when the ref no longer
	// holds the expected value: another writer (lazy or git) got there
	// first.
	ErrStale = gitrepo.ErrStale
	// ErrLocked is returned when another process held the ref's .lock
	// file for longer than the lock timeout.
	ErrLocked = gitrepo.ErrLocked
)

// limitFor returns the size limit of a snapshot file by its tree name
// (the turns/ and comments/ entries by their directory): task.PartLimit.
func limitFor(name string) int64 { return task.PartLimit(name) }

// oversize is the error for an object of size bytes over limit.
func oversize(what string, h gitrepo.OID, size, limit int64) error {
	return gitrepo.Oversize(what, h, size, limit)
}
