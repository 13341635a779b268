package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
	"charm.land/lipgloss/v2/table"
	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/machine"
)

// style is how one command's output looks: colour (a terminal, no
// NO_COLOR, no --no-color, TERM not dumb) and the width titles are cut
// to (0: no limit, as in a pipe).
type style struct {
	color bool
	width int
	now   time.Time
}

// style decides the output conventions for stdout.
func (a *app) style() style {
	s := style{now: a.now()}
	tty := a.terminal != nil || isTerminal(a.stdout)
	s.color = tty && !a.noColor && a.getenv("TERM") != "dumb"
	if n, err := strconv.Atoi(a.getenv("COLUMNS")); err == nil && n > 0 {
		s.width = n
	} else if a.terminal != nil {
		s.width = a.terminal.width
	} else if f, ok := raw(a.stdout).(*os.File); ok && tty {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			s.width = w
		}
	}
	return s
}

// ANSI SGR codes per status: what needs a human stands out.
var statusSGR = map[machine.Status]string{
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

// relTime is a table's time: "just now", "3m ago", "5h ago", "2d ago",
// then the date.
func relTime(t, now time.Time) string {
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

// absTime is a full time with its zone, as show prints it.
func absTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05 MST") }

// cell is one table cell: plain text, and the SGR code it is painted in.
type cell struct {
	text string
	sgr  string
}

// minTitle is the least a title column keeps before other columns give
// way on a narrow terminal; a wider terminal keeps a fifth of its width
// for titles (24 columns of 120), or a title's whole length when less.
const minTitle = 16

// table writes rows in aligned columns, two spaces apart. The last column
// (a title) takes the width that is left and is cut to it with "…", so a
// row never wraps. On a narrow terminal the columns named in drop go
// first (in that order), then the widest remaining columns are cut.
// Widths are terminal columns (a wide rune takes two), computed on the
// visible text, so colour never breaks the alignment. Every cell is
// escaped for the terminal.
func (s style) table(w io.Writer, header []string, rows [][]cell, drop ...string) error {
	for _, r := range rows {
		for i := range r {
			// Leading spaces are a tree's indentation; the rest is flattened.
			indent := r[i].text[:len(r[i].text)-len(strings.TrimLeft(r[i].text, " "))]
			r[i].text = indent + sanitize.Field(strings.Join(strings.Fields(r[i].text), " "))
		}
	}
	widthsOf := func(header []string, rows [][]cell) []int {
		widths := make([]int, len(header))
		for i, h := range header {
			widths[i] = textWidth(h)
		}
		for _, r := range rows {
			for i := range r {
				if l := textWidth(r[i].text); i < len(header)-1 && l > widths[i] {
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
	want := max(minTitle, s.width/5)
	if longest := widths[len(widths)-1]; longest < want {
		// widthsOf measures only the header of the last column.
		longest = 0
		for _, r := range rows {
			longest = max(longest, textWidth(r[len(r)-1].text))
		}
		want = max(min(want, longest), minTitle)
	}
	if s.width > 0 {
		for _, name := range drop {
			if fixed(widths)+want <= s.width {
				break
			}
			for i, h := range header {
				if h == name && i < len(header)-1 {
					header = append(append([]string(nil), header[:i]...), header[i+1:]...)
					for k, r := range rows {
						rows[k] = append(append([]cell(nil), r[:i]...), r[i+1:]...)
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
		for fixed(widths)+want > s.width {
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
	if s.width > 0 {
		last = s.width - fixed(widths)
		if last < 8 {
			last = 8 // a very narrow terminal wraps rather than lose the title
		}
	}
	all := make([][]cell, 0, len(rows)+1)
	hdr := make([]cell, n)
	for i, h := range header {
		hdr[i] = cell{text: h, sgr: "1"}
	}
	for _, r := range append([][]cell{hdr}, rows...) {
		out := make([]cell, len(r))
		for i, c := range r {
			switch {
			case i < n-1:
				c.text = cutWidth(c.text, widths[i])
			case last > 0:
				c.text = cutWidth(c.text, last)
			}
			out[i] = c
		}
		all = append(all, out)
	}
	s.grid(w, all, widths[:n-1])
	return nil
}

// grid writes rows in columns two spaces apart, as text/tabwriter lays
// out "a\tb\tc" lines (see blockWidths): every cell but a row's last is
// padded to its column's width, and a row's last cell runs on unpadded.
// widths, when given, are every row's column widths instead. Widths are
// terminal columns, so a wide rune (CJK, emoji) takes two and the
// columns still line up. Every cell is escaped for the terminal, and
// painted in its SGR code when colour is on.
func (s style) grid(w io.Writer, rows [][]cell, widths []int) {
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
			ascii = ascii && isASCII(c.text)
		}
	}
	if !ascii {
		// The cells are escaped already; only lazy's own SGR codes remain.
		_, _ = io.WriteString(rawWriter(w), strings.Join(s.gridLines(rows, per), "\n")+"\n")
		return
	}
	// Plain ASCII, nearly every table lazy prints: a rune is a column, and
	// padding by hand is what lipgloss's table would do at a hundredth of
	// its cost (TestGridMatchesLipglossTable holds the two together).
	for k, r := range rows {
		for i, c := range r {
			s.print(w, c.sgr, c.text)
			if i < len(r)-1 {
				_, _ = io.WriteString(w, strings.Repeat(" ", max(per[k][i]-len(c.text), 0)+2))
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
func blockWidths(rows [][]cell) [][]int {
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
				width = max(width, textWidth(rows[j][col].text))
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
func (s style) gridLines(rows [][]cell, per [][]int) []string {
	paint := func(c cell) string {
		text := termsafe.String(c.text)
		if !s.color || c.sgr == "" || text == "" {
			return text
		}
		return "\x1b[" + c.sgr + "m" + text + "\x1b[0m"
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

// columns writes rows of plain cells as grid lays them out: the
// tabwriter layout lazy's tables had (two spaces between columns, a row's
// last cell unpadded), measured in terminal columns.
func columns(w io.Writer, rows [][]string) {
	cells := make([][]cell, len(rows))
	for i, r := range rows {
		cells[i] = make([]cell, len(r))
		for k, text := range r {
			cells[i][k] = cell{text: text}
		}
	}
	style{}.grid(w, cells, nil)
}

// padWidth pads s with spaces to n terminal columns, as %-Ns pads to n
// runes: a runner's name in wide runes lines up too.
func padWidth(s string, n int) string {
	return s + strings.Repeat(" ", max(n-textWidth(termsafe.String(s)), 0))
}

// textWidth is how many terminal columns s takes: a wide rune (CJK, most
// emoji) two, a combining mark none.
func textWidth(s string) int {
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

// cutWidth shortens s to at most max terminal columns, ending in "…"
// when it was longer (cut, measured in columns).
func cutWidth(s string, max int) string {
	if textWidth(s) <= max {
		return s
	}
	if max <= 1 {
		return "…"
	}
	return ansi.Truncate(s, max, "…")
}

// print writes text through w (lazy's output escaper) and, with colour
// on, the SGR codes around it past the escaper: lazy's own fixed
// sequences are the only escapes that reach the terminal.
func (s style) print(w io.Writer, sgr, text string) {
	if !s.color || sgr == "" || text == "" {
		_, _ = io.WriteString(w, text)
		return
	}
	_, _ = io.WriteString(rawWriter(w), "\x1b["+sgr+"m")
	_, _ = io.WriteString(w, text)
	_, _ = io.WriteString(rawWriter(w), "\x1b[0m")
}

// cut shortens s to max runes, ending in "…" when it was longer.
func cut(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	if max <= 1 {
		return "…"
	}
	return string(r[:max-1]) + "…"
}
