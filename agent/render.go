package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/proto"
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
	KindTurn   = "turn"   // where an agent launch begins
	KindHold   = "hold"   // lazy held the task: a budget, a usage limit
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

// TurnRule begins the line a terminal shows where an agent launch
// begins: "── turn 3 (unblock) · claude · 2026-12-06 20:15:18 UTC ──".
const TurnRule = "── turn "

// Render turns one line of an agent's log into the entries a page shows:
// assistant text, tool calls with their input, tool output, notes and
// errors, each with its kind. Claude Code stream-json and Codex JSONL
// events are decoded, and lazy's own lines (a launch's frame, a hold, a
// gate that failed); any other line is one KindOut entry. JSON that is no
// known event, and events with nothing to say, render to nothing.
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
// the same events as Render, a tool call as "→ Tool: argument" where a
// page shows its whole input, a launch's frame as a rule (TurnRule). JSON
// that is no known event is shown as printed. Every line is safe to write
// to a terminal: escape sequences are gone and other control characters
// escaped, not dropped.
func RenderLine(line string) []string {
	var out []string
	for _, it := range decode(line) {
		if !it.onTerm {
			continue
		}
		for _, l := range strings.Split(it.term, "\n") {
			out = append(out, sanitize.Display(strings.TrimRight(StripTerminal(l), "\r")))
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
// They say the same; a page has room for a tool's whole input where a
// terminal shows the one argument that says what the call does.
type item struct {
	kind   string
	page   string
	limit  int
	term   string
	onTerm bool
	// toolDone marks what a tool call returned (its kind says whether
	// it failed), for ToolCounter.
	toolDone bool
}

func both(kind, page string, limit int, term string) item {
	return item{kind: kind, page: page, limit: limit, term: term, onTerm: true}
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
	Errors       []string        `json:"errors"`
	// Claude's api_retry notices.
	Attempt      int   `json:"attempt"`
	MaxRetries   int   `json:"max_retries"`
	RetryDelayMS int64 `json:"retry_delay_ms"`
	ErrorStatus  *int  `json:"error_status"`
	// Claude's rate_limit_event.
	RateLimit *struct {
		Status   string `json:"status"`
		ResetsAt int64  `json:"resetsAt"`
		Type     string `json:"rateLimitType"`
	} `json:"rate_limit_info"`
	// Codex's thread id and a turn's usage.
	ThreadID string `json:"thread_id"`
	Usage    struct {
		Input  int64 `json:"input_tokens"`
		Cached int64 `json:"cached_input_tokens"`
		Output int64 `json:"output_tokens"`
	} `json:"usage"`
	Item  codexItem       `json:"item"`
	Error json.RawMessage `json:"error"`
}

// codexItem is the item of Codex's item.* events.
type codexItem struct {
	Type             string          `json:"type"`
	Text             string          `json:"text"`
	Message          string          `json:"message"`
	Command          string          `json:"command"`
	AggregatedOutput string          `json:"aggregated_output"`
	ExitCode         *int            `json:"exit_code"`
	Status           string          `json:"status"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           json.RawMessage `json:"result"`
	Error            json.RawMessage `json:"error"`
	Query            string          `json:"query"`
	Changes          []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Items []struct {
		Text      string `json:"text"`
		Completed bool   `json:"completed"`
	} `json:"items"`
}

type contentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Content  json.RawMessage `json:"content"`
	IsError  bool            `json:"is_error"`
}

// decode is the one reading of a log line both renderers share.
func decode(line string) []item {
	line = strings.TrimRight(line, "\r\n")
	if l, ok := proto.ParseLogLine(line); ok {
		return lazyItems(l)
	}
	// An older lazy's log has the terminal's escapes in it, the exit
	// escapes of one launch glued to the next one's first event: without
	// them the event reads.
	clean, ok := CleanLine(line)
	if !ok {
		return nil
	}
	if l, ok := proto.ParseLogLine(clean); ok {
		return lazyItems(l) // only an out line: CleanLine wraps an agent's line that looks like lazy's
	}
	trimmed := strings.TrimSpace(clean)
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
		return []item{{kind: KindOut, term: clean, onTerm: true}}
	}
	return []item{both(KindOut, trimmed, entryChars, clean)}
}

// lazyItems renders lazy's own lines: a launch's frame as a rule, a
// note with the command that carries the task on, a line the agent
// printed.
func lazyItems(l proto.LogLine) []item {
	switch l.Lazy {
	case proto.LogTurn:
		what := fmt.Sprintf("turn %d (%s)", l.Turn, l.Kind)
		if l.Run > 1 {
			what = fmt.Sprintf("turn %d (%s, run %d", l.Turn, l.Kind, l.Run)
			if l.Why != "" {
				what += ": " + l.Why
			}
			what += ")"
		}
		if l.Agent != "" {
			what += " · " + agentLabel(l.Agent, l.Model)
		}
		if !l.At.IsZero() {
			what += " · " + l.At.Local().Format("2006-01-02 15:04:05 MST")
		}
		return []item{both(KindTurn, what, noteChars, "── "+what+" ──")}
	case proto.LogNote:
		text := noteLine(l.Text)
		kind := KindHold
		if l.Kind == proto.NoteGate {
			kind = KindError
		}
		page, term := text, "⏸ "+text
		switch {
		case kind == KindError:
			term = "✗ " + text
		case l.Kind == proto.NoteEnded:
			kind, term = KindNote, "· "+text
		}
		if l.Next != "" {
			page += "\nnext: " + l.Next
			term += "\n  next: " + noteLine(l.Next)
		}
		return []item{both(kind, page, entryChars, term)}
	case proto.LogOut:
		return []item{both(KindOut, strings.TrimSpace(l.Text), entryChars, printed(l.Text))}
	}
	return nil
}

// noteLine is a note's text on one line, bounded (a path in it may be
// long; the command after it must stay whole).
func noteLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 1000 {
		s = string(r[:999]) + "…"
	}
	return s
}

// agentLabel names an agent and the model it runs: "claude", "codex
// (gpt-5-codex)".
func agentLabel(name, model string) string {
	if model == "" {
		return name
	}
	return name + " (" + model + ")"
}

// printed is a plain output line as a terminal left it: escapes
// stripped, and of a line redrawn with CR (a progress bar) what was left.
func printed(line string) string {
	plain := StripTerminal(line)
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
		return ev.systemItems(), true
	case "assistant", "user":
		return ev.messageItems(), true
	case "result":
		return ev.resultItems(), true
	case "rate_limit_event":
		return ev.rateLimitItems(), true
	case "thread.started":
		return []item{both(KindNote, "session started (codex)", noteChars, "· session started (codex)")}, true
	case "turn.started", "item.updated":
		return nil, true
	case "turn.completed":
		return ev.codexDone(), true
	case "item.started":
		return ev.codexStarted(), true
	case "item.completed":
		return ev.codexItems(), true
	case "turn.failed", "error":
		msg := ev.errorText()
		return []item{both(KindError, msg, entryChars, "✗ "+msg)}, true
	}
	return nil, false
}

// errorText is the message of an error event: Codex's "message" string
// or its "error" object, Claude's "error" string.
func (ev *event) errorText() string {
	var msg string
	if json.Unmarshal(ev.Message, &msg) == nil && msg != "" {
		return msg
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(ev.Error, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	if json.Unmarshal(ev.Error, &msg) == nil {
		return msg
	}
	return ""
}

func (ev *event) systemItems() []item {
	switch ev.Subtype {
	case "init":
		msg := "session started"
		if ev.Model != "" {
			msg += " (model " + ev.Model + ")"
		}
		return []item{both(KindNote, msg, noteChars, "· "+msg)}
	case "api_retry":
		why := ev.errorText()
		if ev.ErrorStatus != nil {
			why = fmt.Sprintf("%d %s", *ev.ErrorStatus, why)
		}
		if why == "" || why == "unknown" {
			why = "no answer"
		}
		msg := fmt.Sprintf("API error (%s): retry %d of %d in %.1fs", strings.TrimSpace(why), ev.Attempt, ev.MaxRetries, float64(ev.RetryDelayMS)/1000)
		return []item{both(KindNote, msg, noteChars, "· "+msg)}
	case "compact_boundary":
		return []item{both(KindNote, "conversation compacted", noteChars, "· conversation compacted")}
	}
	return nil
}

func (ev *event) rateLimitItems() []item {
	rl := ev.RateLimit
	if rl == nil || rl.Status == "allowed" || rl.Status == "" {
		return nil
	}
	msg := "usage limit " + strings.ReplaceAll(rl.Status, "_", " ")
	if rl.Type != "" {
		msg += " (" + strings.ReplaceAll(rl.Type, "_", " ") + ")"
	}
	if rl.ResetsAt > 0 {
		msg += "; resets " + time.Unix(rl.ResetsAt, 0).UTC().Format("2006-01-02 15:04 UTC")
	}
	if rl.Status == "rejected" {
		return []item{both(KindError, msg, noteChars, "✗ "+msg)}
	}
	return []item{both(KindNote, msg, noteChars, "· "+msg)}
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
			return []item{both(KindText, s, entryChars, strings.TrimSpace(s))}
		}
		return nil
	}
	var out []item
	for _, p := range parts {
		switch p.Type {
		case "text":
			t := strings.TrimSpace(p.Text)
			if t == "" {
				continue
			}
			if ev.Type == "assistant" {
				out = append(out, both(KindText, p.Text, entryChars, t))
			} else {
				out = append(out, both(KindNote, p.Text, entryChars, "» "+t))
			}
		case "thinking":
			if t := strings.TrimSpace(p.Thinking); t != "" {
				out = append(out, both(KindNote, "thinking: "+t, entryChars, "· thinking: "+oneLineOf(t)))
			}
		case "tool_use":
			out = append(out, both(KindTool, p.Name+" "+compactJSON(p.Input), toolChars, "→ "+p.Name+toolArg(p.Input)))
		case "tool_result":
			out = append(out, resultItem(strings.Join(nonEmpty(toolResultTexts(p.Content)), "\n"), p.IsError, ""))
		}
	}
	return out
}

// resultItem is a tool's output, the same on every surface: compact
// when the tool succeeded (its first line and how many more there are),
// in full (up to entryChars) when it failed. what names a command whose
// start the log may not show.
func resultItem(text string, failed bool, what string) item {
	text = strings.TrimRight(text, " \n")
	if !failed {
		c := compactResult(text)
		it := both(KindResult, c, toolChars, "  ← "+c)
		it.toolDone = true
		return it
	}
	if what != "" {
		text = strings.TrimSpace(what + ": " + text)
	}
	if text == "" {
		text = "failed"
	}
	it := both(KindError, text, entryChars, "  ✗ "+strings.ReplaceAll(Plain(text, entryChars), "\n", "\n    "))
	it.toolDone = true
	return it
}

// compactResult is a successful tool's output in one line.
func compactResult(text string) string {
	lines := nonEmpty(strings.Split(strings.TrimSpace(text), "\n"))
	if len(lines) == 0 {
		return "(no output)"
	}
	first := oneLineOf(lines[0])
	if r := []rune(first); len(r) > 160 {
		first = string(r[:159]) + "…"
	}
	switch more := len(lines) - 1; {
	case more == 1:
		first += " (+1 line)"
	case more > 1:
		first += fmt.Sprintf(" (+%d lines)", more)
	}
	return first
}

func (ev *event) resultItems() []item {
	var b strings.Builder
	b.WriteString("result")
	if ev.IsError {
		b.WriteString(" (error)")
	}
	switch {
	case ev.NumTurns == 1:
		b.WriteString(" · 1 turn")
	case ev.NumTurns > 1:
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
	why := strings.TrimSpace(ev.Result)
	if why == "" && ev.IsError {
		why = strings.Join(nonEmpty(ev.Errors), "; ")
		if why == "" && ev.Subtype != "" && ev.Subtype != "success" {
			why = strings.ReplaceAll(ev.Subtype, "_", " ")
		}
	}
	if why != "" {
		term += ": " + strings.ReplaceAll(why, "\n", "\n  ")
	}
	out := []item{both(KindNote, b.String(), noteChars, term)}
	if ev.IsError && why != "" {
		// The terminal line carries the failure already.
		out = append(out, item{kind: KindError, page: why, limit: entryChars})
	}
	return out
}

// codexDone is the end of a Codex turn, with its tokens (Codex reports
// no price).
func (ev *event) codexDone() []item {
	msg := "done"
	if u := ev.Usage; u.Input > 0 || u.Output > 0 {
		msg += fmt.Sprintf(" (%d tokens in, %d out)", u.Input, u.Output)
	}
	return []item{both(KindNote, "result · "+msg, noteChars, "✓ "+msg)}
}

// codexStarted renders the start of a Codex item that takes time: a
// command or a tool call shows when it starts, its output when it ends.
func (ev *event) codexStarted() []item {
	it := ev.Item
	switch it.Type {
	case "command_execution":
		return []item{both(KindTool, "$ "+it.Command, toolChars, "→ shell: "+oneLineOf(it.Command))}
	case "mcp_tool_call":
		name := it.Server + "." + it.Tool
		return []item{both(KindTool, name+" "+compactJSON(it.Arguments), toolChars, "→ "+name+toolArg(it.Arguments))}
	}
	return nil
}

func (ev *event) codexItems() []item {
	it := ev.Item
	switch it.Type {
	case "agent_message", "assistant_message":
		return []item{both(KindText, it.Text, entryChars, strings.TrimSpace(it.Text))}
	case "reasoning":
		if t := strings.TrimSpace(it.Text); t != "" {
			return []item{both(KindNote, "thinking: "+t, entryChars, "· thinking: "+oneLineOf(t))}
		}
	case "command_execution":
		failed := it.Status == "failed" || it.Status == "declined" || (it.ExitCode != nil && *it.ExitCode != 0)
		what := ""
		if failed {
			what = "`" + oneLineOf(it.Command) + "`"
			switch {
			case it.ExitCode != nil:
				what += fmt.Sprintf(" exited %d", *it.ExitCode)
			case it.Status != "":
				what += " " + it.Status
			}
		}
		return []item{resultItem(it.AggregatedOutput, failed, what)}
	case "file_change":
		var names []string
		for _, c := range it.Changes {
			names = append(names, c.Kind+" "+c.Path)
		}
		msg := "edit " + strings.Join(names, ", ")
		done := both(KindTool, msg, toolChars, "✎ "+oneLineOf(strings.Join(names, ", ")))
		if it.Status == "failed" {
			done = both(KindError, msg+" failed", entryChars, "  ✗ "+msg+" failed")
		}
		done.toolDone = true
		return []item{done}
	case "mcp_tool_call":
		name := it.Server + "." + it.Tool
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(it.Error, &e) == nil && e.Message != "" || it.Status == "failed" {
			return []item{resultItem(e.Message, true, name)}
		}
		var res struct {
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(it.Result, &res)
		return []item{resultItem(strings.Join(nonEmpty(toolResultTexts(res.Content)), "\n"), false, "")}
	case "web_search":
		return []item{both(KindTool, "web search "+it.Query, toolChars, "→ web search: "+oneLineOf(it.Query))}
	case "todo_list":
		var steps []string
		for _, s := range it.Items {
			box := "[ ] "
			if s.Completed {
				box = "[x] "
			}
			steps = append(steps, box+strings.TrimSpace(s.Text))
		}
		if len(steps) > 0 {
			return []item{both(KindNote, "plan:\n"+strings.Join(steps, "\n"), entryChars, "· plan: "+strings.Join(steps, "\n        "))}
		}
	case "error":
		// Codex's own warnings (a model it has no metadata for): the
		// turn goes on.
		if m := strings.TrimSpace(it.Message); m != "" {
			return []item{both(KindNote, "warning: "+m, entryChars, "· warning: "+oneLineOf(m))}
		}
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
