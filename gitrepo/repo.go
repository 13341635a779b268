package gitrepo

import (
	"errors"
	"fmt"
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

// Repo is object and ref access to one repository.
type Repo interface {
	// Format is the repository's object format, SHA1 or SHA256.
	Format() string
	// Read returns the object id, which must be of type typ (Any for
	// any) and at most limit bytes; a larger one is ErrOversize and its
	// content is never read.
	Read(id OID, typ Type, limit int64) (*Object, error)
	// Has reports whether the repository holds the object.
	Has(id OID) (bool, error)
	// Write stores an object and returns its id.
	Write(typ Type, content []byte) (OID, error)
	// ReadRef returns the id a ref names, and whether it exists.
	ReadRef(name string) (OID, bool, error)
	// ListRefs returns every ref whose name starts with prefix.
	ListRefs(prefix string) (map[string]OID, error)
	FileReader
	// CompareAndSwap points name at new (not zero) if it now names old
	// (the zero OID: does not exist); otherwise ErrStale.
	CompareAndSwap(name string, old, new OID) error
	// Close releases what the implementation holds (processes, maps).
	Close() error
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
