package queue

import (
	"reflect"
	"testing"

	"github.com/lazyorch/lazy/gate"
)

var twoLanes = gate.LaneRule{Named: []gate.Lane{{Name: "docs", Globs: []string{"docs/", "*.md"}}, {Name: "api", Globs: []string{"api/"}}}}

func TestPlanLanesByGlobs(t *testing.T) {
	p := PlanLanes(twoLanes, []LaneEntry{
		{Paths: []string{"docs/a.md"}},             // 0: docs
		{Paths: []string{"api/x.go", "api/y.go"}},  // 1: api
		{Paths: []string{"go.mod"}},                // 2: default
		{Paths: []string{"README.md", "api/z.go"}}, // 3: spans docs and api
		{Paths: []string{"docs/b.md"}},             // 4: docs, behind 3
		{Paths: []string{"x"}, Truncated: true},    // 5: every lane
		{},                                         // 6: no path: default
	})
	want := []LanePlan{{Name: "docs", Entries: []int{0, 3, 4, 5}}, {Name: "api", Entries: []int{1, 3, 5}}, {Name: gate.DefaultLane, Entries: []int{2, 5, 6}}}
	if !reflect.DeepEqual(p.Lanes, want) {
		t.Fatalf("lanes %+v, want %+v", p.Lanes, want)
	}
	if p.Name(3) != "docs+api" || !p.Spans(3) || p.Spans(0) || p.Name(5) != "docs+api+default" || p.Name(2) != gate.DefaultLane {
		t.Fatalf("of %+v", p.Of)
	}
}

// TestPlanLanesFirstMatchWins: a path two lanes' globs match is the
// first configured lane's, so an entry is never split by overlapping
// globs.
func TestPlanLanesFirstMatchWins(t *testing.T) {
	r := gate.LaneRule{Named: []gate.Lane{{Name: "md", Globs: []string{"**/*.md"}}, {Name: "api", Globs: []string{"api/"}}}}
	p := PlanLanes(r, []LaneEntry{{Paths: []string{"api/README.md"}}, {Paths: []string{"api/a.go"}}})
	if p.Name(0) != "md" || p.Name(1) != "api" {
		t.Fatalf("of %+v", p.Of)
	}
}

func TestPlanLanesByDiff(t *testing.T) {
	p := PlanLanes(gate.LaneRule{ByDiff: true}, []LaneEntry{
		{Paths: []string{"docs/a.md"}},             // 0
		{Paths: []string{"api/x.go"}},              // 1
		{Paths: []string{"docs/b.md"}},             // 2: disjoint from 0: its own lane
		{Paths: []string{"api/x.go", "cmd/m.go"}},  // 3: shares api/x.go with 1
		{Paths: []string{"cmd/m.go", "docs/b.md"}}, // 4: joins 3's lane and 2's
		{Paths: []string{"web/i.html"}},            // 5
	})
	want := []LanePlan{{Name: "docs", Entries: []int{0}}, {Name: "api+cmd+docs", Entries: []int{1, 2, 3, 4}}, {Name: "web", Entries: []int{5}}}
	if !reflect.DeepEqual(p.Lanes, want) {
		t.Fatalf("lanes %+v, want %+v", p.Lanes, want)
	}
	for i := range 6 {
		if p.Spans(i) {
			t.Fatalf("entry %d spans lanes by diff", i)
		}
	}
	// Two disjoint lanes under the same top-level name are told apart.
	p = PlanLanes(gate.LaneRule{ByDiff: true}, []LaneEntry{{Paths: []string{"docs/a"}}, {Paths: []string{"docs/b"}}})
	if p.Name(0) != "docs" || p.Name(1) != "docs#2" {
		t.Fatalf("of %+v", p.Of)
	}
	// A truncated entry joins everything: nothing bypasses it.
	p = PlanLanes(gate.LaneRule{ByDiff: true}, []LaneEntry{{Paths: []string{"a"}}, {Truncated: true}, {Paths: []string{"b"}}})
	if len(p.Lanes) != 1 || p.Lanes[0].Name != "all" {
		t.Fatalf("lanes %+v", p.Lanes)
	}
}

// TestPlanLanesEscapesNames: a lane named after an agent's path shows no
// terminal control.
func TestPlanLanesEscapesNames(t *testing.T) {
	p := PlanLanes(gate.LaneRule{ByDiff: true}, []LaneEntry{{Paths: []string{"\x1b[2Jevil/x"}}})
	if n := p.Name(0); n == "\x1b[2Jevil" || len(n) == 0 || n[0] == 0x1b {
		t.Fatalf("name %q", n)
	}
}

func TestLaneSummary(t *testing.T) {
	v := View{Target: "main",
		Entries: []Entry{{Lane: "docs", State: Waiting}, {Lane: "docs", State: Gating}, {Lane: "docs+api", State: Waiting}},
		Left:    []Left{{Lane: "api", Outcome: LeftFailed}, {Lane: "api", Outcome: LeftLanded}, {Outcome: LeftLanded}}}
	if got, want := LaneSummary(v), "lane docs: 2 entries, gating; lane docs+api: 1 entry, waiting; lane api: landed"; got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
	if got := LaneSummary(View{Entries: []Entry{{State: Waiting}}}); got != "" {
		t.Fatalf("no lanes: %q", got)
	}
}
