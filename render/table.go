// Package render is how lazy's surfaces lay out what they print: tables
// measured in terminal columns (lipgloss's table for wide runes), the
// status colours, relative times, text cut to a width, the task tree's
// order and the tables lazy list, show, diff and watch share. It reads
// nothing and writes only to the writer it is given; every cell goes
// through the terminal escaper.
package render

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
	"charm.land/lipgloss/v2/table"
	"github.com/charmbracelet/x/ansi"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/machine"
)

// Style is how one command's output looks: colour (a terminal, no
// NO_COLOR, no --no-color, TERM not dumb), the width titles are cut to
// (0: no limit, as in a pipe) and the time relative times count from.
type Style struct {
	Color bool
	Width int
	Now   time.Time
}

// StatusSGR is the ANSI SGR code of each status: what needs a human stands out.
var StatusSGR = map[machine.Status]string{
	machine.Backlog:     "",
	machine.Working:     "36",   // cyan
	machine.Blocked:     "1;33", // bold yellow
	machine.Conflict:    "1;31", // bold red
	machine.Interrupted: "31",   // red
	machine.Pairing:     "35",   // magenta
	machine.Merging:     "36",
	machine.Submitted:   "34", // blue
	machine.Complete:    "32", // green
	machine.Abandoned:   "2",  // dim
}

// RelTime is a table's time: "just now", "3m ago", "5h ago", "2d ago",
// then the date.
func RelTime(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 45*time.Second:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Round(time.Minute)/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
	return t.Local().Format("2006-01-02")
}

// AbsTime is a full time with its zone, as show prints it.
func AbsTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05 MST") }

// Cell is one table cell: plain text, and the SGR code it is painted in.
type Cell struct {
	Text string
	SGR  string
}

// minTitle is the least a title column keeps before other columns give
// way on a narrow terminal; a wider terminal keeps a fifth of its width
// for titles (24 columns of 120), or a title's whole length when less.
const minTitle = 16

// Table writes rows in aligned columns, two spaces apart. The last column
// (a title) takes the width that is left and is cut to it with "…", so a
// row never wraps. On a narrow terminal the columns named in drop go
// first (in that order), then the widest remaining columns are cut.
// Widths are terminal columns (a wide rune takes two), computed on the
// visible text, so colour never breaks the alignment. Every cell is
// escaped for the terminal.
func (s Style) Table(w io.Writer, header []string, rows [][]Cell, drop ...string) error {
	for _, r := range rows {
		for i := range r {
			// Leading spaces are a tree's indentation; the rest is flattened.
			indent := r[i].Text[:len(r[i].Text)-len(strings.TrimLeft(r[i].Text, " "))]
			r[i].Text = indent + sanitize.Field(strings.Join(strings.Fields(r[i].Text), " "))
		}
	}
	widthsOf := func(header []string, rows [][]Cell) []int {
		widths := make([]int, len(header))
		for i, h := range header {
			widths[i] = TextWidth(h)
		}
		for _, r := range rows {
			for i := range r {
				if l := TextWidth(r[i].Text); i < len(header)-1 && l > widths[i] {
					widths[i] = l
				}
			}
		}
		return widths
	}
	fixed := func(widths []int) int {
		used := 0
		for i := 0; i < len(widths)-1; i++ {
			used += widths[i] + 2
		}
		return used
	}
	widths := widthsOf(header, rows)
	want := max(minTitle, s.Width/5)
	if longest := widths[len(widths)-1]; longest < want {
		// widthsOf measures only the header of the last column.
		longest = 0
		for _, r := range rows {
			longest = max(longest, TextWidth(r[len(r)-1].Text))
		}
		want = max(min(want, longest), minTitle)
	}
	if s.Width > 0 {
		for _, name := range drop {
			if fixed(widths)+want <= s.Width {
				break
			}
			for i, h := range header {
				if h == name && i < len(header)-1 {
					header = append(append([]string(nil), header[:i]...), header[i+1:]...)
					for k, r := range rows {
						rows[k] = append(append([]Cell(nil), r[:i]...), r[i+1:]...)
					}
					break
				}
			}
			widths = widthsOf(header, rows)
		}
		// Then the widest columns give way a column at a time, so two
		// long ones (a held status and a pull request's state) are cut
		// evenly rather than one of them to nothing. A SLUG, the name a
		// person types next, is cut last: only once every other column
		// is down to 12.
		for fixed(widths)+want > s.Width {
			widest := -1
			for pass := 0; pass < 2 && widest < 0; pass++ {
				for i := 0; i < len(widths)-1; i++ {
					if pass == 0 && (header[i] == "SLUG" || widths[i] <= 12) {
						continue
					}
					if widths[i] > 8 && (widest < 0 || widths[i] > widths[widest]) {
						widest = i
					}
				}
			}
			if widest < 0 {
				break
			}
			widths[widest]--
		}
	}
	n := len(header)
	last := 0 // 0: unlimited
	if s.Width > 0 {
		last = s.Width - fixed(widths)
		if last < 8 {
			last = 8 // a very narrow terminal wraps rather than lose the title
		}
	}
	all := make([][]Cell, 0, len(rows)+1)
	hdr := make([]Cell, n)
	for i, h := range header {
		hdr[i] = Cell{Text: h, SGR: "1"}
	}
	for _, r := range append([][]Cell{hdr}, rows...) {
		out := make([]Cell, len(r))
		for i, c := range r {
			switch {
			case i < n-1:
				c.Text = CutWidth(c.Text, widths[i])
			case last > 0:
				c.Text = CutWidth(c.Text, last)
			}
			out[i] = c
		}
		all = append(all, out)
	}
	s.Grid(w, all, widths[:n-1])
	return nil
}

