package task

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// NewID returns a random, immutable task id: 16 lowercase hex digits.
func NewID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate task id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// ValidID reports whether s has the shape of a full task id.
func ValidID(s string) bool { return len(s) == 16 && allHex(s) }

// allHex reports whether s is lower-case hex, as git and lazy write ids.
func allHex[T ~string | ~[]byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') }

// ValidHex reports whether s is a full git object id (SHA-1 or SHA-256,
// lower-case hex), so it can go into git argv as a revision, not an option.
func ValidHex(s string) bool {
	return (len(s) == 40 || len(s) == 64) && allHex(s)
}
