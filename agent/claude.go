package agent

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
)

// ClaudeReadOnlyDenied lists the tools a read-only Claude turn may not use.
const ClaudeReadOnlyDenied = "Edit,Write,MultiEdit,NotebookEdit,Bash"

// ClaudeArgv builds a Claude Code turn (reference: agent-clis.md):
// print mode, stream-json (which requires --verbose), --resume=<id> with
// "=", the posture's flags, lazy's MCP server, one --allowedTools for the
// server's tools and the posture's shell commands, and "--" before the
// prompt so no multi-valued flag swallows it.
func ClaudeArgv(t Turn) []string {
	argv := []string{"claude", "-p", "--output-format", "stream-json", "--verbose"}
	if t.ResumeID != "" {
		argv = append(argv, "--resume="+t.ResumeID)
	}
	if t.Model != "" {
		argv = append(argv, "--model="+t.Model)
	}
	if t.MaxBudgetUSD > 0 {
		// What is left of the tightest budget: the CLI stops itself
		// there, between two model calls, instead of being killed.
		argv = append(argv, "--max-budget-usd="+strconv.FormatFloat(t.MaxBudgetUSD, 'f', 4, 64))
	}
	perm := TurnPermissions("claude", t.ReadOnly, t.Grants)
	argv = append(argv, perm.Flags...)
	allowed := perm.AllowedTools
	if t.MCP != nil {
		// In -p mode Claude denies MCP tools that were not allowed, in
		// every permission mode: allowing the server "mcp__lazy" lets
		// lazy's tools through, and only lazy's.
		argv = append(argv, "--mcp-config="+claudeMCPConfig(t.MCP))
		allowed = append([]string{ClaudeMCPAllow}, allowed...)
	}
	if len(allowed) > 0 {
		argv = append(argv, "--allowedTools="+strings.Join(allowed, ","))
	}
	return append(argv, "--", t.Prompt)
}

// ClaudeStream accumulates what a Claude Code stream-json run said. Feed it
// output with Write (any chunking); unknown events and non-JSON lines are
// passed over, since CLI versions drift.
type ClaudeStream struct {
	mu    sync.Mutex
	lines Lines

	SessionID   string
	Result      string
	HaveResult  bool
	IsError     bool
	Subtype     string
	CostUSD     float64
	progress    string // the latest assistant text, for status.json
	Signals     Signals
	errorsTexts []string
	activity    Activity
	usage       Usage // the result event's totals
}

// Usage returns the run's cost and tokens from its result event.
func (c *ClaudeStream) Usage() Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.usage
}

