package tasktree

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

type node struct{ id, parent string }

func nodeID(n *node) string     { return n.id }
func nodeParent(n *node) string { return n.parent }

// mapOrder is Order as it was first written, with maps of children and
// of visited ids: the reference the index-based version must match.
func mapOrder(items []*node) []Row[*node] {
	byID := make(map[string]bool, len(items))
	for _, n := range items {
		byID[n.id] = true
	}
	children := map[string][]*node{}
	var roots []*node
	for _, n := range items {
		if n.parent != "" && byID[n.parent] && n.parent != n.id {
			children[n.parent] = append(children[n.parent], n)
		} else {
			roots = append(roots, n)
		}
	}
	out := make([]Row[*node], 0, len(items))
	seen := map[string]bool{}
	var walk func(n *node, depth int)
	walk = func(n *node, depth int) {
		if seen[n.id] {
			return
		}
		seen[n.id] = true
		out = append(out, Row[*node]{n, depth})
		for _, c := range children[n.id] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	for _, n := range items {
		if !seen[n.id] {
			walk(n, 0)
		}
	}
	return out
}

// TestOrderMatchesMapVersion orders random forests, with parent cycles,
// self-parents, missing parents and repeated ids, both ways.
func TestOrderMatchesMapVersion(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 2000; round++ {
		n := r.IntN(40)
		items := make([]*node, n)
		for i := range items {
			items[i] = &node{id: fmt.Sprint(r.IntN(n + 3))}
			if r.IntN(3) > 0 {
				items[i].parent = fmt.Sprint(r.IntN(n + 3))
			}
		}
		got, want := Order(items, nodeID, nodeParent), mapOrder(items)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d rows, want %d", round, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("round %d: row %d is %+v, want %+v", round, i, got[i], want[i])
			}
		}
	}
}

func TestOrderPlacesSubtasksAndKeepsCycles(t *testing.T) {
	a, b, c := &node{"a", ""}, &node{"b", "a"}, &node{"c", "b"}
	x, y := &node{"x", "y"}, &node{"y", "x"} // a cycle: no root
	self := &node{"s", "s"}
	got := Order([]*node{c, x, b, self, a, y}, nodeID, nodeParent)
	want := []Row[*node]{{self, 0}, {a, 0}, {b, 1}, {c, 2}, {x, 0}, {y, 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
