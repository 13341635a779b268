package cli

import (
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/lazyorch/lazy/internal/progress"
	"github.com/lazyorch/lazy/task"
)

// progressLine is the status line of a long command (start --wait, wait,
// accept of a queue, pull, push): on only when stderr is a terminal
// (TERM not dumb) and the command prints no JSON, so a pipe, a log or a
// script never sees it. It is off (nil) otherwise; every method of an
// off line does nothing.
func (a *app) progressLine(asJSON bool) *progress.Line {
	if asJSON || !isTerminal(a.stderr) || a.getenv("TERM") == "dumb" {
		return nil
	}
	width := 0
	if f, ok := raw(a.stderr).(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			width = w
		}
	}
	return progress.New(rawWriter(a.stderr), true, progress.Options{Width: width})
}

// waitingLine is what the progress line of a wait says about the tasks
// still running: each one's slug and what it is doing this second (its
// substate, else its status).
func (a *app) waitingLine(pending []*task.Snapshot) string {
	mk := a.marks()
	parts := make([]string, 0, len(pending))
	for _, sn := range pending {
		s := toJSON(&sn.Task)
		what := mk.Substate(&s)
		if what == "" {
			what = string(sn.Task.Status)
		}
		parts = append(parts, sn.Task.Slug+": "+what)
	}
	return strings.Join(parts, " | ")
}
