package progress

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// screen is a fake terminal: it keeps the lines a real one would show
// for the carriage returns, erase-to-end-of-line and newlines the Line
// writes, and fails on any other control byte.
type screen struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
	col   int
	raw   strings.Builder
}

func newScreen(t *testing.T) *screen { return &screen{t: t, lines: []string{""}} }

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw.Write(p)
	in := string(p)
	for len(in) > 0 {
		cur := []rune(s.lines[len(s.lines)-1])
		switch {
		case strings.HasPrefix(in, "\x1b[K"):
			s.lines[len(s.lines)-1] = string(cur[:s.col])
			in = in[3:]
			continue
		case in[0] == '\r':
			s.col = 0
		case in[0] == '\n':
			s.lines = append(s.lines, "")
			s.col = 0
		case in[0] < 0x20 || in[0] == 0x7f:
			s.t.Errorf("the line wrote control byte %q", in[0])
		default:
			r := []rune(in)[0]
			if s.col < len(cur) {
				cur[s.col] = r
			} else {
				cur = append(cur, r)
			}
			s.lines[len(s.lines)-1] = string(cur)
			s.col++
			in = in[len(string(r)):]
			continue
		}
		in = in[1:]
	}
	return len(p), nil
}

// view is what the screen shows, lines joined.
func (s *screen) view() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

func TestLineRedrawsInPlace(t *testing.T) {
	scr, clk := newScreen(t), &clock{t: time.Unix(1000, 0)}
	l := New(scr, true, Options{Width: 80, Now: clk.now})
	l.Set("fix-login: starting")
	if got := scr.view(); got != "fix-login: starting · 0s" {
		t.Fatalf("screen %q", got)
	}
	clk.add(83 * time.Second)
	l.Set("fix-login: running tests")
	if got := scr.view(); got != "fix-login: running tests · 1m23s" {
		t.Fatalf("screen %q", got)
	}
	// A shorter text leaves nothing of the longer one behind.
	l.Set("fix-login: idle")
	if got := scr.view(); got != "fix-login: idle · 1m23s" {
		t.Fatalf("screen %q", got)
	}
	// Nothing changed: nothing is written.
	before := scr.raw.Len()
	l.Tick()
	if scr.raw.Len() != before {
		t.Fatalf("an unchanged line was redrawn: %q", scr.raw.String()[before:])
	}
	clk.add(time.Second)
	l.Tick()
	if got := scr.view(); got != "fix-login: idle · 1m24s" {
		t.Fatalf("after a tick: %q", got)
	}
	l.Println("accepted fix-login")
	if got := scr.view(); got != "accepted fix-login\nfix-login: idle · 1m24s" {
		t.Fatalf("a printed line goes above the status line: %q", got)
	}
	l.Close()
	if got := scr.view(); got != "accepted fix-login\n" {
		t.Fatalf("Close leaves %q", got)
	}
}

func TestLineEscapesAndFits(t *testing.T) {
	scr := newScreen(t)
	l := New(scr, true, Options{Width: 20, Now: func() time.Time { return time.Unix(0, 0) }})
	l.Set("evil\x1b]0;owned\x07 title that is long")
	got := scr.view()
	if strings.ContainsAny(got, "\x1b\x07") || len([]rune(got)) != 19 || !strings.HasSuffix(got, "…") {
		t.Fatalf("screen %q (%d runes)", got, len([]rune(got)))
	}
	l.Close()
}

func TestOffLineWritesNothing(t *testing.T) {
	var b strings.Builder
	for _, l := range []*Line{New(&b, false, Options{}), nil} {
		if l.On() {
			t.Fatal("an off line is on")
		}
		l.Set("x")
		l.Tick()
		l.Println("y")
		l.Start(time.Millisecond)
		l.Close()
	}
	if b.Len() != 0 {
		t.Fatalf("an off line wrote %q", b.String())
	}
}

func TestStartTicksUntilClose(t *testing.T) {
	scr, clk := newScreen(t), &clock{t: time.Unix(0, 0)}
	l := New(scr, true, Options{Now: clk.now})
	l.Set("pull origin: fetching")
	l.Start(time.Millisecond)
	clk.add(5 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for scr.view() != "pull origin: fetching · 5s" {
		if time.Now().After(deadline) {
			t.Fatalf("the ticker never redrew: %q", scr.view())
		}
		time.Sleep(time.Millisecond) // poll the fake screen
	}
	l.Close()
	n := scr.raw.Len()
	clk.add(time.Second)
	if scr.view() != "" || scr.raw.Len() != n {
		t.Fatalf("drawn after Close: %q", scr.view())
	}
}

func TestElapsed(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 1500 * time.Millisecond: "1s", 83 * time.Second: "1m23s", 2*time.Hour + 5*time.Second: "2h0m5s", -time.Second: "0s"} {
		if got := Elapsed(d); got != want {
			t.Errorf("Elapsed(%v) = %q, want %q", d, got, want)
		}
	}
}
