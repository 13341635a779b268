package agent

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
)

// CodexArgv builds a Codex CLI turn: `codex exec --json <posture flags>
// [--model=<model>] [resume <thread-id>] -- <prompt>`. Flags go before
// `resume` (which takes neither -s nor --add-dir), and "--" keeps a
// prompt that starts with a dash from being read as an option.
func CodexArgv(t Turn) []string {
	argv := append([]string{"codex", "exec", "--json"}, TurnPermissions("codex", t.ReadOnly, t.Grants).Flags...)
	if t.Model != "" {
		argv = append(argv, "--model="+t.Model)
	}
	if t.ResumeID != "" {
		argv = append(argv, "resume", t.ResumeID)
	}
	return append(argv, "--", t.Prompt)
}

// CodexStream accumulates a `codex exec --json` run's JSONL events.
type CodexStream struct {
	mu       sync.Mutex
	lines    Lines
	ThreadID string
	Result   string // the last agent_message
	Failed   bool   // turn.failed or error seen
	texts    []string
	// notice is the latest retry notice, the reason of last resort when
	// the run ends without saying why (killed mid-retry).
	notice   string
	final    string // turn.failed's message
	activity Activity
	usage    Usage
}

// Usage returns the tokens Codex reported (it reports no price).
func (c *CodexStream) Usage() Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.usage
}

// codexReconnect matches Codex's retry notices, which arrive as "error"
// events ("Reconnecting... 2/5 (stream disconnected ...)", "Reconnecting...
// waiting for network (...)") but are not failures.
var codexReconnect = lazyRegexp(`(?i)^\s*reconnecting\.\.\.(?:\s*(\d+)/\d+)?`)

type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Item *struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"item"`
	Usage *struct {
		Input  int64 `json:"input_tokens"`
		Cached int64 `json:"cached_input_tokens"`
		Output int64 `json:"output_tokens"`
	} `json:"usage"`
}

// Write implements io.Writer for any chunking of the stream.
func (c *CodexStream) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines.Feed(p, c.line)
	return len(p), nil
}

// Close parses a last line without a newline.
func (c *CodexStream) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines.Flush(c.line)
}

func (c *CodexStream) line(l string) {
	l = strings.TrimSpace(StripTerminal(l))
	if !strings.HasPrefix(l, "{") {
		if l != "" {
			c.texts = append(c.texts, l)
		}
		return
	}
	var ev codexEvent
	if json.Unmarshal([]byte(l), &ev) != nil {
		return
	}
	switch ev.Type {
	case "thread.started":
		if ev.ThreadID != "" {
			c.ThreadID = ev.ThreadID
		}
	case "item.started", "item.updated", "item.completed", "turn.completed":
		if ev.Item != nil && ev.Item.Type == "error" {
			return // a warning item ("Model metadata ... not found"), not work
		}
		c.activity.Work++
		c.activity.Retry, c.activity.RetryAttempt = nil, 0
		if ev.Type == "item.completed" && ev.Item != nil && ev.Item.Type == "agent_message" {
			c.Result = ev.Item.Text
		}
		if u := ev.Usage; ev.Type == "turn.completed" && u != nil {
			// input_tokens counts the cached ones too.
			c.usage.InputTokens += max(u.Input-u.Cached, 0)
			c.usage.CachedInputTokens += u.Cached
			c.usage.OutputTokens += u.Output
		}
	case "turn.failed":
		c.Failed = true
		if ev.Error != nil && ev.Error.Message != "" {
			// The turn's own verdict is the reason; earlier error events
			// usually repeat it.
			c.final = ev.Error.Message
		}
	case "error":
		if m := codexReconnect.FindStringSubmatch(ev.Message); m != nil {
			f := ClassifyCodex(Signals{Text: ev.Message})
			if f.Class == Unknown {
				// Codex retries what it believes is a dropped stream.
				f.Class = TransientUnreachable
			}
			n, _ := strconv.Atoi(m[1])
			c.activity.Retry, c.activity.RetryAttempt = &f, n
			c.notice = ev.Message
			return
		}
		c.Failed = true
		c.texts = append(c.texts, ev.Message)
	}
}

// Activity reports the work seen and any reconnecting in progress.
func (c *CodexStream) Activity() Activity {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.activity.snapshot()
}

// Outcome reports whether the run failed and classifies it.
func (c *CodexStream) Outcome(exitCode int) (Failure, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if exitCode == 0 && !c.Failed {
		return Failure{}, false
	}
	text := c.final
	if text == "" {
		text = strings.Join(c.texts, "\n")
	}
	if text == "" {
		text = c.notice
	}
	if text == "" {
		text = "codex exited with status " + strconv.Itoa(exitCode)
	}
	return ClassifyCodex(Signals{Text: text, ExitCode: exitCode}), true
}

// Session returns the thread id to resume.
func (c *CodexStream) Session() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ThreadID
}

// Final returns the last agent message.
func (c *CodexStream) Final() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Result
}

// Progress returns the latest agent message, bounded to one line.
func (c *CodexStream) Progress() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return progressLine(c.Result)
}
