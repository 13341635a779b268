package task

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

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

// EntryOf is the listing entry of task t, read from version commit.
func EntryOf(commit oid.OID, t *Task) Entry {
	return Entry{ID: t.ID, Commit: commit, Status: t.Status, Parent: t.Parent, Created: t.CreatedAt.Unix(), Updated: t.UpdatedAt.UTC().Format(TimeLayout), JSON: SummaryJSON(t)}
}

// SummaryJSON is the compact JSON of t's Summary, as an Entry holds it.
func SummaryJSON(t *Task) []byte {
	b, err := json.Marshal(NewSummary(t))
	if err != nil {
		// Summary holds only strings, numbers, and maps and slices of them.
		panic("task: encode summary: " + err.Error())
	}
	return b
}

// CompareEntries orders entries as List returns them: by creation time,
// then id.
func CompareEntries(a, b *Entry) int {
	if c := cmp.Compare(a.Created, b.Created); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}
