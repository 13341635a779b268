package agent

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
)

// CodexArgv builds a Codex CLI turn: `codex exec --json -s <sandbox>
// [resume <thread-id>] -- <prompt>`. Flags go before `resume`, and "--"
// keeps a prompt that starts with a dash from being read as an option.
func CodexArgv(prompt, threadID string, readOnly bool) []string {
	sandbox := "workspace-write"
	if readOnly {
		sandbox = "read-only"
	}
	argv := []string{"codex", "exec", "--json", "-s", sandbox}
	if threadID != "" {
		argv = append(argv, "resume", threadID)
	}
	return append(argv, "--", prompt)
}

// CodexStream accumulates a `codex exec --json` run's JSONL events.
type CodexStream struct {
	mu       sync.Mutex
	lines    Lines
	ThreadID string
	Result   string // the last agent_message
	Failed   bool   // turn.failed or error seen
	texts    []string
}

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
	l = strings.TrimSpace(l)
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
	case "item.completed":
		if ev.Item != nil && ev.Item.Type == "agent_message" {
			c.Result = ev.Item.Text
		}
	case "turn.failed":
		c.Failed = true
		if ev.Error != nil {
			c.texts = append(c.texts, ev.Error.Message)
		}
	case "error":
		c.Failed = true
		c.texts = append(c.texts, ev.Message)
	}
}

// Outcome reports whether the run failed and classifies it.
func (c *CodexStream) Outcome(exitCode int) (Failure, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if exitCode == 0 && !c.Failed {
		return Failure{}, false
	}
	text := strings.Join(c.texts, "\n")
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
