package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/lazyorch/lazy/internal/sanitize"
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
	s := style{now: time.Now()}
	tty := isTerminal(a.stdout)
	s.color = tty && !a.noColor && os.Getenv("TERM") != "dumb"
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		s.width = n
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
// Padding is computed on the visible text, so colour never breaks the
// alignment. Every cell is escaped for the terminal.
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
			widths[i] = utf8.RuneCountInString(h)
		}
		for _, r := range rows {
			for i := range r {
				if l := utf8.RuneCountInString(r[i].text); i < len(header)-1 && l > widths[i] {
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
			longest = max(longest, utf8.RuneCountInString(r[len(r)-1].text))
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
	line := func(cells []cell) {
		for i, c := range cells {
			if i == n-1 {
				text := c.text
				if last > 0 {
					text = cut(text, last)
				}
				s.print(w, c.sgr, text)
				break
			}
			text := cut(c.text, widths[i])
			s.print(w, c.sgr, text)
			_, _ = io.WriteString(w, strings.Repeat(" ", widths[i]-utf8.RuneCountInString(text)+2))
		}
		_, _ = io.WriteString(w, "\n")
	}
	hdr := make([]cell, n)
	for i, h := range header {
		hdr[i] = cell{text: h, sgr: "1"}
	}
	line(hdr)
	for _, r := range rows {
		line(r)
	}
	return nil
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
