package render

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/marks"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
)

// TestListFitsA120ColumnTerminal renders lazy list's table for several
// realistic shapes (an attempts group and its attempts, an overlap with
// many files and tasks, a held task, a pull request, a deep subtask,
// the longest slugs, long titles) on a 120-column terminal: every line
// fits, titles are cut with "…" and keep a readable share, a group's row
// says it is tried several ways without a command in it, and overlaps
// are counted rather than listed (lazy show names them).
func TestListFitsA120ColumnTerminal(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := now.Add(-3 * time.Hour).Format(task.TimeLayout)
	long := "Fix the login race that shows up one CI run in ten when the session cache is cold and the clock skews"
	maxSlug := strings.Repeat("abcdefgh-", 6)[:53] // 48 + "-a7" + room, as attempts make them
	many := map[string][]string{}
	for _, s := range []string{"refactor-the-session-cache-so-logout-invalidates", "cover-logout-too", "docs"} {
		many[s] = []string{"auth/session.go", "auth/cache.go", "auth/token.go", "cmd/server/main.go"}
	}
	shapes := map[string]struct {
		tasks []*task.Summary
		ov    map[string]review.TaskOverlaps
	}{
		"one attempts group and an overlap": {
			tasks: []*task.Summary{
				{ID: "g000000000000001", Slug: "fix-login", Title: long, Status: machine.Backlog, UpdatedAt: at, Attempts: []string{"a000000000000001", "a000000000000002"}},
				{ID: "a000000000000001", Slug: "fix-login-a1", Title: long, Status: machine.Blocked, UpdatedAt: at, AttemptOf: "g000000000000001", Attempt: 1},
				{ID: "a000000000000002", Slug: "fix-login-a2", Title: long, Status: machine.Working, UpdatedAt: at, AttemptOf: "g000000000000001", Attempt: 2},
				{ID: "r000000000000001", Slug: "refactor-the-session-cache-so-logout-invalidates", Title: "Refactor the session cache so logout invalidates every token it handed out", Status: machine.Blocked, UpdatedAt: at},
			},
			ov: map[string]review.TaskOverlaps{
				"a000000000000001": {With: map[string][]string{"refactor-the-session-cache-so-logout-invalidates": {"auth/session.go", "auth/cache.go", "auth/token.go"}}},
				"r000000000000001": {With: map[string][]string{"fix-login-a1": {"auth/session.go", "auth/cache.go", "auth/token.go"}}},
			},
		},
		"many overlaps, a hold, a pull request, a deep subtask, the longest slug": {
			tasks: []*task.Summary{
				{ID: "p000000000000001", Slug: "release-2-0", Title: long, Status: machine.Submitted, UpdatedAt: at, PR: &task.PRSummary{Forge: "github", Number: 1234, State: "open", Checks: "failing", Review: "changes_requested", Revising: true}},
				{ID: "c000000000000001", Slug: "cover-logout-too", Title: long, Status: machine.Blocked, UpdatedAt: at, Parent: "p000000000000001",
					Hold: &task.Hold{Kind: task.HoldBudget, Scope: "parent release-2-0", LimitUSD: 25, SpentUSD: 25.31}},
				{ID: "d000000000000001", Slug: maxSlug, Title: long, Status: machine.Blocked, UpdatedAt: at, Parent: "c000000000000001"},
				{ID: "e000000000000001", Slug: "docs", Title: "Docs", Status: machine.Conflict, UpdatedAt: at},
			},
			ov: map[string]review.TaskOverlaps{
				"d000000000000001": {With: many, Landed: []string{"auth/session.go", "go.mod"}, Truncated: true},
				"e000000000000001": {Landed: []string{"README.md"}},
			},
		},
	}
	for name, shape := range shapes {
		var b bytes.Buffer
		st := Style{Width: 120, Now: now}
		if err := TaskTable(&b, st, TreeOrder(shape.tasks, nil), &marks.Marks{LazyDir: t.TempDir()}, shape.ov); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		checkNoGoSyntax(t, name, out)
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) != len(shape.tasks)+1 {
			t.Fatalf("%s: %d lines for %d tasks:\n%s", name, len(lines), len(shape.tasks), out)
		}
		title := strings.Index(lines[0], "TITLE")
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > 120 {
				t.Errorf("%s: a line of %d columns:\n%s", name, n, out)
			}
			if l != lines[0] && strings.HasPrefix(l[title:], "Fix the") && !strings.HasSuffix(l, "…") {
				t.Errorf("%s: a long title is not cut with …: %q", name, l)
			}
		}
		if 120-title < 24 {
			t.Errorf("%s: titles get %d columns of 120:\n%s", name, 120-title, out)
		}
		if strings.Contains(out, "lazy show") {
			t.Errorf("%s: a command in a table cell:\n%s", name, out)
		}
		t.Logf("%s:\n%s", name, out)
	}
	var b bytes.Buffer
	s := shapes["one attempts group and an overlap"]
	_ = TaskTable(&b, Style{Width: 120, Now: now}, TreeOrder(s.tasks, nil), &marks.Marks{LazyDir: t.TempDir()}, s.ov)
	for _, want := range []string{"backlog (tried 2 ways)", "3 files with 1 task"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	s = shapes["many overlaps, a hold, a pull request, a deep subtask, the longest slug"]
	_ = TaskTable(&b, Style{Width: 0, Now: now}, TreeOrder(s.tasks, nil), &marks.Marks{LazyDir: t.TempDir()}, s.ov)
	for _, want := range []string{"4+ files with 3 tasks, 2 landed", "1 file landed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}

// checkNoGoSyntax fails when text shows what Go's fmt leaves in a
// message that printed a value instead of words: a slice, a map, a
// struct pointer, a bad verb (as cli's messages test holds its own).
func checkNoGoSyntax(t *testing.T, what, text string) {
	t.Helper()
	for _, g := range []string{"[]", "map[", "&{", "%!", "(s)"} {
		if strings.Contains(text, g) {
			t.Errorf("%s shows %q: %q", what, g, text)
		}
	}
}
