package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/lazyorch/lazy/internal/sanitize"
)

// Kinds of Entry: what an item of agent output is. The web view uses the
// kind as the entry's CSS class.
const (
	KindText   = "text"   // what the agent said
	KindTool   = "tool"   // a tool call or shell command
	KindResult = "result" // a tool's output
	KindNote   = "note"   // session start; the turn's end with its cost
	KindError  = "error"  // a failed tool, turn or API call
	KindOut    = "out"    // a line the agent printed outside any event
)

// Bounds on the text of one page entry: a page shows the whole item,
// so a huge message or tool input must not become a huge page.
const (
	entryChars = 4000 // characters of one entry
	toolChars  = 400  // characters of a tool call's input or result
	noteChars  = 200  // characters of a note
)

// Entry is one readable item of an agent's output, as a page shows it.
type Entry struct {
	Kind string // one of the Kind constants
	Text string // safe text: no terminal escapes or control characters but tab and newline; bounded
}

// ansi matches terminal escape sequences (CSI and OSC) that agents print
// on their pty; a log view shows the text without them.
// It is compiled on first use, not by every lazy process at start.
var ansi = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)
})

// Render turns one line of an agent's log into the entries a page shows:
// assistant text, tool calls with their input, tool output, notes and
// errors, each with its kind. Claude Code stream-json and Codex JSONL
// events are decoded; any other line is one KindOut entry. JSON that is
// no known event, and events with nothing to say, render to nothing.
func Render(line string) []Entry {
	var out []Entry
	for _, it := range decode(line) {
		if t := Plain(it.page, it.limit); t != "" {
			out = append(out, Entry{Kind: it.kind, Text: t})
		}
	}
	return out
}

// RenderLine turns one line of an agent's log into what a terminal shows:
// assistant text, tool calls as "→ Tool: argument", failures and the
// turn's result. It says less than Render (a tool's one argument, not its
// whole input; no tool output) so a followed log stays readable; JSON that
// is no known event is shown as printed. Every line is safe to write to a
// terminal: control characters are escaped, not dropped.
func RenderLine(line string) []string {
	var out []string
	for _, it := range decode(line) {
		if !it.onTerm {
			continue
		}
		for _, l := range strings.Split(it.term, "\n") {
			out = append(out, sanitize.Display(strings.TrimRight(l, "\r")))
		}
	}
	return out
}

