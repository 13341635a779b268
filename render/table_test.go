package render

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

type noMarks struct{}

func (noMarks) Substate(s *task.Summary) string {
	if s.Status == machine.Working {
		return "agent: running tests"
	}
	return ""
}

func TestTaskTableGolden(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return now.Add(-d).Format(task.TimeLayout) }
	tasks := []*task.Summary{
		{ID: "aaaaaaaa1111", Slug: "fix-the-flaky-login-test", Title: "Fix the flaky login test that fails one run in twenty on CI under load", Status: machine.Working, UpdatedAt: at(3 * time.Minute)},
		{ID: "bbbbbbbb2222", Slug: "cover-logout", Parent: "aaaaaaaa1111", Title: "Cover logout too", Status: machine.Blocked, UpdatedAt: at(2 * time.Hour)},
		{ID: "cccccccc3333", Slug: "write-docs", Title: "Write the docs for the new review loop: diff, logs, wait and the TUI", Status: machine.Backlog, UpdatedAt: at(3 * 24 * time.Hour)},
		{ID: "dddddddd4444", Slug: "old-thing", Title: "Old thing", Status: machine.Complete, UpdatedAt: at(90 * 24 * time.Hour)},
		{ID: "eeeeeeee5555", Slug: "crashed", Title: "Crashed – needs a look", Status: machine.Interrupted, UpdatedAt: at(10 * time.Second)},
	}
	for _, width := range []int{60, 100, 200} {
		for _, color := range []bool{false, true} {
			var b bytes.Buffer
			st := Style{Color: color, Width: width, Now: now}
			if err := TaskTable(&b, st, TreeOrder(tasks, TaskLess("attention")), noMarks{}, nil); err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("list-%d-color-%v.golden", width, color)
			golden(t, name, b.Bytes())
			if !color {
				for _, line := range bytes.Split(bytes.TrimRight(b.Bytes(), "\n"), []byte("\n")) {
					if n := len([]rune(string(line))); n > width {
						t.Errorf("%s: a line of %d columns at width %d: %q", name, n, width, line)
					}
				}
			} else if !bytes.Contains(b.Bytes(), []byte("\x1b[1;33mblocked\x1b[0m")) {
				t.Errorf("%s: blocked is not painted", name)
			}
		}
	}
}

func TestRelTime(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{10 * time.Second: "just now", 3 * time.Minute: "3m ago", 5 * time.Hour: "5h ago", 50 * time.Hour: "2d ago"} {
		if got := RelTime(now.Add(-d), now); got != want {
			t.Errorf("RelTime(-%s) = %q, want %q", d, got, want)
		}
	}
}

// randomRows is a table of random ASCII cells: rows of 0 to 5 cells,
// some cells empty, some long.
func randomRows(r *rand.Rand) [][]Cell {
	words := []string{"", "a", "id", "blocked", "fix-the-login", "3m ago", "$4.0213 + unpriced", "  K", "x y z", "\\u001b[31m"}
	rows := make([][]Cell, 1+r.IntN(8))
	for i := range rows {
		n := r.IntN(6)
		if r.IntN(3) > 0 && i > 0 {
			n = len(rows[i-1]) // mostly uniform, as tables are
		}
		for range n {
			rows[i] = append(rows[i], Cell{Text: words[r.IntN(len(words))], SGR: []string{"", "1", "1;33"}[r.IntN(3)]})
		}
	}
	return rows
}

// TestGridMatchesTabwriter: on ASCII, grid lays a table out as
// text/tabwriter (the layout lazy's tables had) does, column blocks
// included: a row with fewer cells ends the blocks of the columns it
// lacks.
func TestGridMatchesTabwriter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		rows := randomRows(r)
		var want bytes.Buffer
		tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
		for _, row := range rows {
			var texts []string
			for _, c := range row {
				texts = append(texts, c.Text)
			}
			fmt.Fprintln(tw, strings.Join(texts, "\t"))
		}
		_ = tw.Flush()
		var got bytes.Buffer
		Style{}.Grid(&got, rows, nil)
		if got.String() != want.String() {
			t.Fatalf("case %d: %q\ngrid:\n%s\ntabwriter:\n%s", i, rows, got.String(), want.String())
		}
	}
}

// TestGridMatchesLipglossTable: the hand padding of an ASCII table is
// byte for byte what the lipgloss table path renders, in colour or not,
// with the columns' widths worked out or given.
func TestGridMatchesLipglossTable(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		rows := randomRows(r)
		st := Style{Color: r.IntN(2) == 0}
		per := blockWidths(rows)
		var widths []int
		if r.IntN(2) == 0 {
			// Given widths, as lazy list gives them: at least each cell's.
			for _, row := range rows {
				for k := 0; k < len(row)-1; k++ {
					if k == len(widths) {
						widths = append(widths, 0)
					}
					widths[k] = max(widths[k], len(row[k].Text)+r.IntN(3))
				}
			}
			for k, row := range rows {
				per[k] = widths[:max(len(row)-1, 0)]
			}
		}
		var fast bytes.Buffer
		st.Grid(&fast, rows, widths)
		want := strings.Join(st.gridLines(rows, per), "\n") + "\n"
		if fast.String() != want {
			t.Fatalf("case %d: %q widths %v\nby hand:\n%q\nlipgloss:\n%q", i, rows, widths, fast.String(), want)
		}
	}
}

