package tui

import (
	"strings"

	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/render"
)

// statusBar is the bottom of lazy watch's screen, a sub-model of its
// own as Bubble Tea apps compose them: the error of the last load, the
// status line (how the last action ended, or its progress), and the
// prompt it opens for an action's text or a y/N, with that prompt's
// keys. The Model's keys and messages decide what it says; it draws
// itself at the size the Model gives it.
type statusBar struct {
	err       error  // the last load's error
	status    string // the last action's outcome, or its progress
	statusBad bool   // status is an error
	// prompt, when set, is the question the bottom line asks (text for
	// an action, or y/N).
	prompt *tuiPrompt
}

// finished puts how an action ended in the status line: the confirming
// sentence, or the whole error.
func (sb *statusBar) finished(msg tuiDone) {
	switch {
	case msg.err != nil && msg.out != "":
		sb.status, sb.statusBad = msg.what+": "+lastLine(msg.out), true
	case msg.err != nil && strings.HasPrefix(msg.err.Error(), msg.what+":"):
		sb.status, sb.statusBad = msg.err.Error(), true // it says what failed already
	case msg.err != nil:
		sb.status, sb.statusBad = msg.what+": "+msg.err.Error(), true
	case msg.out != "":
		sb.status, sb.statusBad = strings.TrimSpace(msg.out), false
	default:
		sb.status, sb.statusBad = msg.what+": done", false
	}
}

// say and bad set the status line: news, or an error.
func (sb *statusBar) say(s string) { sb.status, sb.statusBad = s, false }
func (sb *statusBar) bad(s string) { sb.status, sb.statusBad = s, true }

// footer is the bottom of the screen: the error of the last load, the
// status line (wrapped, never cut), the open prompt, the key help.
func (sb *statusBar) footer(width, height int, styles tuiStyles) string {
	w := max(width, 10)
	var lines []string
	if sb.err != nil {
		for _, l := range wrap(termsafe.String("error: "+sb.err.Error()), w) {
			lines = append(lines, styles.bad.Render(l))
		}
	}
	if sb.status != "" {
		st := styles.plain
		if sb.statusBad {
			st = styles.bad
		}
		wrapped := wrap(termsafe.String(sb.status), w)
		// However long, the status leaves half the screen to the rest.
		if most := max(2, height/2); len(wrapped) > most {
			wrapped = append(wrapped[:most-1], "… (the rest: lazy show)")
		}
		for _, l := range wrapped {
			lines = append(lines, st.Render(l))
		}
	}
	if p := sb.prompt; p != nil {
		lines = append(lines, styles.key.Render(p.line(w)))
		lines = append(lines, styles.dim.Render(render.Cut("enter: done  esc: cancel  ctrl+u: clear", w)))
		return strings.Join(lines, "\n")
	}
	lines = append(lines, styles.dim.Render(render.Cut(tuiKeys, w)))
	return strings.Join(lines, "\n")
}
