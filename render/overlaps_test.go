package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/machine"
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
	st := Style{Width: 0, Now: now}
	var plain bytes.Buffer
	if err := TaskTable(&plain, st, TreeOrder(tasks, nil), noMarks{}, map[string]review.TaskOverlaps{"cccccccc3333": {}}); err != nil {
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
	if err := TaskTable(&b, st, TreeOrder(tasks, nil), noMarks{}, ov); err != nil {
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

// TestShowOverlapsSectionEscapesFileNames checks lazy show's section:
// each name on one line, odd ones quoted, long lists cut.
func TestShowOverlapsSectionEscapesFileNames(t *testing.T) {
	many := make([]string, MaxFilesShown+5)
	for i := range many {
		many[i] = "f" + strings.Repeat("x", i)
	}
	o := review.TaskOverlaps{
		With:   map[string][]string{"other": {"plain.go", "two\nlines.go", "esc\x1b]0;owned\a.go", "rtl\u202egnp.go"}, "third": many},
		Landed: []string{"plain.go"},
		Into:   "main",
	}
	var b bytes.Buffer
	Overlaps(&b, "mine", o)
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
	Overlaps(&none, "mine", review.TaskOverlaps{})
	if none.Len() != 0 {
		t.Fatalf("a section for no overlaps: %q", none.String())
	}
}
