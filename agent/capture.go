package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"github.com/lazyorch/lazy/proto"
)

// maxCaptureLine is the longest line Capture holds whole; the rest of a
// longer one is written as it comes (escapes stripped chunk by chunk).
const maxCaptureLine = 8 << 20

// Capture is what an agent's terminal output becomes in its log (see
// proto.LogFile): line by line, with the terminal's escape sequences and
// control characters taken out, CRLF ended as LF, and of a line redrawn
// with CR what a terminal would show. A line that is only escapes (what
// Claude Code prints on exit) leaves nothing. A line of the agent's that
// begins as lazy's own lines do is wrapped in an out line, so no agent
// can write a frame or a note. Close ends the last line; the log then
// ends on a newline whatever the agent printed last.
//
// Write never fails: a log that cannot be written must not stop the copy
// of the agent's output (io.MultiWriter stops at the first error); Err
// reports the first failure.
type Capture struct {
	w    io.Writer
	line []byte
	// long says the current line outgrew maxCaptureLine and is being
	// written as it comes.
	long bool
	err  error
}

// NewCapture writes the agent's output to w.
func NewCapture(w io.Writer) *Capture { return &Capture{w: w} }

// Write takes the next bytes of the agent's output.
func (c *Capture) Write(p []byte) (int, error) {
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			c.line = append(c.line, rest...)
			if len(c.line) > maxCaptureLine {
				c.spill()
			}
			break
		}
		c.line = append(c.line, rest[:i]...)
		c.endLine()
		rest = rest[i+1:]
	}
	return len(p), nil
}

// Close ends a last line that lacked its newline.
func (c *Capture) Close() error {
	if len(c.line) > 0 || c.long {
		c.endLine()
	}
	return c.err
}

// Err is the first error writing the log.
func (c *Capture) Err() error { return c.err }

func (c *Capture) write(b []byte) {
	if c.err != nil {
		return
	}
	if _, err := c.w.Write(b); err != nil {
		c.err = err
	}
}

// spill writes what a too-long line holds so far, and the rest of it as
// it comes.
func (c *Capture) spill() {
	c.write([]byte(strings.ReplaceAll(StripTerminal(string(c.line)), "\r", "")))
	c.line, c.long = c.line[:0], true
}

func (c *Capture) endLine() {
	raw := string(c.line)
	c.line = c.line[:0]
	if c.long {
		c.long = false
		c.write(append([]byte(strings.ReplaceAll(StripTerminal(raw), "\r", "")), '\n'))
		return
	}
	if line, ok := CleanLine(raw); ok {
		c.write(append([]byte(line), '\n'))
	}
}

// CleanLine is one line an agent printed on its pty as its log keeps it
// (see Capture): ok is false for a line that was nothing but escapes.
func CleanLine(raw string) (string, bool) {
	raw = strings.TrimRight(raw, "\r")
	s := StripTerminal(raw)
	if i := strings.LastIndexByte(s, '\r'); i >= 0 {
		// Redrawn in place (a progress bar): what was left on screen.
		if after := s[i+1:]; strings.TrimSpace(after) != "" {
			s = after
		} else {
			s = strings.ReplaceAll(s, "\r", "")
		}
	}
	if s == "" && raw != "" {
		return "", false
	}
	if looksLazy(s) {
		return frameLine(proto.LogLine{Lazy: proto.LogOut, Text: s}), true
	}
	return s, true
}

// looksLazy reports an agent's line that a reader could take for one of
// lazy's own: it begins with lazy's prefix, or it is a JSON object with a
// "lazy" key however spelt (a consumer of lazy logs --raw selects lazy's
// lines by that key).
func looksLazy(s string) bool {
	t := strings.TrimLeft(s, " \t")
	if strings.HasPrefix(t, proto.LogLinePrefix) {
		return true
	}
	if !strings.HasPrefix(t, "{") {
		return false
	}
	lower := strings.ToLower(t)
	if !strings.Contains(lower, "lazy") && !strings.Contains(t, `\u`) {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(t), &obj) != nil {
		return false
	}
	for k := range obj {
		if strings.EqualFold(k, "lazy") {
			return true
		}
	}
	return false
}
