package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
)

// Substater is the live substate derivation (marks.Marks in the CLI).
type Substater interface {
	Substate(*task.Summary) string
}

// TaskTable renders list, blocked and active: ID, STATUS (coloured, with
// substate and PR), SLUG (indented under its parent), UPDATED (relative),
// OVERLAPS (only when a listed task has one: the other active tasks and
// the target's new commits that changed its files too) and TITLE (cut to
// the width left).
func TaskTable(w io.Writer, st Style, rows []TreeRow, marks Substater, ov map[string]review.TaskOverlaps) error {
	overlapping := false
	for _, row := range rows {
		if !ov[row.Item.ID].Empty() {
			overlapping = true
			break
		}
	}
	cells := make([][]Cell, 0, len(rows))
	for _, row := range rows {
		status := string(row.Item.Status)
		if sub := marks.Substate(row.Item); sub != "" {
			status += " (" + sub + ")"
		}
		if pr := PRBrief(row.Item); pr != "" {
			status += " [" + pr + "]"
		}
		updated, _ := time.Parse(task.TimeLayout, row.Item.UpdatedAt)
		r := []Cell{
			{Text: ShortID(row.Item.ID), SGR: "2"},
			{Text: status, SGR: StatusSGR[row.Item.Status]},
			{Text: strings.Repeat("  ", row.Depth) + row.Item.Slug},
			{Text: RelTime(updated, st.Now)},
		}
		if overlapping {
			r = append(r, Cell{Text: ov[row.Item.ID].Short(), SGR: "33"})
		}
		cells = append(cells, append(r, Cell{Text: row.Item.Title}))
	}
	header := []string{"ID", "STATUS", "SLUG", "UPDATED", "TITLE"}
	if overlapping {
		header = []string{"ID", "STATUS", "SLUG", "UPDATED", "OVERLAPS", "TITLE"}
	}
	return st.Table(w, header, cells, "ID", "UPDATED")
}

// PRBrief is a task's pull request in a table cell ("PR #3 open,
// checks failing"), "" without one.
func PRBrief(s *task.Summary) string {
	p := s.PR
	if p == nil || p.Number <= 0 {
		return ""
	}
	out := fmt.Sprintf("PR #%d %s", p.Number, p.State)
	if p.Checks != "" {
		out += ", checks " + p.Checks
	}
	if p.Review != "" {
		out += ", " + strings.ReplaceAll(p.Review, "_", " ")
	}
	if p.Revising {
		out += ", revising"
	}
	return out
}

// ShortID is the display form of an id.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
