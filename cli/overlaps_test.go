package cli

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
)

// TestTaskTableShowsOverlapsOnlyWhenThereAreSome checks the OVERLAPS
// column: absent when no listed task overlaps, present and aligned when
// one does, and escaped.
func TestTaskTableShowsOverlapsOnlyWhenThereAreSome(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	tasks := []*task.Summary{
		{ID: "aaaaaaaa1111", Slug: "add-login", Title: "Add login", Status: machine.Blocked, UpdatedAt: now.Format(task.TimeLayout)},
		{ID: "bbbbbbbb2222", Slug: "fix-logout", Title: "Fix logout", Status: machine.Working, UpdatedAt: now.Format(task.TimeLayout)},
		{ID: "cccccccc3333", Slug: "docs", Title: "Docs", Status: machine.Backlog, UpdatedAt: now.Format(task.TimeLayout)},
	}
	st := render.Style{Width: 0, Now: now}
	var plain bytes.Buffer
	if err := render.TaskTable(&plain, st, render.TreeOrder(tasks, nil), noMarks{}, map[string]review.TaskOverlaps{"cccccccc3333": {}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "OVERLAPS") {
		t.Fatalf("a column for no overlaps:\n%s", plain.String())
	}
	ov := map[string]review.TaskOverlaps{
		"aaaaaaaa1111": {With: map[string][]string{"fix-logout": {"auth.go", "session.go"}}, Landed: []string{"auth.go"}},
		"bbbbbbbb2222": {With: map[string][]string{"add-login\x1b[2J": {"auth.go", "session.go"}}},
	}
	var b bytes.Buffer
	if err := render.TaskTable(&b, st, render.TreeOrder(tasks, nil), noMarks{}, ov); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	col := strings.Index(lines[0], "OVERLAPS")
	if col < 0 || len(lines) != 4 {
		t.Fatalf("no OVERLAPS column:\n%s", b.String())
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Fatalf("an escape reached the table:\n%q", b.String())
	}
	want := map[string]string{"Add login": "2 files with 1 task, 1 landed  ", "Fix logout": "2 files with 1 task  ", "Docs": "   "}
	for _, line := range lines[1:] {
		title := line[strings.LastIndex(line, "  ")+2:]
		if got := []rune(line); len(got) < col || !strings.HasPrefix(string(got[col:]), want[title]) {
			t.Errorf("%s: the overlaps column reads %q, want %q at column %d", title, line, want[title], col)
		}
	}
}

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

// TestShowOverlapsSectionEscapesFileNames checks lazy show's section:
// each name on one line, odd ones quoted, long lists cut.
func TestShowOverlapsSectionEscapesFileNames(t *testing.T) {
	many := make([]string, maxFilesShown+5)
	for i := range many {
		many[i] = "f" + strings.Repeat("x", i)
	}
	o := review.TaskOverlaps{
		With:   map[string][]string{"other": {"plain.go", "two\nlines.go", "esc\x1b]0;owned\a.go", "rtl\u202egnp.go"}, "third": many},
		Landed: []string{"plain.go"},
		Into:   "main",
	}
	var b bytes.Buffer
	renderOverlaps(&b, "mine", o)
	out := b.String()
	for _, want := range []string{
		"\nOverlaps (",
		"  with other, also merging into main (4 files):\n      plain.go\n      \"two\\nlines.go\"\n      \"esc\\x1b]0;owned\\a.go\"\n      \"rtl\\u202egnp.go\"\n",
		"  with third, also merging into main (25 files):\n",
		"      … and 5 more\n",
		"  landed on main since the branch forked (1 file; lazy sync mine merges it in now):\n      plain.go\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the section lacks %q:\n%s", want, out)
		}
	}
	if !termsafe.Safe(out) {
		t.Errorf("the section is not terminal-safe: %q", out)
	}
	var none bytes.Buffer
	renderOverlaps(&none, "mine", review.TaskOverlaps{})
	if none.Len() != 0 {
		t.Fatalf("a section for no overlaps: %q", none.String())
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
