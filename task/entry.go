package task

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/lazyorch/lazy/internal/oid"
	"github.com/lazyorch/lazy/machine"
)

// Entry is one task as seen by List: the fields listings filter and sort
// on, its summary JSON, or why it could not be read. A corrupt record
// never hides the others.
type Entry struct {
	ID      string
	Commit  oid.OID
	Status  machine.Status
	Parent  string
	Created int64 // unix seconds
	// Updated is the summary's updated_at, as printed: listings order by
	// it without decoding JSON.
	Updated string
	// JSON is the task's Summary, compact.
	JSON []byte
	Err  error
}

// Summary decodes the entry's summary.
func (e *Entry) Summary() (*Summary, error) {
	if e.Err != nil {
		return nil, e.Err
	}
	var s Summary
	if err := json.Unmarshal(e.JSON, &s); err != nil {
		return nil, fmt.Errorf("task %s: decode summary: %w", e.ID, err)
	}
	return &s, nil
}

// TreeParent is the task a listing shows the entry under: an attempt's
// group (see Task.AttemptOf), else its parent. Only a summary that
// names a group is decoded, so a listing of ordinary tasks pays nothing.
func (e *Entry) TreeParent() string {
	if e.Err != nil || !bytes.Contains(e.JSON, []byte(`"attempt_of":"`)) {
		return e.Parent
	}
	var s struct {
		AttemptOf string `json:"attempt_of"`
	}
	if json.Unmarshal(e.JSON, &s) != nil || s.AttemptOf == "" {
		return e.Parent
	}
	return s.AttemptOf
}

// TreeParent is the task a listing shows the summary under: an
// attempt's group, else its parent.
func (s *Summary) TreeParent() string {
	if s.AttemptOf != "" {
		return s.AttemptOf
	}
	return s.Parent
}
