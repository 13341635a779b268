package cli

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/review"
)

// TestListJSONGainsOverlapFields checks the splice into a cached summary.
func TestListJSONGainsOverlapFields(t *testing.T) {
	o := review.TaskOverlaps{With: map[string][]string{"b": {"x\ny"}}, Landed: []string{"z"}, Truncated: true, Into: "main"}
	for _, obj := range []string{`{"id":"a","slug":"a"}`, `{}`} {
		out := withOverlaps([]byte(obj), o)
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v: %s", obj, err, out)
		}
		if !reflect.DeepEqual(got["overlaps"], map[string]any{"b": []any{"x\ny"}}) || !reflect.DeepEqual(got["landed_overlap"], []any{"z"}) || got["overlaps_truncated"] != true || got["Into"] != nil {
			t.Fatalf("%s: %s", obj, out)
		}
	}
	if out := withOverlaps([]byte(`{"id":"a"}`), review.TaskOverlaps{}); string(out) != `{"id":"a"}` {
		t.Fatalf("no overlaps changed the object: %s", out)
	}
}

// TestWatchScreenMarksOverlaps checks the plain redraw's column (the TUI
// line's painting is tui's TestPaintKeepsTheCutLine).
func TestWatchScreenMarksOverlaps(t *testing.T) {
	var b bytes.Buffer
	drawScreen(&b, []statusRow{{Slug: "a", Status: machine.Blocked, Title: "A", overlaps: "b (1 file)"}, {Slug: "b", Status: machine.Working, Title: "B"}}, nil, nil)
	if !strings.Contains(b.String(), "OVERLAPS") || !strings.Contains(b.String(), "⚠ b (1 file)") {
		t.Fatalf("the screen:\n%s", b.String())
	}
	b.Reset()
	drawScreen(&b, []statusRow{{Slug: "b", Status: machine.Working, Title: "B"}}, nil, nil)
	if strings.Contains(b.String(), "OVERLAPS") {
		t.Fatalf("a column for no overlaps:\n%s", b.String())
	}
}
