// Package oid is a git object id as a value: 20 bytes (SHA-1) or 32
// (SHA-256). It holds no git access, so the task model can name the
// version of a record (a snapshot's commit, a listing entry's) without
// depending on the repository packages; gitrepo reads and writes objects
// by these ids (gitrepo.OID is this type).
package oid

import (
	"encoding/hex"
	"fmt"
)

// Object formats, as git rev-parse --show-object-format names them.
const (
	SHA1   = "sha1"
	SHA256 = "sha256"
)

// OID is a git object id: 20 bytes (SHA-1) or 32 (SHA-256). The zero
// value is no object.
type OID struct {
	b [32]byte
	n int // 20 or 32; 0 unset
}

// Parse reads a full hex object id of either format.
func Parse(s string) (OID, error) {
	var id OID
	switch len(s) {
	case 40, 64:
	default:
		return id, fmt.Errorf("%q is not a git object id (40 or 64 hex digits)", truncate(s, 80))
	}
	if _, err := hex.Decode(id.b[:len(s)/2], []byte(s)); err != nil {
		return OID{}, fmt.Errorf("%q is not a git object id: %w", truncate(s, 80), err)
	}
	id.n = len(s) / 2
	return id, nil
}

// ParseBytes reads a full hex object id of either format, without
// allocating: the list cache holds one per task.
func ParseBytes(b []byte) (OID, bool) {
	var id OID
	if len(b) != 40 && len(b) != 64 {
		return id, false
	}
	if _, err := hex.Decode(id.b[:len(b)/2], b); err != nil {
		return OID{}, false
	}
	id.n = len(b) / 2
	return id, true
}

// AppendHex appends the id in lower-case hex to dst.
func (id OID) AppendHex(dst []byte) []byte { return hex.AppendEncode(dst, id.b[:id.n]) }

// FromBytes makes an id from its raw 20 or 32 bytes.
func FromBytes(b []byte) (OID, bool) {
	var id OID
	if len(b) != 20 && len(b) != 32 {
		return id, false
	}
	id.n = copy(id.b[:], b)
	return id, true
}

// Bytes is the raw id.
func (id OID) Bytes() []byte { return id.b[:id.n:id.n] }

// IsZero reports whether id names nothing: unset, or git's all-zero id.
func (id OID) IsZero() bool { return id.b == [32]byte{} }

// Format is SHA1 or SHA256 ("" for the unset id).
func (id OID) Format() string {
	switch id.n {
	case 20:
		return SHA1
	case 32:
		return SHA256
	}
	return ""
}

// String is the id in lower-case hex ("" for the unset id).
func (id OID) String() string { return hex.EncodeToString(id.Bytes()) }

// MarshalText writes the hex id.
func (id OID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads a hex id.
func (id *OID) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
