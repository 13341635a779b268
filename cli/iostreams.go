package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"golang.org/x/term"

	"github.com/lazyorch/lazy/internal/progress"
	"github.com/lazyorch/lazy/render"
)

// ioStreams are a run's standard streams and what is known of the
// terminal behind them (gh's IOStreams): the one IO dependency a
// command's Options carry, so that a test gives its own buffers, its own
// environment and a terminal of its own width.
type ioStreams struct {
	in          io.Reader
	out, errOut io.Writer
	// getenv reads the variables that describe the terminal (TERM,
	// COLUMNS): the process's in a run, a test's own in the tests.
	getenv func(string) string
	// terminal, when set, is the terminal out is taken to be (the
	// tests'); nil asks the OS.
	terminal *terminal
	// noColor is --no-color or NO_COLOR: no colour even on a terminal.
	noColor bool
}

func (s ioStreams) printJSON(v any) error {
	enc := json.NewEncoder(s.out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// info prints a progress or status line on stderr. It starts with "· ",
// never "lazy:", so it does not read like the error lines that do.
func (s ioStreams) info(format string, args ...any) {
	fmt.Fprintf(s.errOut, "· "+format+"\n", args...)
}

// progressLine is the status line of a long command (start --wait, wait,
// accept of a queue, pull, push): on only when stderr is a terminal
// (TERM not dumb) and the command prints no JSON, so a pipe, a log or a
// script never sees it. It is off (nil) otherwise; every method of an
// off line does nothing.
func (s ioStreams) progressLine(asJSON bool) *progress.Line {
	if asJSON || !isTerminal(s.errOut) || s.getenv("TERM") == "dumb" {
		return nil
	}
	width := 0
	if f, ok := raw(s.errOut).(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			width = w
		}
	}
	return progress.New(rawWriter(s.errOut), true, progress.Options{Width: width})
}

// style decides the output conventions for stdout: colour on a terminal
// (no NO_COLOR, no --no-color, TERM not dumb), and the width titles are
// cut to (COLUMNS, the injected terminal's or the real one's; none in a
// pipe).
func (s ioStreams) style(now time.Time) render.Style {
	st := render.Style{Now: now}
	tty := s.terminal != nil || isTerminal(s.out)
	st.Color = tty && !s.noColor && s.getenv("TERM") != "dumb"
	if n, err := strconv.Atoi(s.getenv("COLUMNS")); err == nil && n > 0 {
		st.Width = n
	} else if s.terminal != nil {
		st.Width = s.terminal.width
	} else if f, ok := raw(s.out).(*os.File); ok && tty {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			st.Width = w
		}
	}
	return st
}
