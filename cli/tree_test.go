package cli

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
)

// mapTreeOrder is treeOrder as it was written with maps of children and
// of visited ids: the reference the index-based version must match.
func mapTreeOrder(tasks []*gitstore.Summary, less func(a, b *gitstore.Summary) bool) []treeRow {
	if less != nil {
		tasks = append([]*gitstore.Summary(nil), tasks...)
		sort.SliceStable(tasks, func(i, j int) bool { return less(tasks[i], tasks[j]) })
	}
	byID := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		byID[t.ID] = true
	}
	children := map[string][]*gitstore.Summary{}
	var roots []*gitstore.Summary
	for _, t := range tasks {
		if t.Parent != "" && byID[t.Parent] && t.Parent != t.ID {
			children[t.Parent] = append(children[t.Parent], t)
		} else {
			roots = append(roots, t)
		}
	}
	out := make([]treeRow, 0, len(tasks))
	seen := map[string]bool{}
	var walk func(t *gitstore.Summary, depth int)
	walk = func(t *gitstore.Summary, depth int) {
		if seen[t.ID] {
			return
		}
		seen[t.ID] = true
		out = append(out, treeRow{t, depth})
		for _, c := range children[t.ID] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	for _, t := range tasks {
		if !seen[t.ID] {
			walk(t, 0)
		}
	}
	return out
}

// TestTreeOrderMatchesMapVersion orders random forests, with parent
// cycles, self-parents, missing parents and repeated ids, both ways.
func TestTreeOrderMatchesMapVersion(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	statuses := machine.Statuses()
	for round := 0; round < 300; round++ {
		n := r.IntN(40)
		tasks := make([]*gitstore.Summary, n)
		for i := range tasks {
			tasks[i] = &gitstore.Summary{
				ID:        fmt.Sprint(r.IntN(n + 3)),
				Status:    statuses[r.IntN(len(statuses))],
				UpdatedAt: fmt.Sprint(r.IntN(5)),
				Title:     fmt.Sprint(r.IntN(5)),
			}
			if r.IntN(3) > 0 {
				tasks[i].Parent = fmt.Sprint(r.IntN(n + 3))
			}
		}
		for _, key := range []string{"attention", "updated", "created", "title"} {
			got, want := treeOrder(tasks, taskLess(key)), mapTreeOrder(tasks, taskLess(key))
			if len(got) != len(want) {
				t.Fatalf("round %d %s: %d rows, want %d", round, key, len(got), len(want))
			}
			for i := range got {
				if got[i].t != want[i].t || got[i].depth != want[i].depth {
					t.Fatalf("round %d %s: row %d is %+v, want %+v", round, key, i, got[i], want[i])
				}
			}
		}
	}
}