type claudeEvent struct {
	Type         string  `json:"type"`
	Subtype      string  `json:"subtype"`
	SessionID    string  `json:"session_id"`
	Result       string  `json:"result"`
	IsError      bool    `json:"is_error"`
	TotalCostUSD float64 `json:"total_cost_usd"`
	// Errors are a failed result's own messages ("Reached maximum
	// budget ($0.5)").
	Errors []string `json:"errors"`
	Usage  *struct {
		Input         int64 `json:"input_tokens"`
		CacheCreation int64 `json:"cache_creation_input_tokens"`
		CacheRead     int64 `json:"cache_read_input_tokens"`
		Output        int64 `json:"output_tokens"`
	} `json:"usage"`
	APIErrorStatus int    `json:"api_error_status"`
	APIError       string `json:"api_error"` // connection_failed, ...
	Error          string `json:"error"`
	// api_retry notices: the CLI's own attempt count and the HTTP status
	// it got (null when it could not connect).
	Attempt         int            `json:"attempt"`
	ErrorStatus     *int           `json:"error_status"`
	IsAPIErrorMsg   bool           `json:"is_api_error_message"`
	RateLimitInfoRL *rateLimitInfo `json:"rate_limit_info"`
	// APIErrorParams carries a usage limit's details on the synthetic
	// error message (api_error "usage_limit_reached").
	APIErrorParams *struct {
		RateLimitInfo *rateLimitInfo `json:"rate_limit_info"`
	} `json:"api_error_params"`
	// Model is the session's model (system/init); ModelUsage is the
	// result's per-model totals, which carry the tokens when the
	// result's own usage reads zero (as 2.1.x reports it).
	Model      string `json:"model"`
	ModelUsage map[string]struct {
		Input         int64   `json:"inputTokens"`
		Output        int64   `json:"outputTokens"`
		CacheRead     int64   `json:"cacheReadInputTokens"`
		CacheCreation int64   `json:"cacheCreationInputTokens"`
		CostUSD       float64 `json:"costUSD"`
	} `json:"modelUsage"`
	Message *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"message"`
}

// rateLimitInfo is Claude's rate_limit_info: resetsAt is unix seconds
// (Claude Code 2.1 writes camelCase; resets_at is read too).
type rateLimitInfo struct {
	Status    string `json:"status"`
	ResetsAt  int64  `json:"resetsAt"`
	ResetsAt_ int64  `json:"resets_at"` //nolint:revive // the snake_case spelling of older CLIs
}

func (r *rateLimitInfo) reset() int64 {
	if r.ResetsAt != 0 {
		return r.ResetsAt
	}
	return r.ResetsAt_
}

// Write implements io.Writer.
func (c *ClaudeStream) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines.Feed(p, c.line)
	return len(p), nil
}

// Close parses a final line that lacked its newline.
func (c *ClaudeStream) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines.Flush(c.line)
}

func (c *ClaudeStream) line(l string) {
	l = strings.TrimSpace(StripTerminal(l))
	if !strings.HasPrefix(l, "{") {
		if l != "" {
			c.errorsTexts = append(c.errorsTexts, l)
		}
		return
	}
	var ev claudeEvent
	if json.Unmarshal([]byte(l), &ev) != nil {
		return
	}
	if ev.SessionID != "" {
		c.SessionID = ev.SessionID // always keep the latest: older CLIs re-issue ids on resume
	}
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" && ev.Model != "" {
			c.usage.Model = ev.Model
		}
		if ev.Subtype == "api_retry" {
			// A retry notice: the CLI is waiting on its API, not working.
			f := claudeRetryFailure(ev.ErrorStatus, ev.Error)
			c.activity.Retry, c.activity.RetryAttempt = &f, ev.Attempt
		}
	case "assistant":
		if ev.Error != "" {
			c.Signals.AssistantError = ev.Error
		}
		if ev.APIError != "" {
			c.Signals.APIError = ev.APIError
		}
		if p := ev.APIErrorParams; p != nil && p.RateLimitInfo != nil {
			c.rateLimit(p.RateLimitInfo)
		}
		if ev.IsAPIErrorMsg || ev.Error != "" {
			// The CLI's synthetic error message is not the model talking.
			if ev.Message != nil {
				for _, part := range ev.Message.Content {
					if part.Type == "text" && strings.TrimSpace(part.Text) != "" {
						c.errorsTexts = append(c.errorsTexts, part.Text)
					}
				}
			}
			return
		}
		c.work()
		if ev.Message != nil {
			for _, part := range ev.Message.Content {
				if part.Type == "text" && strings.TrimSpace(part.Text) != "" {
					c.progress = part.Text
				}
			}
		}
	case "user":
		c.work() // a tool result: the agent acted
	case "rate_limit_event":
		if ev.RateLimitInfoRL != nil {
			c.rateLimit(ev.RateLimitInfoRL)
		}
	case "result":
		c.HaveResult = true
		c.Result, c.IsError, c.Subtype, c.CostUSD = ev.Result, ev.IsError, ev.Subtype, ev.TotalCostUSD
		c.Signals.Subtype = ev.Subtype
		for _, e := range ev.Errors {
			if strings.TrimSpace(e) != "" {
				c.errorsTexts = append(c.errorsTexts, e)
			}
		}
		c.usage = claudeUsage(ev, c.usage.Model)
		if ev.APIErrorStatus != 0 {
			c.Signals.APIErrorStatus = ev.APIErrorStatus
		}
		if ev.APIError != "" {
			c.Signals.APIError = ev.APIError
		}
	}
}

// rateLimit keeps a rate-limit event's status and reset; an allowed
// event after a rejected one does not erase when the rejection lifts.
func (c *ClaudeStream) rateLimit(r *rateLimitInfo) {
	if r.Status != "" {
		c.Signals.RateLimitStatus = r.Status
	}
	if ts := r.reset(); ts > 0 {
		c.Signals.RateLimitReset = ts
	}
}

// claudeUsage is a result event's cost and tokens. Claude Code 2.1
// reports zero tokens in result.usage and the real ones per model in
// modelUsage; the model is the one that cost the most.
func claudeUsage(ev claudeEvent, model string) Usage {
	u := Usage{CostUSD: ev.TotalCostUSD, Model: model}
	if r := ev.Usage; r != nil {
		u.InputTokens, u.CachedInputTokens, u.OutputTokens = r.Input+r.CacheCreation, r.CacheRead, r.Output
	}
	sum := u.InputTokens+u.CachedInputTokens+u.OutputTokens == 0
	best := -1.0
	for name, m := range ev.ModelUsage {
		if sum {
			u.InputTokens += m.Input + m.CacheCreation
			u.CachedInputTokens += m.CacheRead
			u.OutputTokens += m.Output
		}
		if m.CostUSD > best || (m.CostUSD == best && name < u.Model) {
			best, u.Model = m.CostUSD, name
		}
	}
	return u
}

// work records an event that shows the agent doing something, which ends
// any run of retry notices.
func (c *ClaudeStream) work() {
	c.activity.Work++
	c.activity.Retry, c.activity.RetryAttempt = nil, 0
}

// claudeRetryFailure classifies an api_retry notice: no HTTP status means
// Claude could not connect at all.
func claudeRetryFailure(status *int, errType string) Failure {
	switch {
	case status == nil || *status == 0:
		return Failure{Class: TransientUnreachable, Reason: "cannot connect to its API"}
	case *status == 401 || *status == 403:
		return Failure{Class: FatalAuth, Reason: "API error " + strconv.Itoa(*status)}
	default:
		why := "API error " + strconv.Itoa(*status)
		if errType != "" && errType != "unknown" {
			why += " (" + errType + ")"
		}
		return Failure{Class: TransientOverload, Reason: why}
	}
}

// Activity reports the work seen and any retrying in progress.
func (c *ClaudeStream) Activity() Activity {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.activity.snapshot()
}

// Session returns the latest session id seen.
func (c *ClaudeStream) Session() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.SessionID
}

// Final returns the result event's text, or, when a run stopped with no
// result text (at its budget, say), the agent's last words.
func (c *ClaudeStream) Final() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Result == "" {
		return c.progress
	}
	return c.Result
}

// Outcome reports whether the run failed, and classifies it. An API
// failure can arrive as subtype "success" with is_error set.
func (c *ClaudeStream) Outcome(exitCode int) (Failure, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if exitCode == 0 && c.HaveResult && !c.IsError {
		return Failure{}, false
	}
	s := c.Signals
	s.ExitCode = exitCode
	texts := append([]string{}, c.errorsTexts...)
	if c.Result != "" {
		texts = append([]string{c.Result}, texts...)
	}
	s.Text = strings.Join(texts, "\n")
	if s.Text == "" && !c.HaveResult {
		s.Text = "claude produced no result"
	}
	return ClassifyClaude(s), true
}

// Progress returns the latest assistant text, bounded to one line.
func (c *ClaudeStream) Progress() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return progressLine(c.progress)
}
