package task

import (
	"fmt"
	"time"

	"github.com/lazyorch/lazy/internal/oid"
	"github.com/lazyorch/lazy/machine"
)

// Hex is a git object id of either format in the JSON shapes lazy
// prints: its lower-case hex string.
type Hex oid.OID

// String returns the hex form.
func (h Hex) String() string { return oid.OID(h).String() }

// MarshalText implements encoding.TextMarshaler.
func (h Hex) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler; it accepts only a
// full hex object id.
func (h *Hex) UnmarshalText(b []byte) error {
	raw, ok := oid.ParseBytes(b)
	if !ok {
		return fmt.Errorf("a commit id is 40 or 64 hex digits, got %q", b)
	}
	*h = Hex(raw)
	return nil
}

// Change is one entry of a task's status changelog, read from the commit
// history of its ref.
type Change struct {
	Commit  Hex            `json:"commit"`
	At      time.Time      `json:"at"`
	Op      string         `json:"op"`
	Actor   machine.Actor  `json:"actor"`
	From    machine.Status `json:"from,omitempty"`
	To      machine.Status `json:"to"`
	Clock   uint64         `json:"clock"`
	Host    string         `json:"host"`
	Subject string         `json:"subject"`
}