// Plain is s as text a page can show: terminal escapes stripped, control
// characters other than tab and newline dropped, trailing blanks trimmed,
// and at most limit characters.
func Plain(s string, limit int) string {
	s = ansi().ReplaceAllString(s, "")
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

// item is one piece of agent output as both surfaces render it, before
// each makes it safe: a page shows page (up to limit characters) unless
// it is empty; a terminal shows term if onTerm (an empty line is a line).
// The two differ on purpose: a page has room for a tool's whole input and
// output, a followed terminal log shows one line per call.
type item struct {
	kind   string
	page   string
	limit  int
	term   string
	onTerm bool
}

func both(kind, page string, limit int, term string) item {
	return item{kind: kind, page: page, limit: limit, term: term, onTerm: true}
}

func pageOnly(kind, page string, limit int) item {
	return item{kind: kind, page: page, limit: limit}
}

func termOnly(kind, term string) item {
	return item{kind: kind, term: term, onTerm: true}
}

// event covers the stream-json events of Claude Code and the JSONL
// events of Codex. A field of an unexpected type is left empty.
type event struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Model   string `json:"model"`
	// Message is Claude's message object, or Codex's error text.
	Message      json.RawMessage `json:"message"`
	Result       string          `json:"result"`
	IsError      bool            `json:"is_error"`
	TotalCostUSD float64         `json:"total_cost_usd"`
	NumTurns     int             `json:"num_turns"`
	DurationMS   int64           `json:"duration_ms"`
	Item         struct {
		Type             string `json:"type"`
		Text             string `json:"text"`
		Command          string `json:"command"`
		AggregatedOutput string `json:"aggregated_output"`
		Changes          []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
	} `json:"item"`
	Error struct {
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

// decode is the one reading of a log line both renderers share.
func decode(line string) []item {
	line = strings.TrimRight(line, "\r\n")
	trimmed := strings.TrimSpace(line)
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		var ev event
		// A type mismatch leaves that field empty and the rest decoded,
		// which is all a log view needs; the line is valid JSON already.
		_ = json.Unmarshal([]byte(trimmed), &ev)
		if items, ok := ev.items(); ok {
			return items
		}
		// JSON but no event we know: a terminal shows it as printed, a
		// page leaves it out.
		return []item{termOnly(KindOut, printed(line))}
	}
	return []item{both(KindOut, trimmed, entryChars, printed(line))}
}

// printed is a plain output line as a terminal left it: escapes
// stripped, and of a line redrawn with CR (a progress bar) what was left.
func printed(line string) string {
	plain := ansi().ReplaceAllString(line, "")
	if i := strings.LastIndexByte(plain, '\r'); i >= 0 {
		plain = plain[i+1:]
	}
	return plain
}

// items renders the events of both CLIs; ok is false for an event type
// neither has.
func (ev *event) items() ([]item, bool) {
	switch ev.Type {
	case "system":
		if ev.Subtype != "init" {
			return nil, true
		}
		term := "· session started"
		if ev.Model != "" {
			term += " (model " + ev.Model + ")"
		}
		return []item{both(KindNote, strings.TrimSpace("session started "+ev.Model), noteChars, term)}, true
	case "assistant", "user":
		return ev.messageItems(), true
	case "result":
		return ev.resultItems(), true
	case "thread.started":
		return []item{pageOnly(KindNote, "session started", noteChars)}, true
	case "turn.started", "turn.completed", "item.started":
		return nil, true
	case "item.completed":
		return ev.codexItems(), true
	case "turn.failed", "error":
		var msg string
		_ = json.Unmarshal(ev.Message, &msg)
		if msg == "" {
			msg = ev.Error.Message
		}
		return []item{both(KindError, msg, entryChars, "✗ "+msg)}, true
	}
	return nil, false
}

func (ev *event) messageItems() []item {
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(ev.Message, &msg)
	var parts []contentPart
	if json.Unmarshal(msg.Content, &parts) != nil {
		var s string
		if json.Unmarshal(msg.Content, &s) == nil && ev.Type == "assistant" {
			return []item{pageOnly(KindText, s, entryChars)}
		}
		return nil
	}
	var out []item
	for _, p := range parts {
		switch p.Type {
		case "text":
			// A page shows what the assistant said; a terminal also the
			// user's text.
			it := item{kind: KindText}
			if ev.Type == "assistant" {
				it.page, it.limit = p.Text, entryChars
			}
			if t := strings.TrimSpace(p.Text); t != "" {
				it.term, it.onTerm = t, true
			}
			out = append(out, it)
		case "tool_use":
			out = append(out, both(KindTool, p.Name+" "+compactJSON(p.Input), toolChars, "→ "+p.Name+toolArg(p.Input)))
		case "tool_result":
			texts := toolResultTexts(p.Content)
			if !p.IsError {
				out = append(out, pageOnly(KindResult, strings.Join(nonEmpty(texts), "\n"), toolChars))
				continue
			}
			out = append(out, both(KindError, strings.Join(nonEmpty(texts), "\n"), toolChars,
				"  ✗ tool error: "+oneLineOf(strings.Join(texts, " "))))
		}
	}
	return out
}

func (ev *event) resultItems() []item {
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
	term := "✓ done"
	if ev.IsError {
		term = "✗ failed"
	}
	if ev.TotalCostUSD > 0 {
		term += fmt.Sprintf(" ($%.2f)", ev.TotalCostUSD)
	}
	if t := strings.TrimSpace(ev.Result); t != "" {
		term += ": " + t
	}
	out := []item{both(KindNote, b.String(), noteChars, term)}
	if ev.IsError {
		// The terminal line carries the failure already.
		out = append(out, pageOnly(KindError, ev.Result, entryChars))
	}
	return out
}

func (ev *event) codexItems() []item {
	it := ev.Item
	switch it.Type {
	case "agent_message":
		return []item{both(KindText, it.Text, entryChars, strings.TrimSpace(it.Text))}
	case "assistant_message":
		return []item{pageOnly(KindText, it.Text, entryChars)}
	case "reasoning":
		return []item{termOnly(KindText, strings.TrimSpace(it.Text))}
	case "command_execution":
		return []item{
			both(KindTool, "$ "+it.Command, toolChars, "→ shell: "+oneLineOf(it.Command)),
			pageOnly(KindResult, it.AggregatedOutput, toolChars),
		}
	case "file_change":
		var names []string
		for _, c := range it.Changes {
			names = append(names, c.Kind+" "+c.Path)
		}
		return []item{pageOnly(KindTool, "edit "+strings.Join(names, ", "), toolChars)}
	}
	return nil
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// toolArg is the one argument that says what a tool call does: the
// command, the file, the pattern; else the input's keys.
func toolArg(raw json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil || len(in) == 0 {
		return ""
	}
	for _, k := range []string{"command", "file_path", "path", "pattern", "url", "query", "description"} {
		if s, ok := in[k].(string); ok && s != "" {
			return ": " + oneLineOf(s)
		}
	}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return " (" + strings.Join(keys, ", ") + ")"
}

// toolResultTexts are the texts of a tool result, whether one string or
// a list of text parts.
func toolResultTexts(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var parts []contentPart
	_ = json.Unmarshal(raw, &parts)
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		texts = append(texts, p.Text)
	}
	return texts
}

func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func oneLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return s
}
