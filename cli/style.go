package cli

import (
	"os"
	"strconv"

	"golang.org/x/term"

	"github.com/lazyorch/lazy/render"
)

// style decides the output conventions for stdout: colour on a terminal
// (no NO_COLOR, no --no-color, TERM not dumb), and the width titles are
// cut to (COLUMNS, the injected terminal's or the real one's; none in a
// pipe).
func (a *app) style() render.Style {
	s := render.Style{Now: a.now()}
	tty := a.terminal != nil || isTerminal(a.stdout)
	s.Color = tty && !a.noColor && a.getenv("TERM") != "dumb"
	if n, err := strconv.Atoi(a.getenv("COLUMNS")); err == nil && n > 0 {
		s.Width = n
	} else if a.terminal != nil {
		s.Width = a.terminal.width
	} else if f, ok := raw(a.stdout).(*os.File); ok && tty {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			s.Width = w
		}
	}
	return s
}
