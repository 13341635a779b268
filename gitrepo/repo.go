package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Type is a git object type.
type Type string

// The object types lazy reads and writes.
const (
	Blob   Type = "blob"
	Tree   Type = "tree"
	Commit Type = "commit"
	Tag    Type = "tag"
)

// Any is the type to pass Read to accept an object of any type.
const Any Type = ""

// Object is one object's type and content.
type Object struct {
	Type    Type
	Size    int64
	Content []byte
}

// Errors every implementation reports alike, for errors.Is.
var (
	// ErrMissing: the repository has no such object.
	ErrMissing = errors.New("object missing from the repository")
	// ErrOversize: the object is larger than the caller's limit; its
	// content was not read.
	ErrOversize = errors.New("over lazy's size limit")
	// ErrWrongType: the object is not of the type asked for.
	ErrWrongType = errors.New("object is not of the expected type")
	// ErrStale: a compare-and-swap found the ref changed underneath.
	ErrStale = errors.New("ref changed underneath us")
)

// Repo is object and ref access to one repository: the roles below,
// composed the way the task store uses them. Every implementation (Local,
// Git) passes gitrepo/repotest, which holds each role to real git, in both
// object formats.
type Repo interface {
	// Format is the repository's object format, SHA1 or SHA256.
	Format() string
	ObjectStore
	RecordReader
	RefStore
	RefIndex
	FileReader
	BulkSource
	PackKeeper
	// Close releases what the implementation holds (processes, maps).
	Close() error
}

// ObjectStore reads and writes single objects.
type ObjectStore interface {
	// Read returns the object id, which must be of type typ (Any for
	// any) and at most limit bytes; a larger one is ErrOversize and its
	// content is never read.
	Read(id OID, typ Type, limit int64) (*Object, error)
	// Has reports whether the repository holds the object.
	Has(id OID) (bool, error)
	// Write stores an object and returns its id.
	Write(typ Type, content []byte) (OID, error)
}

// RecordReader is the typed reads a task record is made of: a blob
// sized before it is read, and trees and commits decoded. They are the
// store's hot path, so an implementation answers them without a
// generic Read's copy where it can.
type RecordReader interface {
	// ReadBlob returns blob id's content (name names it in errors),
	// ErrOversize unread when it is over limit, ErrWrongType (or
	// ErrMissing, from a reader that looks objects up by type) when id
	// is not a blob. The bytes may be the reader's own: callers only read
	// them.
	ReadBlob(id OID, name string, limit int64) ([]byte, error)
	// BlobSize returns blob id's size, reading none of its content.
	BlobSize(id OID, name string) (int64, error)
	// ReadTree reads and decodes tree id, of at most MaxTree bytes.
	ReadTree(id OID) (*ParsedTree, error)
	// ReadCommit reads and decodes commit id, of at most MaxCommit
	// bytes.
	ReadCommit(id OID) (*ParsedCommit, error)
}

// RefStore reads and moves single refs.
type RefStore interface {
	// ReadRef returns the id a ref names, and whether it exists.
	ReadRef(name string) (OID, bool, error)
	// ListRefs returns every ref whose name starts with prefix.
	ListRefs(prefix string) (map[string]OID, error)
	// CompareAndSwap points name at new (not zero) if it now names old
	// (the zero OID: does not exist); otherwise ErrStale.
	CompareAndSwap(name string, old, new OID) error
}

// RefIndex is what the task store asks of refs beyond RefStore: a
// listing in name order, a count of loose ref files for housekeeping, and
// a compare-and-swap that checks the new value's objects once the old
// value is confirmed.
type RefIndex interface {
	// SortedRefs returns every ref under prefix (which ends in "/"),
	// sorted by name.
	SortedRefs(prefix string) ([]RefEntry, error)
	// CountLooseRefs counts the loose ref files under prefix, reading
	// none of them (0 where refs are not kept in files).
	CountLooseRefs(prefix string) int
	// CompareAndSwapVerified is CompareAndSwap that runs verify once the
	// old value is confirmed and before the ref moves; an error from
	// verify leaves the ref where it was.
	CompareAndSwapVerified(name string, old, new OID, verify func() error) error
}

// BulkSource hands out the in-process reader of a cold listing: Bulk
// scans the packs afresh; one whose every lookup falls back (BulkFallback)
// sends each to the caller's FileReader path.
type BulkSource interface {
	Bulk() *Bulk
}

// PackKeeper is the housekeeping of the object database: the counts git
// gc --auto decides on, and the repair of packs left without an index.
type PackKeeper interface {
	// LooseEstimate estimates the loose objects from sample of the 256
	// fan-out directories (all of them: an exact count).
	LooseEstimate(sample int) int
	// PackCount is the number of packs.
	PackCount() int
	// OrphanPacks lists the packs without an index last written at
	// least minAge before now.
	OrphanPacks(now time.Time, minAge time.Duration) ([]OrphanPack, error)
	// IndexPack writes an orphaned pack's index, so its objects are
	// readable again.
	IndexPack(ctx context.Context, p OrphanPack) error
}

// CheckType is the common answer to an object of another type than
// asked for, or over the caller's limit: nil, or ErrWrongType or
// ErrOversize worded for users.
func CheckType(id OID, want, got Type, size, limit int64) error {
	if want != Any && got != want {
		return fmt.Errorf("object %s is a %s, not a %s: %w", id, got, want, ErrWrongType)
	}
	if size > limit {
		return fmt.Errorf("%s %s is %d bytes, %w of %d bytes; it was not read", got, id, size, ErrOversize, limit)
	}
	return nil
}
