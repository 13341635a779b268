package agent

import "sync"

// ToolTally is how many tool calls an agent run made that returned, and
// how many of them failed (a tool error, a command that exited non-zero
// or was declined, a file edit that did not apply), read as lazy logs
// reads them.
type ToolTally struct {
	Calls, Failed int
}

// AllFailed reports whether the run made tool calls and every one of
// them failed: an agent that worked blind (no permission, a broken
// environment) and may have reported success anyway.
func (t ToolTally) AllFailed() bool { return t.Calls > 0 && t.Failed == t.Calls }

// ToolCounter tallies the tool calls in an agent's output as it arrives
// (Claude's stream-json, Codex's JSONL; any other output has none): an
// io.Writer for any chunking of the stream.
type ToolCounter struct {
	mu    sync.Mutex
	lines Lines
	t     ToolTally
}

// Write implements io.Writer.
func (c *ToolCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines.Feed(p, c.line)
	return len(p), nil
}

// Tally is the count so far, a last line without its newline included.
func (c *ToolCounter) Tally() ToolTally {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines.Flush(c.line)
	return c.t
}

func (c *ToolCounter) line(l string) {
	for _, it := range decode(l) {
		if it.toolDone {
			c.t.Calls++
			if it.kind == KindError {
				c.t.Failed++
			}
		}
	}
}
