package gate

import (
	"reflect"
	"strings"
	"testing"
)

func TestLanesParse(t *testing.T) {
	s, err := Load(fakeConfig{keyLanes: {"docs=docs/, *.md", "api=api/**,cmd/api"}})
	if err != nil {
		t.Fatal(err)
	}
	want := LaneRule{Named: []Lane{{Name: "docs", Globs: []string{"docs/", "*.md"}}, {Name: "api", Globs: []string{"api/**", "cmd/api"}}}}
	if !reflect.DeepEqual(s.Lanes, want) {
		t.Fatalf("lanes %+v, want %+v", s.Lanes, want)
	}
	for path, lane := range map[string]string{"docs/a.md": "docs", "README.md": "docs", "api/v1/x.go": "api", "cmd/api/main.go": "api", "cmd/lazy/main.go": DefaultLane, "go.mod": DefaultLane} {
		if got := s.Lanes.LaneOf(path); got != lane {
			t.Errorf("LaneOf(%q) = %q, want %q", path, got, lane)
		}
	}
	if s, err := Load(fakeConfig{keyLanes: {"docs=docs", "", "DIFF"}}); err != nil || !s.Lanes.ByDiff || len(s.Lanes.Named) != 0 {
		t.Fatalf("an empty value clears, then diff: %+v, %v", s.Lanes, err)
	}
	if s, _ := Load(fakeConfig{}); s.Lanes.Enabled() {
		t.Fatal("no lanes by default")
	}
}

// TestLanesRefused: each bad value is one sentence naming the key and
// the syntax that works.
func TestLanesRefused(t *testing.T) {
	for _, vals := range [][]string{
		{"docs"},               // no =
		{"=docs/"},             // no name
		{"default=docs/"},      // reserved
		{"docs="},              // no glob
		{"docs=../x"},          // leaves the repository
		{"docs=/etc"},          // absolute
		{"docs=[x"},            // bad glob
		{"has space=x"},        // bad name
		{"docs=a", "docs=b"},   // twice
		{"docs=docs/", "diff"}, // mixed
	} {
		_, err := Load(fakeConfig{keyLanes: vals})
		if err == nil {
			t.Errorf("%q: accepted", vals)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, keyLanes) || strings.Count(msg, ". ") > 0 {
			t.Errorf("%q: %s", vals, msg)
		}
		if len(vals) == 1 && CheckLanes(vals[0]) == nil {
			t.Errorf("CheckLanes(%q) accepted", vals[0])
		}
	}
}