// Grid writes rows in columns two spaces apart, as text/tabwriter lays
// out "a\tb\tc" lines (see blockWidths): every cell but a row's last is
// padded to its column's width, and a row's last cell runs on unpadded.
// widths, when given, are every row's column widths instead. Widths are
// terminal columns, so a wide rune (CJK, emoji) takes two and the
// columns still line up. Every cell is escaped for the terminal, and
// painted in its SGR code when colour is on.
func (s Style) Grid(w io.Writer, rows [][]Cell, widths []int) {
	var per [][]int
	if widths != nil {
		per = make([][]int, len(rows))
		for i, r := range rows {
			per[i] = widths[:min(len(widths), max(len(r)-1, 0))]
		}
	} else {
		per = blockWidths(rows)
	}
	ascii := true
	for _, r := range rows {
		for _, c := range r {
			ascii = ascii && isASCII(c.Text)
		}
	}
	if !ascii {
		// The cells are escaped already; only lazy's own SGR codes remain.
		_, _ = io.WriteString(Raw(w), strings.Join(s.gridLines(rows, per), "\n")+"\n")
		return
	}
	// Plain ASCII, nearly every table lazy prints: a rune is a column, and
	// padding by hand is what lipgloss's table would do at a hundredth of
	// its cost (TestGridMatchesLipglossTable holds the two together).
	for k, r := range rows {
		for i, c := range r {
			s.Print(w, c.SGR, c.Text)
			if i < len(r)-1 {
				_, _ = io.WriteString(w, strings.Repeat(" ", max(per[k][i]-len(c.Text), 0)+2))
			}
		}
		_, _ = io.WriteString(w, "\n")
	}
}

// blockWidths is each row's column widths as text/tabwriter works them
// out: a column's width holds over a block of consecutive rows that have
// a cell in it (a row's last cell is in no column), so a row with fewer
// cells ends the blocks of the columns it lacks, and the rows after it
// are measured afresh.
func blockWidths(rows [][]Cell) [][]int {
	out := make([][]int, len(rows))
	var walk func(col, from, to int)
	walk = func(col, from, to int) {
		for i := from; i < to; {
			if col >= len(rows[i])-1 {
				i++
				continue
			}
			j, width := i, 0
			for ; j < to && col < len(rows[j])-1; j++ {
				width = max(width, TextWidth(rows[j][col].Text))
			}
			for k := i; k < j; k++ {
				out[k] = append(out[k], width)
			}
			walk(col+1, i, j)
			i = j
		}
	}
	walk(0, 0, len(rows))
	return out
}

