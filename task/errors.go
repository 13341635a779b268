package task

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/internal/oid"
)

// CorruptError reports a task record that cannot be read. Other tasks are
// unaffected.
type CorruptError struct {
	ID     string
	Commit oid.OID
	Err    error
	// Inspect is the command that shows the record as stored, which the
	// message ends with ("" for none): the store that read it knows.
	Inspect string
}

func (e *CorruptError) Error() string {
	msg := fmt.Sprintf("task %s is corrupt at commit %s: %v", e.ID, short(e.Commit), e.Err)
	if e.Inspect != "" {
		msg += " (inspect it with: " + e.Inspect + ")"
	}
	return msg
}

func (e *CorruptError) Unwrap() error { return e.Err }

func short(h oid.OID) string { return h.String()[:12] }

// ErrNotFound is matched by every "no such task" error.
var ErrNotFound = errors.New("no such task")

// ErrExists is a create of a task id that is taken.
var ErrExists = errors.New("a task with that id exists")

// Candidate is one task an ambiguous name could mean.
type Candidate struct {
	ID, Slug, Title string
}

// AmbiguousError lists the tasks an id prefix matches.
type AmbiguousError struct {
	Input      string
	Candidates []Candidate
}

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q is ambiguous: it matches %d tasks; use more characters or the slug:", e.Input, len(e.Candidates))
	for _, c := range e.Candidates {
		fmt.Fprintf(&b, "\n  %s  %s  %s", c.ID, c.Slug, c.Title)
	}
	return b.String()
}
