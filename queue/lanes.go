package queue

// The lane planner of a train (lazy.gate.lanes): which entries of a
// target's train gate and land independently of which. It is pure (no
// git): the train gives it, for each entry, the paths git reports its
// change touches, and it gives back the lanes in train order. Each lane
// is then a train of its own, stacked only on its own entries.

import (
	"slices"
	"strconv"
	"strings"

	"github.com/lazyorch/lazy/gate"
	"github.com/lazyorch/lazy/internal/termsafe"
	lwords "github.com/lazyorch/lazy/internal/words"
)

// LaneEntry is what the planner knows of one entry: the paths its change
// touches, as git names them (never as its agent says), and whether git
// listed them all (Truncated: there were more than it read, so the entry
// may touch any lane).
type LaneEntry struct {
	Paths     []string
	Truncated bool
}

// LanePlan is one lane of a train: its name and its entries (indices
// into the train, in train order).
type LanePlan struct {
	Name    string
	Entries []int
}

// LanesPlan is a train split into lanes. Of gives, for each entry, the
// lanes it belongs to: more than one for an entry whose change spans
// lanes, which lands only when each of them reaches it.
type LanesPlan struct {
	Lanes []LanePlan
	Of    [][]string
}

// Spans reports whether entry i belongs to more than one lane.
func (p LanesPlan) Spans(i int) bool { return len(p.Of[i]) > 1 }

// Name is the name of entry i's lanes as lazy queue shows them: one
// lane's name, or several joined with "+".
func (p LanesPlan) Name(i int) string { return strings.Join(p.Of[i], "+") }

// PlanLanes splits a train of entries into lanes by rule. With named
// lanes, each path goes to the first lane whose globs match it (else
// gate.DefaultLane) and an entry belongs to every lane its paths go to
// (every lane there is, when its paths were truncated); lanes come in
// the order configured, the default lane last, and only lanes with
// entries are listed. By diff, entries that touch a common path (or
// through others do) form one lane, named after the top-level names its
// paths start with; an entry whose paths were truncated joins every
// lane. An entry that touches no path at all goes to the default lane.
func PlanLanes(rule gate.LaneRule, entries []LaneEntry) LanesPlan {
	if rule.ByDiff {
		return planByDiff(entries)
	}
	p := LanesPlan{Of: make([][]string, len(entries))}
	order := make([]string, 0, len(rule.Named)+1)
	for _, l := range rule.Named {
		order = append(order, l.Name)
	}
	order = append(order, gate.DefaultLane)
	members := map[string][]int{}
	for i, en := range entries {
		in := map[string]bool{}
		switch {
		case en.Truncated:
			for _, n := range order {
				in[n] = true
			}
		case len(en.Paths) == 0:
			in[gate.DefaultLane] = true
		}
		for _, path := range en.Paths {
			in[rule.LaneOf(path)] = true
		}
		for _, n := range order {
			if in[n] {
				p.Of[i] = append(p.Of[i], n)
				members[n] = append(members[n], i)
			}
		}
	}
	for _, n := range order {
		if len(members[n]) > 0 {
			p.Lanes = append(p.Lanes, LanePlan{Name: n, Entries: members[n]})
		}
	}
	return p
}

// planByDiff is PlanLanes by the actual diffs: the connected groups of
// entries that share a path.
func planByDiff(entries []LaneEntry) LanesPlan {
	parent := make([]int, len(entries))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	union := func(a, b int) {
		if ra, rb := find(a), find(b); ra != rb {
			parent[max(ra, rb)] = min(ra, rb)
		}
	}
	owner := map[string]int{}
	truncated := -1
	for i, en := range entries {
		if en.Truncated {
			if truncated >= 0 {
				union(truncated, i)
			}
			truncated = i
		}
		for _, path := range en.Paths {
			if j, ok := owner[path]; ok {
				union(j, i)
			} else {
				owner[path] = i
			}
		}
	}
	if truncated >= 0 {
		for i := range entries {
			union(truncated, i)
		}
	}
	p := LanesPlan{Of: make([][]string, len(entries))}
	at := map[int]int{} // root -> index in p.Lanes
	for i := range entries {
		r := find(i)
		k, ok := at[r]
		if !ok {
			k = len(p.Lanes)
			at[r] = k
			p.Lanes = append(p.Lanes, LanePlan{})
		}
		p.Lanes[k].Entries = append(p.Lanes[k].Entries, i)
	}
	used := map[string]int{}
	for k := range p.Lanes {
		var paths []string
		trunc := false
		for _, i := range p.Lanes[k].Entries {
			paths = append(paths, entries[i].Paths...)
			trunc = trunc || entries[i].Truncated
		}
		name := diffLaneName(paths, trunc)
		if used[name]++; used[name] > 1 {
			name += "#" + strconv.Itoa(used[name])
		}
		p.Lanes[k].Name = name
		for _, i := range p.Lanes[k].Entries {
			p.Of[i] = []string{name}
		}
	}
	return p
}

// diffLaneName names a lane by the top-level names of its paths, sorted:
// "docs", "api+cmd", "api+cmd+docs+3 more"; "all" for a lane holding an
// entry whose paths were truncated, "default" for one with no path.
func diffLaneName(paths []string, truncated bool) string {
	if truncated {
		return "all"
	}
	var tops []string
	for _, p := range paths {
		// A path is the agent's choice: its name is shown escaped.
		top, _, _ := strings.Cut(p, "/")
		if len(top) > 40 {
			top = top[:40] + "..."
		}
		tops = append(tops, termsafe.String(strings.ReplaceAll(top, "\n", " ")))
	}
	slices.Sort(tops)
	tops = slices.Compact(tops)
	switch {
	case len(tops) == 0:
		return gate.DefaultLane
	case len(tops) > 3:
		return strings.Join(tops[:3], "+") + "+" + strconv.Itoa(len(tops)-3) + " more"
	}
	return strings.Join(tops, "+")
}

// recentLanes is how many of the newest entries that left LaneSummary
// reads for the lanes with nothing in flight.
const recentLanes = 10

// LaneSummary says where each lane of target's queue stands, for lazy
// queue: "lane docs: 2 entries, gating; lane api: landed". A lane in
// flight gives its entries and the state of its head; a lane with none
// in flight (among the newest that left) how its last entry left. ""
// when no entry went through a lane.
func LaneSummary(v View) string {
	type lane struct {
		n     int
		state string
	}
	var order []string
	lanes := map[string]*lane{}
	get := func(name string) *lane {
		if lanes[name] == nil {
			lanes[name] = &lane{}
			order = append(order, name)
		}
		return lanes[name]
	}
	for _, en := range v.Entries {
		if en.Lane == "" {
			continue
		}
		l := get(en.Lane)
		if l.n == 0 || en.State == Gating || en.State == Landing {
			l.state = en.State
		}
		l.n++
	}
	left := v.Left
	if len(left) > recentLanes {
		left = left[len(left)-recentLanes:]
	}
	for i := len(left) - 1; i >= 0; i-- {
		if lf := left[i]; lf.Lane != "" {
			if l := get(lf.Lane); l.n == 0 && l.state == "" {
				l.state = lf.Outcome
			}
		}
	}
	var parts []string
	for _, name := range order {
		l := lanes[name]
		s := "lane " + termsafe.String(name) + ": "
		if l.n > 0 {
			s += lwords.Count(l.n, "entry", "entries") + ", "
		}
		parts = append(parts, s+l.state)
	}
	return strings.Join(parts, "; ")
}
