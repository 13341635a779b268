package gitstore

import (
	"encoding/hex"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// Hex is a git object id that encodes as its lower-case hex string in
// JSON, the way every other hash lazy prints does (a plumbing.Hash alone
// encodes as an array of integers).
type Hex plumbing.Hash

// String returns the hex form.
func (h Hex) String() string { return plumbing.Hash(h).String() }

// MarshalText implements encoding.TextMarshaler.
func (h Hex) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler; it accepts only a
// full hex object id.
func (h *Hex) UnmarshalText(b []byte) error {
	var raw plumbing.Hash
	if len(b) != hex.EncodedLen(len(raw)) {
		return fmt.Errorf("a commit id is %d hex digits, got %q", hex.EncodedLen(len(raw)), b)
	}
	if _, err := hex.Decode(raw[:], b); err != nil {
		return fmt.Errorf("a commit id is hex digits: %w", err)
	}
	*h = Hex(raw)
	return nil
}
