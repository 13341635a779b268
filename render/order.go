package render

import (
	"slices"
	"sort"
	"strings"

	"github.com/lazyorch/lazy/internal/tasktree"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// attentionRank orders statuses by how much they need a human now.
func attentionRank(s machine.Status) int {
	switch s {
	case machine.Conflict, machine.Blocked:
		return 0
	case machine.Interrupted:
		return 1
	case machine.Submitted, machine.Pairing, machine.Merging, machine.Working:
		return 2
	case machine.Backlog:
		return 3
	}
	return 4
}

// orderKey is what every --sort but title compares: fields each list
// entry carries, so ordering entries decodes no summary.
type orderKey struct {
	status      machine.Status
	updated, id string
}

// keyCompare is the sibling order of a --sort key other than title, as a
// comparison; nil for created (creation order, as listed).
func keyCompare(key string) func(a, b *orderKey) int {
	newer := func(a, b *orderKey) int {
		if c := strings.Compare(b.updated, a.updated); c != 0 {
			return c // newest first; the layout sorts as text
		}
		return strings.Compare(a.id, b.id)
	}
	switch key {
	case "updated":
		return newer
	case "created":
		return nil
	}
	return func(a, b *orderKey) int {
		if c := attentionRank(a.status) - attentionRank(b.status); c != 0 {
			return c
		}
		return newer(a, b)
	}
}

// TaskLess is the sibling order of a --sort key.
func TaskLess(key string) func(a, b *task.Summary) bool {
	if key == "title" {
		return func(a, b *task.Summary) bool {
			ta, tb := strings.ToLower(a.Title), strings.ToLower(b.Title)
			if ta != tb {
				return ta < tb
			}
			return a.ID < b.ID
		}
	}
	cmp := keyCompare(key)
	if cmp == nil {
		return nil
	}
	return func(a, b *task.Summary) bool {
		return cmp(&orderKey{a.Status, a.UpdatedAt, a.ID}, &orderKey{b.Status, b.UpdatedAt, b.ID}) < 0
	}
}

// OrderEntries puts entries in tree order under a --sort key other than
// title, as TreeOrder does summaries, and keeps the first limit (0: all).
func OrderEntries(rows []task.Entry, key string, limit int) []task.Entry {
	keys := make([]orderKey, len(rows))
	idx := make([]int, len(rows))
	for i := range rows {
		keys[i] = orderKey{rows[i].Status, rows[i].Updated, rows[i].ID}
		idx[i] = i
	}
	if cmp := keyCompare(key); cmp != nil {
		slices.SortStableFunc(idx, func(a, b int) int { return cmp(&keys[a], &keys[b]) })
	}
	ordered := tasktree.Order(idx, func(i int) string { return rows[i].ID }, func(i int) string { return rows[i].TreeParent() })
	if limit > 0 && len(ordered) > limit {
		ordered = ordered[:limit]
	}
	out := make([]task.Entry, len(ordered))
	for k, r := range ordered {
		out[k] = rows[r.Item]
	}
	return out
}

// TreeRow is a task placed in tree order.
type TreeRow = tasktree.Row[*task.Summary]

// TreeOrder puts each subtask right under its parent, siblings in less
// order (nil: creation order). Tasks whose parent is not in the list are
// roots.
func TreeOrder(tasks []*task.Summary, less func(a, b *task.Summary) bool) []TreeRow {
	if less != nil {
		tasks = append([]*task.Summary(nil), tasks...)
		sort.SliceStable(tasks, func(i, j int) bool { return less(tasks[i], tasks[j]) })
	}
	return tasktree.Order(tasks, func(t *task.Summary) string { return t.ID }, func(t *task.Summary) string { return t.TreeParent() })
}