// columnStarts is where each two-space gap of line ends, in terminal
// columns: where the columns after the first begin.
func columnStarts(line string) []int {
	var out []int
	col, spaces := 0, 0
	for _, r := range line {
		if r == ' ' {
			spaces++
		} else {
			if spaces >= 2 && col > spaces {
				out = append(out, col)
			}
			spaces = 0
		}
		col += runewidth(r)
	}
	return out
}

func runewidth(r rune) int { return ansi.StringWidth(string(r)) }

// TestTablesAlignWideRunes: cells of CJK and emoji, which take two
// columns each, line up with ASCII ones: in lazy list's table (where a
// wide title is cut to the terminal's width, not to as many runes, so it
// never wraps), in lazy config's (an origin under a home directory named
// in CJK) and in the tabwriter-shaped tables (cost by model). Counting
// runes, as the tables did, put every column after a wide cell out of
// line by the number of its wide runes.
func TestTablesAlignWideRunes(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := now.Add(-3 * time.Minute).Format(task.TimeLayout)
	tasks := []*task.Summary{
		{ID: "aaaaaaaa1111", Slug: "fix-login", Title: "ログインのバグを直す、セッションキャッシュが冷たいときに一度だけ失敗する", Status: machine.Blocked, UpdatedAt: at},
		{ID: "bbbbbbbb2222", Slug: "emoji", Title: "Ship it 🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀", Status: machine.Working, UpdatedAt: at},
		{ID: "cccccccc3333", Slug: "plain", Title: "A plain title", Status: machine.Backlog, UpdatedAt: at},
	}
	for _, width := range []int{60, 80} {
		var b bytes.Buffer
		if err := TaskTable(&b, Style{Width: width, Now: now}, TreeOrder(tasks, nil), noMarks{}, nil); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
		for _, l := range lines {
			if n := ansi.StringWidth(l); n > width {
				t.Errorf("width %d: a line of %d columns: %q", width, n, l)
			}
		}
		if !strings.Contains(b.String(), "ログイン") || !strings.Contains(b.String(), "…") {
			t.Errorf("width %d: the wide title is not shown cut:\n%s", width, b.String())
		}
	}

	var b bytes.Buffer
	rows := [][]Cell{
		{{Text: "lazy.agent"}, {Text: "global (/home/山田太郎/.gitconfig)"}, {Text: "codex"}},
		{{Text: "lazy.budget"}, {Text: "local"}, {Text: "5"}},
		{{Text: "lazy.notify"}, {Text: "global (/home/🐱/.gitconfig)"}, {Text: "desktop"}},
	}
	if err := (Style{Width: 120}).Table(&b, []string{"KEY", "ORIGIN", "VALUE"}, rows); err != nil {
		t.Fatal(err)
	}
	assertAligned(t, "config", b.String())

	b.Reset()
	Columns(&b, [][]string{
		{"MODEL", "COST", "IN", "TURNS"},
		{"通義千問-max", "$1.0000", "12.3k", "2"},
		{"claude-opus-4-1", "$3.7500", "905.0k", "2"},
		{"🦙-70b", "unpriced", "4", "1"},
	})
	assertAligned(t, "cost by model", b.String())
}

// assertAligned fails unless every line of a table has its columns
// starting at the same terminal columns as its header's.
func assertAligned(t *testing.T, name, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	want := columnStarts(lines[0])
	if len(want) == 0 {
		t.Fatalf("%s: no columns in the header %q", name, lines[0])
	}
	for _, l := range lines[1:] {
		if got := columnStarts(l); !slices.Equal(got, want) {
			t.Errorf("%s: columns at %v, the header's at %v:\n%s", name, got, want, out)
		}
	}
}

func TestCutWidth(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"abcdef", 6, "abcdef"},
		{"abcdef", 5, "abcd…"},
		{"abcdef", 1, "…"},
		{"abcdef", 0, "…"},
		{"日本語", 6, "日本語"},
		{"日本語", 5, "日本…"},
		{"日本語", 4, "日…"},
		{"🚀🚀", 3, "🚀…"},
	} {
		if got := CutWidth(c.in, c.max); got != c.want {
			t.Errorf("CutWidth(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
		if c.max > 0 && ansi.StringWidth(CutWidth(c.in, c.max)) > c.max {
			t.Errorf("CutWidth(%q, %d) is wider than %d", c.in, c.max, c.max)
		}
	}
	if got := PadWidth("山田", 6) + "|"; got != "山田  |" {
		t.Errorf("padWidth = %q", got)
	}
}
