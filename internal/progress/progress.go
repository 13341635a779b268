// Package progress is the one status line lazy redraws on a terminal
// while a long command runs ("fix-login: running tests · 1m23s"). It
// draws only when told it is on a terminal: a pipe, a log file or --json
// output never receives a carriage return or an escape sequence from it.
package progress

import (
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lazyorch/lazy/internal/termsafe"
)

// Sep separates the text of the line from its elapsed time.
const Sep = " · "

// Line is a status line redrawn in place: a carriage return, the text
// (escaped by termsafe, cut to the terminal's width so it never wraps,
// since a wrapped line cannot be redrawn) and erase-to-end-of-line. Its
// methods are safe for concurrent use, and every one is a no-op on a nil
// or off Line, so callers need not ask whether they are on a terminal.
type Line struct {
	mu    sync.Mutex
	w     io.Writer // the raw terminal; nil when off
	width int
	now   func() time.Time
	start time.Time
	text  string
	shown string // what the terminal shows now ("" when cleared)
	stop  chan struct{}
	done  chan struct{}
}

// Options tune a Line; the zero value is a terminal of unknown width and
// the real clock.
type Options struct {
	Width int              // the terminal's columns; 0: 80
	Now   func() time.Time // the clock (tests)
}

// New returns a Line drawing on w when on is true, else an off Line that
// writes nothing. w must be the terminal itself, not an escaping writer:
// the Line escapes its text and writes its own control bytes.
func New(w io.Writer, on bool, o Options) *Line {
	if !on {
		return nil
	}
	if o.Width <= 0 {
		o.Width = 80
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Line{w: w, width: o.Width, now: o.Now, start: o.Now()}
}

// On reports whether l draws anything.
func (l *Line) On() bool { return l != nil }

// Set replaces the text of the line and redraws it.
func (l *Line) Set(text string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text = text
	l.draw()
}

// Tick redraws the line, so its elapsed time moves on.
func (l *Line) Tick() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.draw()
}

// Println prints s as a line of its own above the status line, which is
// drawn again under it.
func (l *Line) Println(s string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	_, _ = io.WriteString(l.w, termsafe.String(s)+"\n")
	l.draw()
}

// Start redraws the line every interval until Close, for callers that
// block in a call that reports nothing while it runs.
func (l *Line) Start(interval time.Duration) {
	if l == nil || l.stop != nil {
		return
	}
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				l.Tick()
			}
		}
	}()
}

// Close stops the redrawing and erases the line, leaving the terminal as
// it was before the first draw.
func (l *Line) Close() {
	if l == nil {
		return
	}
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
}

// Render is the line's text for text after elapsed, cut to width
// columns (one left free, so the cursor never wraps).
func Render(text string, elapsed time.Duration, width int) string {
	s := termsafe.String(text) + Sep + Elapsed(elapsed)
	if width > 1 && utf8.RuneCountInString(s) > width-1 {
		r := []rune(s)
		s = string(r[:width-2]) + "…"
	}
	return s
}

// Elapsed is a duration as the line shows it: whole seconds, "1m23s".
func Elapsed(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Truncate(time.Second).String()
}

// draw writes the line if it changed; l.mu is held.
func (l *Line) draw() {
	if l.text == "" {
		return
	}
	s := Render(l.text, l.now().Sub(l.start), l.width)
	if s == l.shown {
		return
	}
	l.shown = s
	_, _ = io.WriteString(l.w, "\r"+s+"\x1b[K")
}

// clear erases the line if one is shown; l.mu is held.
func (l *Line) clear() {
	if l.shown == "" {
		return
	}
	l.shown = ""
	_, _ = io.WriteString(l.w, "\r\x1b[K")
}
