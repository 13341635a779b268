// Package termsafe is lazy's one escaping boundary for terminal output.
//
// Every string a human's terminal receives from a record, an agent or a
// remote (titles, goals, comments, turns, progress, reasons, log tails,
// branch and host names) may carry control sequences that never passed
// lazy's intake: a fetched ref, a hand-edited record, an agent's stream.
// main wraps the process's stdout and stderr in a Writer once, so no
// command can forget to escape; only the interactive pty passthrough of
// pair and chat (the agent's own terminal, by design) and lazy's own
// fixed redraw sequences in watch bypass it, through Unwrap.
//
// What is escaped: C0 controls other than tab and LF (CR, BEL, ESC, ...),
// DEL, C1 controls (U+0080-U+009F, which some terminals read as CSI, OSC
// and ST), the bidi controls of unicode.Bidi_Control (which reorder what
// the reader sees), and bytes that are not UTF-8. Runes become \u00XX and
// bad bytes \xNN, so the reader sees that something was there. The \uXXXX
// form is also a valid JSON escape for the same character, so JSON output
// stays valid JSON with the same meaning (encoding/json already escapes C0
// and never emits invalid UTF-8; it leaves C1 and DEL raw).
package termsafe

import (
	"io"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Writer escapes everything written to it and passes the result on. It is
// safe for concurrent use. Writes may split a UTF-8 sequence anywhere: an
// incomplete sequence at the end of a write is held until the next write
// or Flush, so the output does not depend on how the input was split.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte // an incomplete UTF-8 sequence, at most 3 bytes
	buf     []byte
}

// New returns a Writer that escapes into w.
func New(w io.Writer) *Writer { return &Writer{w: w} }

// Unwrap returns the writer underneath, for output that must reach the
// terminal raw: an agent's pty in pair and chat, lazy's own fixed escape
// sequences. Callers Flush first so the order of bytes is kept.
func (t *Writer) Unwrap() io.Writer { return t.w }

// Write escapes p and writes the result. It reports len(p) on success.
func (t *Writer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	data := p
	if len(t.pending) > 0 {
		data = append(append([]byte(nil), t.pending...), p...)
		t.pending = t.pending[:0]
	}
	t.buf = t.buf[:0]
	i := 0
	for i < len(data) {
		// Fast path: a run of printable ASCII, tab and LF (nearly all of
		// what lazy prints) is copied as is.
		j := i
		for j < len(data) && plain(data[j]) {
			j++
		}
		if j > i {
			t.buf = append(t.buf, data[i:j]...)
			i = j
			continue
		}
		if !utf8.FullRune(data[i:]) {
			break // maybe completed by the next write
		}
		r, size := utf8.DecodeRune(data[i:])
		t.buf = appendRune(t.buf, data[i:i+size], r, size)
		i += size
	}
	t.pending = append(t.pending, data[i:]...)
	if len(t.buf) > 0 {
		if _, err := t.w.Write(t.buf); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes a held incomplete UTF-8 sequence, escaped byte by byte:
// nothing more can complete it.
func (t *Writer) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 {
		return nil
	}
	var out []byte
	for _, c := range t.pending {
		out = appendByte(out, c)
	}
	t.pending = t.pending[:0]
	_, err := t.w.Write(out)
	return err
}

// String escapes s the way Writer does (a trailing incomplete sequence is
// escaped byte by byte).
func String(s string) string {
	if Safe(s) {
		return s
	}
	out := make([]byte, 0, len(s)+16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		out = appendRune(out, []byte(s[i:i+size]), r, size)
		i += size
	}
	return string(out)
}

// Safe reports whether s passes through unchanged.
func Safe(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if escaped(r, size) {
			return false
		}
		i += size
	}
	return true
}

func appendRune(out, raw []byte, r rune, size int) []byte {
	switch {
	case r == utf8.RuneError && size == 1:
		return appendByte(out, raw[0])
	case escaped(r, size):
		out = append(out, '\\', 'u')
		h := strconv.FormatInt(int64(r), 16)
		for n := len(h); n < 4; n++ {
			out = append(out, '0')
		}
		return append(out, h...)
	}
	return append(out, raw...)
}

func appendByte(out []byte, c byte) []byte {
	const hex = "0123456789abcdef"
	return append(out, '\\', 'x', hex[c>>4], hex[c&0xf])
}

// plain reports whether an ASCII byte passes through.
func plain(c byte) bool { return (c >= 0x20 && c < 0x7f) || c == '\t' || c == '\n' }

// escaped reports whether a decoded rune is kept from the terminal.
func escaped(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r == '\t' || r == '\n':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case unicode.Is(unicode.Bidi_Control, r):
		return true // bidi marks, embeddings, overrides and isolates
	}
	return false
}
