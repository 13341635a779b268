package agent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/lazyorch/lazy/sanitize"
)

// ansi matches terminal escape sequences (CSI and OSC) that agents print
// on their pty; a log view shows the text without them.
var ansi = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

// RenderLine turns one line of an agent's log into what a human reads:
// assistant text, tool calls as "→ Tool: argument", results and errors.
// Claude Code stream-json and Codex JSONL events are decoded; any other
// line is shown as printed, without terminal escapes. Every line is safe
// to write to a terminal. Events with nothing to say render to nothing.
func RenderLine(line string) []string {
	line = strings.TrimRight(line, "\r\n")
	trimmed := strings.TrimSpace(line)
	if strings.HasPrefix(trimmed, "{") {
		var ev map[string]json.RawMessage
		if json.Unmarshal([]byte(trimmed), &ev) == nil {
			if out, ok := renderEvent(ev); ok {
				return safeLines(out)
			}
		}
	}
	plain := ansi.ReplaceAllString(line, "")
	if i := strings.LastIndexByte(plain, '\r'); i >= 0 {
		plain = plain[i+1:] // a progress bar redraws the line: keep what was left
	}
	return safeLines([]string{plain})
}

func safeLines(in []string) []string {
	var out []string
	for _, s := range in {
		for _, l := range strings.Split(s, "\n") {
			out = append(out, sanitize.Field(strings.TrimRight(l, "\r")))
		}
	}
	return out
}

func str(ev map[string]json.RawMessage, key string) string {
	var s string
	_ = json.Unmarshal(ev[key], &s)
	return s
}

// renderEvent renders the events of both CLIs; ok is false for JSON that
// is no known event, which is then shown as it is.
func renderEvent(ev map[string]json.RawMessage) ([]string, bool) {
	typ := str(ev, "type")
	switch typ {
	case "system":
		if str(ev, "subtype") == "init" {
			model := str(ev, "model")
			if model == "" {
				return []string{"· session started"}, true
			}
			return []string{"· session started (model " + model + ")"}, true
		}
		return nil, true
	case "assistant", "user":
		var msg struct {
			Content []struct {
				Type    string          `json:"type"`
				Text    string          `json:"text"`
				Name    string          `json:"name"`
				Input   json.RawMessage `json:"input"`
				Content json.RawMessage `json:"content"`
				IsError bool            `json:"is_error"`
			} `json:"content"`
		}
		_ = json.Unmarshal(ev["message"], &msg)
		var out []string
		for _, c := range msg.Content {
			switch c.Type {
			case "text":
				if t := strings.TrimSpace(c.Text); t != "" {
					out = append(out, t)
				}
			case "tool_use":
				out = append(out, "→ "+c.Name+toolArg(c.Input))
			case "tool_result":
				if c.IsError {
					out = append(out, "  ✗ tool error: "+oneLineOf(toolText(c.Content)))
				}
			}
		}
		return out, true
	case "result":
		var r struct {
			Result  string  `json:"result"`
			IsError bool    `json:"is_error"`
			Cost    float64 `json:"total_cost_usd"`
		}
		_ = json.Unmarshal(mustJSON(ev), &r)
		head := "✓ done"
		if r.IsError {
			head = "✗ failed"
		}
		if r.Cost > 0 {
			head += fmt.Sprintf(" ($%.2f)", r.Cost)
		}
		if t := strings.TrimSpace(r.Result); t != "" {
			return []string{head + ": " + t}, true
		}
		return []string{head}, true
	case "thread.started", "turn.started", "turn.completed", "item.started":
		return nil, true
	case "item.completed":
		var it struct {
			Item struct {
				Type    string `json:"type"`
				Text    string `json:"text"`
				Command string `json:"command"`
			} `json:"item"`
		}
		_ = json.Unmarshal(mustJSON(ev), &it)
		switch it.Item.Type {
		case "agent_message", "reasoning":
			return []string{strings.TrimSpace(it.Item.Text)}, true
		case "command_execution":
			return []string{"→ shell: " + oneLineOf(it.Item.Command)}, true
		}
		return nil, true
	case "turn.failed", "error":
		var e struct {
			Message string `json:"message"`
			Error   struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(mustJSON(ev), &e)
		msg := e.Message
		if msg == "" {
			msg = e.Error.Message
		}
		return []string{"✗ " + msg}, true
	}
	return nil, false
}

func mustJSON(ev map[string]json.RawMessage) []byte {
	b, _ := json.Marshal(ev)
	return b
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

func toolText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b []string
	for _, p := range parts {
		b = append(b, p.Text)
	}
	return strings.Join(b, " ")
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