// gridLines renders rows through lipgloss's table, which measures each
// cell in terminal columns: a table for each run of rows whose columns
// have the same widths (each padded two more), then each row's last cell.
func (s Style) gridLines(rows [][]Cell, per [][]int) []string {
	paint := func(c Cell) string {
		text := termsafe.String(c.Text)
		if !s.Color || c.SGR == "" || text == "" {
			return text
		}
		return "\x1b[" + c.SGR + "m" + text + "\x1b[0m"
	}
	lines := make([]string, 0, len(rows))
	for from := 0; from < len(rows); {
		widths := per[from]
		to := from + 1
		for to < len(rows) && slices.Equal(per[to], widths) {
			to++
		}
		run := make([]string, to-from)
		if len(widths) > 0 {
			t := table.New().Wrap(false).
				BorderTop(false).BorderBottom(false).BorderLeft(false).BorderRight(false).
				BorderHeader(false).BorderColumn(false).BorderRow(false).
				StyleFunc(func(_, col int) lipgloss.Style { return lipgloss.NewStyle().Width(widths[col] + 2) })
			for _, r := range rows[from:to] {
				fixed := make([]string, len(widths))
				for i := range fixed {
					fixed[i] = paint(r[i])
				}
				t.Row(fixed...)
			}
			run = strings.Split(t.String(), "\n")
		}
		for k, r := range rows[from:to] {
			if len(r) > 0 {
				run[k] += paint(r[len(r)-1])
			}
		}
		lines = append(lines, run...)
		from = to
	}
	return lines
}

// Columns writes rows of plain cells as grid lays them out: the
// tabwriter layout lazy's tables had (two spaces between columns, a row's
// last cell unpadded), measured in terminal columns.
func Columns(w io.Writer, rows [][]string) {
	cells := make([][]Cell, len(rows))
	for i, r := range rows {
		cells[i] = make([]Cell, len(r))
		for k, text := range r {
			cells[i][k] = Cell{Text: text}
		}
	}
	Style{}.Grid(w, cells, nil)
}

// PadWidth pads s with spaces to n terminal columns, as %-Ns pads to n
// runes: a runner's name in wide runes lines up too.
func PadWidth(s string, n int) string {
	return s + strings.Repeat(" ", max(n-TextWidth(termsafe.String(s)), 0))
}

// TextWidth is how many terminal columns s takes: a wide rune (CJK, most
// emoji) two, a combining mark none.
func TextWidth(s string) int {
	if isASCII(s) {
		return len(s)
	}
	return ansi.StringWidth(s)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// CutWidth shortens s to at most max terminal columns, ending in "…"
// when it was longer (cut, measured in columns).
func CutWidth(s string, max int) string {
	if TextWidth(s) <= max {
		return s
	}
	if max <= 1 {
		return "…"
	}
	return ansi.Truncate(s, max, "…")
}

// Print writes text through w (lazy's output escaper) and, with colour
// on, the SGR codes around it past the escaper: lazy's own fixed
// sequences are the only escapes that reach the terminal.
func (s Style) Print(w io.Writer, sgr, text string) {
	if !s.Color || sgr == "" || text == "" {
		_, _ = io.WriteString(w, text)
		return
	}
	_, _ = io.WriteString(Raw(w), "\x1b["+sgr+"m")
	_, _ = io.WriteString(w, text)
	_, _ = io.WriteString(Raw(w), "\x1b[0m")
}

// Cut shortens s to max runes, ending in "…" when it was longer.
func Cut(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	if max <= 1 {
		return "…"
	}
	return string(r[:max-1]) + "…"
}

// Raw is the writer under lazy's output escaper, for lazy's own fixed
// sequences (colour, watch's redraw) that must reach the terminal
// unescaped. It flushes the escaper first so the order of bytes is kept.
func Raw(w io.Writer) io.Writer {
	if t, ok := w.(*termsafe.Writer); ok {
		_ = t.Flush()
		return t.Unwrap()
	}
	return w
}

// Indent puts prefix before each line of s, its trailing line breaks
// dropped.
func Indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}
