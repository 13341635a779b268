package gitrepo

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/lazyorch/lazy/internal/words"
)

// The largest tree and commit the in-process reader reads: a task
// snapshot's entries, or one entry per turn, and a commit's human line
// and lazy's trailers.
const (
	MaxTree   = 16 << 20
	MaxCommit = 1 << 20
)

// AllHex reports whether s is all lower-case hex digits.
func AllHex[T ~string | ~[]byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') }

// Oversize is the error for object h, read as what, of size bytes over
// limit: it wraps ErrOversize.
func Oversize(what string, id OID, size, limit int64) error {
	short := id.String()
	if len(short) > 12 {
		short = short[:12]
	}
	return fmt.Errorf("%s (object %s) is %s, %w of %s for it; it was not read", what, short, words.Bytes(size), ErrOversize, words.Bytes(limit))
}

// validHex reports whether s is a full hex object id of either format.
func validHex(s string) bool { return (len(s) == 40 || len(s) == 64) && AllHex(s) }

// IsMissing reports whether err says an object is missing, in the words
// of either reader.
func IsMissing(err error) bool {
	return errors.Is(err, ErrMissing) || errors.Is(err, plumbing.ErrObjectNotFound)
}
