// Package tasktree lays tasks out as a forest: each subtask right under
// its parent. The CLI's list, the terminal UI and the web view all show
// tasks this way, and records from a remote or a hand edit can hold
// parent cycles, self-parents and repeated ids, so one implementation
// decides what such records look like everywhere.
package tasktree

// Row is an item placed in tree order, with its depth below its root.
type Row[T any] struct {
	Item  T
	Depth int
}

// Order lays items out depth-first, each item right under its parent,
// siblings in the order they have in items. An item whose parent is not
// among items, or is itself, is a root. Members of a parent cycle have
// no root; they are listed at the end, so a corrupt record can neither
// loop forever nor vanish. Of items sharing an id only the first placed
// is shown, and children hang under the last item of their parent's id.
func Order[T any](items []T, id, parent func(T) string) []Row[T] {
	// Items are numbered by position and linked to their parents through
	// one map of ids, as maps of children and of visited ids cost most of
	// ordering 10,000 tasks. slot[i] is the position that stands for
	// items[i]'s id (the last item of that id, should ids repeat).
	pos := make(map[string]int, len(items))
	for i, it := range items {
		pos[id(it)] = i
	}
	slot := make([]int, len(items))
	first, last, next := make([]int, len(items)), make([]int, len(items)), make([]int, len(items))
	for i, it := range items {
		slot[i] = pos[id(it)]
		first[i], last[i], next[i] = -1, -1, -1
	}
	var roots []int
	for i, it := range items {
		p, ok := pos[parent(it)]
		if parent(it) == "" || !ok || parent(it) == id(it) {
			roots = append(roots, i)
			continue
		}
		if last[p] < 0 {
			first[p] = i
		} else {
			next[last[p]] = i
		}
		last[p] = i
	}
	out := make([]Row[T], 0, len(items))
	seen := make([]bool, len(items))
	var walk func(i, depth int)
	walk = func(i, depth int) {
		if seen[slot[i]] { // a parent cycle must not loop forever
			return
		}
		seen[slot[i]] = true
		out = append(out, Row[T]{items[i], depth})
		for c := first[slot[i]]; c >= 0; c = next[c] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	for i := range items {
		if !seen[slot[i]] {
			walk(i, 0)
		}
	}
	return out
}
