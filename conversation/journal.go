package conversation

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// JournalInput is one journal entry: why a turn did what it did.
type JournalInput struct {
	Rationale string
	Decisions []string
	Deferrals []string
}

// Journal appends an entry to a task's journal, stamped with the actor
// and the turn it belongs to. Unlike a progress line it is durable
// history: it changes no status and is kept in the task's record.
func (cv *Service) Journal(ctx context.Context, name string, in JournalInput) (*task.Snapshot, task.Comment, error) {
	e := cv.Env
	rationale, err := session.RequiredProse("the rationale", in.Rationale, "a journal entry needs a rationale: why this turn did what it did")
	if err != nil {
		return nil, task.Comment{}, err
	}
	decisions, deferrals := cleanItems(in.Decisions), cleanItems(in.Deferrals)
	for _, s := range append(append([]string{rationale}, decisions...), deferrals...) {
		if err := session.CheckText("the journal entry", s); err != nil {
			return nil, task.Comment{}, err
		}
	}
	if len(decisions)+len(deferrals) > 200 {
		return nil, task.Comment{}, errors.New("a journal entry holds at most 200 decisions and deferrals; summarize")
	}
	var added task.Comment
	sn, err := e.Update(ctx, name, func(s *task.Snapshot) (*task.Op, error) {
		turn := 0
		if s.Session != nil {
			turn = s.Session.Turn
		}
		added = s.AddComment(task.Comment{Actor: e.Actor, At: time.Now().UTC().Truncate(time.Second), Text: rationale,
			Journal: &task.JournalEntry{Turn: turn, Decisions: decisions, Deferrals: deferrals}})
		return &task.Op{Name: "journal", Actor: e.Actor}, nil
	})
	return sn, added, err
}

// cleanItems sanitizes a list, dropping empty items; never nil.
func cleanItems(in []string) []string {
	out := []string{}
	for _, s := range in {
		if s = strings.TrimSpace(sanitize.Prose(s)); s != "" {
			out = append(out, s)
		}
	}
	return out
}
