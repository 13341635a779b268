// Package gitrepo is lazy's access to a git repository's objects and refs:
// one small interface (Repo) and its object id (OID, the value type of
// internal/oid), which holds a SHA-1 or a SHA-256 name. Implementations:
// the git-process one (Git, git.go)
// for any repository git reads, and the in-process one (Local, local.go)
// for repositories with the files ref backend, the fast path of list and
// show; in a SHA-256 repository Local writes in process and reads through
// git (sha256.go). Its readers, for SHA-1: pack indexes and packs
// (packidx.go, packread.go, deltas and the delta base cache), loose
// objects (loose.go, objects.go),
// loose refs and packed-refs under git's lock-file protocol (refs.go,
// packedrefs.go), mapped files (mmap.go), the commit and tree shapes
// (gitobj.go) and the bulk reader behind a cold listing (bulkread.go).
// Both pass the one conformance suite in gitrepo/repotest, Local in
// both formats.
package gitrepo

import "github.com/lazyorch/lazy/internal/oid"

// Object formats, as git rev-parse --show-object-format names them.
const (
	SHA1   = oid.SHA1
	SHA256 = oid.SHA256
)

// OID is a git object id: 20 bytes (SHA-1) or 32 (SHA-256). The zero
// value is no object. It is internal/oid's type, so the task model names
// a record's version without importing this package.
type OID = oid.OID

// ParseOID reads a full hex object id of either format (oid.Parse).
func ParseOID(s string) (OID, error) { return oid.Parse(s) }

// ParseOIDBytes reads a full hex object id of either format, without
// allocating (oid.ParseBytes).
func ParseOIDBytes(b []byte) (OID, bool) { return oid.ParseBytes(b) }

// FromBytes makes an id from its raw 20 or 32 bytes (oid.FromBytes).
func FromBytes(b []byte) (OID, bool) { return oid.FromBytes(b) }

// zeroOID is git's all-zero id of a format, which update-ref reads as
// "must not exist".
func zeroOID(format string) string {
	if format == SHA256 {
		return "0000000000000000000000000000000000000000000000000000000000000000"
	}
	return "0000000000000000000000000000000000000000"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
