// Package cost answers what agent work cost: the subtask roll-up (a
// task's spending with its subtasks'), which the budgets and the accept
// commit's trailers use, and lazy cost's breakdowns by task, agent,
// model, day and outcome. Reading the records (Fetch) is apart from the
// pure aggregation (Aggregate), which every surface renders its own way.
package cost

import (
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/task"
)

// Tree is the task forest with each task's own usage, from the listing
// (summaries carry usage and parent). A usage flagged as out of bounds
// (see task.Usage) is no spending here: it is never summed.
type Tree struct {
	nodes    map[string]*task.Spending
	parent   map[string]string
	children map[string][]string
	own      map[string]task.Usage
}

// NewTree builds the forest of the listed tasks; an entry that cannot be
// read is left out (a corrupt record never hides the others).
func NewTree(entries []task.Entry) *Tree {
	sums := make([]*task.Spending, 0, len(entries))
	for i := range entries {
		if s, err := entries[i].Spending(); err == nil {
			sums = append(sums, &s)
		}
	}
	return treeOf(sums)
}

func treeOf(sums []*task.Spending) *Tree {
	t := &Tree{nodes: make(map[string]*task.Spending, len(sums)), parent: map[string]string{}, children: map[string][]string{}, own: map[string]task.Usage{}}
	for _, s := range sums {
		if _, dup := t.nodes[s.ID]; dup {
			continue
		}
		t.nodes[s.ID] = s
		if s.Usage.Valid() {
			t.own[s.ID] = *s.Usage
		}
		// An attempt counts under its attempt group (whose parent is the
		// attempt's parent too): a group's spending is its attempts', and
		// a budget on the group covers them together.
		if up := s.TreeParent(); up != "" && up != s.ID {
			t.parent[s.ID] = up
			t.children[up] = append(t.children[up], s.ID)
		}
	}
	return t
}

// Spending is the listed task id.
func (t *Tree) Spending(id string) (*task.Spending, bool) {
	s, ok := t.nodes[id]
	return s, ok
}

// Parent is the listed parent of id ("" for a top-level task); an
// attempt's is its attempt group.
func (t *Tree) Parent(id string) string { return t.parent[id] }

// SetOwn replaces what the listing says id itself spent, with a record
// the caller holds that is fresher than the listing (a flagged usage is
// no spending).
func (t *Tree) SetOwn(id string, u *task.Usage) {
	if !u.Valid() {
		delete(t.own, id)
		return
	}
	t.own[id] = *u
}

// Own is what id's own turns spent.
func (t *Tree) Own(id string) task.Usage { return t.own[id] }

// Under is id and every task under it, each once, id first (a cycle a
// hostile record could write is walked once).
func (t *Tree) Under(id string) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(string)
	walk = func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		out = append(out, id)
		for _, c := range t.children[id] {
			walk(c)
		}
	}
	walk(id)
	return out
}

// HasSubtasks reports whether any listed task names id as its parent.
func (t *Tree) HasSubtasks(id string) bool { return len(t.children[id]) > 0 }

// Subtree sums what id and every task under it spent.
func (t *Tree) Subtree(id string) task.Usage {
	var sum task.Usage
	for _, n := range t.Under(id) {
		sum.Add(t.own[n])
	}
	return sum
}

// Trailer keys of the accept commit: what the task cost, its subtasks'
// turns included.
const (
	TrailerCost   = "Lazy-Cost"
	TrailerTokens = "Lazy-Tokens"
)

// Trailers are the accept commit's cost trailers for u, each line ending
// in a newline: "Lazy-Cost: $4.0213" when a cost was recorded, and
// "Lazy-Tokens: 1000012 in, 0 cached, 1007 out" when tokens were (a
// turn no price reached has tokens and no cost). Nothing recorded, or a
// flagged usage, is no trailer. The
// figures are plain decimals, so a script reads them with
// git log --format='%(trailers:key=Lazy-Cost,valueonly)'.
func Trailers(u task.Usage) string {
	var b strings.Builder
	if !u.Valid() {
		return ""
	}
	if u.CostUSD > 0 {
		fmt.Fprintf(&b, "%s: $%.4f\n", TrailerCost, u.CostUSD)
	}
	if u.InputTokens > 0 || u.CachedInputTokens > 0 || u.OutputTokens > 0 {
		fmt.Fprintf(&b, "%s: %d in, %d cached, %d out\n", TrailerTokens, u.InputTokens, u.CachedInputTokens, u.OutputTokens)
	}
	return b.String()
}

// Flagged are the flags of the recorded usages under id (id included)
// that the sums leave out.
func (t *Tree) Flagged(id string) []task.Flag {
	var out []task.Flag
	for _, n := range t.Under(id) {
		if s, ok := t.nodes[n]; ok && s.Usage != nil && s.Usage.Flagged != "" {
			out = append(out, task.Flag{TaskID: s.ID, Task: s.Slug, What: "usage", Reason: s.Usage.Flagged})
		}
	}
	return out
}
