package gitstore

import (
	"fmt"

	"github.com/lazyorch/lazy/gitrepo"
)

// Hex is a git object id of either format in the JSON shapes lazy
// prints: its lower-case hex string.
type Hex gitrepo.OID

// String returns the hex form.
func (h Hex) String() string { return gitrepo.OID(h).String() }

// MarshalText implements encoding.TextMarshaler.
func (h Hex) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler; it accepts only a
// full hex object id.
func (h *Hex) UnmarshalText(b []byte) error {
	raw, ok := gitrepo.ParseOIDBytes(b)
	if !ok {
		return fmt.Errorf("a commit id is 40 or 64 hex digits, got %q", b)
	}
	*h = Hex(raw)
	return nil
}
