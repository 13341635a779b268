package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"unicode"
)

// LogEntry is one readable item of an agent's output: assistant text, a
// tool call, a tool's result, a note (session start, the turn's result
// with its cost) or a plain output line.
type LogEntry struct {
	Kind string `json:"k"` // text, tool, result, note, error, out
	Text string `json:"t"`
}

// Bounds on what the log view reads and keeps.
const (
	logPageEntries = 300       // entries a page renders
	logTailBytes   = 256 << 10 // bytes of the log a page or a poll reads at most
	logEntryChars  = 4000      // characters of one entry
	logToolChars   = 400       // characters of a tool call's input or result
)

// ansi matches terminal escape sequences the pty may carry.
var ansi = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

// clean makes agent output safe to show as text: escapes stripped,
// control characters other than tab and newline dropped, bounded.
func clean(s string, limit int) string {
	s = ansi.ReplaceAllString(s, "")
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
	s = strings.TrimRight(s, " \n")
	if r := []rune(s); len(r) > limit {
		s = string(r[:limit]) + " …"
	}
	return s
}

// logEvent covers the stream-json of Claude Code and the JSONL of Codex.
type logEvent struct {
	Type         string  `json:"type"`
	Subtype      string  `json:"subtype"`
	Model        string  `json:"model"`
	Result       string  `json:"result"`
	IsError      bool    `json:"is_error"`
	TotalCostUSD float64 `json:"total_cost_usd"`
	NumTurns     int     `json:"num_turns"`
	DurationMS   int64   `json:"duration_ms"`
	Message      *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	// Codex.
	Item *struct {
		Type             string `json:"type"`
		Text             string `json:"text"`
		Command          string `json:"command"`
		AggregatedOutput string `json:"aggregated_output"`
		Changes          []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
	} `json:"item"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type contentPart struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
	IsError bool            `json:"is_error"`
}

// renderLine turns one line of the agent log into readable entries, as
// lazy's read surfaces show a turn: what the agent said, which tools it
// called, and the result with its cost. Lines that are not JSON are the
// agent's plain output (the exec agent, or a CLI's error text).
func renderLine(line string) []LogEntry {
	line = strings.TrimSpace(line)
	if line == "" {
		return nil
	}
	if !strings.HasPrefix(line, "{") {
		if t := clean(line, logEntryChars); t != "" {
			return []LogEntry{{"out", t}}
		}
		return nil
	}
	var ev logEvent
	if json.Unmarshal([]byte(line), &ev) != nil {
		return []LogEntry{{"out", clean(line, logEntryChars)}}
	}
	var out []LogEntry
	add := func(kind, text string, limit int) {
		if t := clean(text, limit); t != "" {
			out = append(out, LogEntry{kind, t})
		}
	}
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" {
			add("note", strings.TrimSpace("session started "+ev.Model), 200)
		}
	case "assistant", "user":
		if ev.Message == nil {
			break
		}
		var parts []contentPart
		if json.Unmarshal(ev.Message.Content, &parts) != nil {
			var s string
			if json.Unmarshal(ev.Message.Content, &s) == nil && ev.Type == "assistant" {
				add("text", s, logEntryChars)
			}
			break
		}
		for _, p := range parts {
			switch p.Type {
			case "text":
				if ev.Type == "assistant" {
					add("text", p.Text, logEntryChars)
				}
			case "tool_use":
				add("tool", p.Name+" "+compactJSON(p.Input), logToolChars)
			case "tool_result":
				kind := "result"
				if p.IsError {
					kind = "error"
				}
				add(kind, toolResultText(p.Content), logToolChars)
			}
		}
	case "result":
		var b strings.Builder
		b.WriteString("result")
		if ev.IsError {
			b.WriteString(" (error)")
		}
		if ev.NumTurns > 0 {
			fmt.Fprintf(&b, " · %d turns", ev.NumTurns)
		}
		if ev.DurationMS > 0 {
			fmt.Fprintf(&b, " · %.1fs", float64(ev.DurationMS)/1000)
		}
		if ev.TotalCostUSD > 0 {
			fmt.Fprintf(&b, " · cost $%.4f", ev.TotalCostUSD)
		}
		add("note", b.String(), 200)
		if ev.IsError {
			add("error", ev.Result, logEntryChars)
		}
	case "thread.started":
		add("note", "session started", 200)
	case "item.completed":
		if ev.Item == nil {
			break
		}
		switch ev.Item.Type {
		case "agent_message", "assistant_message":
			add("text", ev.Item.Text, logEntryChars)
		case "command_execution":
			add("tool", "$ "+ev.Item.Command, logToolChars)
			add("result", ev.Item.AggregatedOutput, logToolChars)
		case "file_change":
			var names []string
			for _, c := range ev.Item.Changes {
				names = append(names, c.Kind+" "+c.Path)
			}
			add("tool", "edit "+strings.Join(names, ", "), logToolChars)
		}
	case "turn.failed", "error":
		if ev.Error != nil {
			add("error", ev.Error.Message, logEntryChars)
		}
	}
	return out
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// toolResultText is a tool result's text, whether a string or a list of
// text parts.
func toolResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []contentPart
	if json.Unmarshal(raw, &parts) == nil {
		var texts []string
		for _, p := range parts {
			if p.Text != "" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

// renderChunk renders the complete lines of chunk and reports how many
// bytes they span: a line still being written is left for the next read.
func renderChunk(chunk []byte) ([]LogEntry, int) {
	end := bytes.LastIndexByte(chunk, '\n')
	if end < 0 {
		return nil, 0
	}
	var out []LogEntry
	for line := range strings.SplitSeq(string(chunk[:end]), "\n") {
		out = append(out, renderLine(line)...)
	}
	return out, end + 1
}

// readLog renders the tail of an agent log, the last max entries, and
// returns the offset a live stream continues from.
func readLog(path string, maxEntries int) ([]LogEntry, int64) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0
	}
	start := max(0, fi.Size()-logTailBytes)
	buf := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
		return nil, 0
	}
	skip := 0
	if start > 0 {
		// Started mid-line: that line is not whole.
		skip = bytes.IndexByte(buf, '\n') + 1
	}
	entries, n := renderChunk(buf[skip:])
	if len(entries) > maxEntries {
		entries = entries[len(entries)-maxEntries:]
	}
	return entries, start + int64(skip+n)
}

// readLogFrom renders what was appended to the log since offset. A log
// shorter than offset was replaced: it starts over.
func readLogFrom(path string, offset int64) ([]LogEntry, int64) {
	f, err := os.Open(path)
	if err != nil {
		return nil, offset
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, offset
	}
	if fi.Size() < offset {
		offset = 0
	}
	if fi.Size() == offset {
		return nil, offset
	}
	if fi.Size()-offset > logTailBytes {
		// Far behind: skip to the tail, as a page load would.
		entries, off := readLog(path, logPageEntries)
		return entries, off
	}
	buf := make([]byte, fi.Size()-offset)
	if _, err := f.ReadAt(buf, offset); err != nil && err != io.EOF {
		return nil, offset
	}
	entries, n := renderChunk(buf)
	return entries, offset + int64(n)
}
