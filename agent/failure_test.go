package agent

import (
	"strings"
	"testing"
	"time"
)

func TestClassifyClaudeReferenceTexts(t *testing.T) {
	cases := []struct {
		name string
		s    Signals
		want Class
	}{
		{"529 status", Signals{APIErrorStatus: 529, Text: "API Error: 529"}, TransientOverload},
		{"529 text", Signals{Text: `API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}`}, TransientOverload},
		{"repeated 529", Signals{Text: "Repeated 529 Overloaded errors"}, TransientOverload},
		{"429 status", Signals{APIErrorStatus: 429}, TransientOverload},
		{"rate_limit_error", Signals{Text: `API Error: 429 {"error":{"type":"rate_limit_error"}}`}, TransientOverload},
		{"usage limit with ts", Signals{Text: "Claude AI usage limit reached|1767225600"}, TransientOverload},
		{"hit your limit", Signals{Text: "You've hit your limit · resets 1pm (Europe/Lisbon)"}, TransientOverload},
		{"rate_limit_event rejected", Signals{RateLimitStatus: "rejected", RateLimitReset: 1767225600}, TransientOverload},
		{"connection error", Signals{Text: "API Error (Connection error.)"}, TransientUnreachable},
		{"connection refused", Signals{Text: "Unable to connect to API (ConnectionRefused)"}, TransientUnreachable},
		{"api refused", Signals{Text: "API Error: Connection refused"}, TransientUnreachable},
		{"invalid key", Signals{Text: "Invalid API key · Please run /login"}, FatalAuth},
		{"missing key", Signals{Text: "Missing API key"}, FatalAuth},
		{"not logged in", Signals{Text: "Not logged in · Please run /login"}, FatalAuth},
		{"login expired", Signals{Text: "Login expired"}, FatalAuth},
		{"oauth revoked", Signals{Text: "OAuth token revoked"}, FatalAuth},
		{"401", Signals{Text: `API Error: 401 {"type":"error","error":{"type":"authentication_error"}}`}, FatalAuth},
		{"403 revoked", Signals{Text: "API Error: 403 OAuth token has been revoked"}, FatalAuth},
		{"credit balance", Signals{Text: "Your credit balance is too low to access the Anthropic API"}, FatalAuth},
		{"assistant auth", Signals{AssistantError: "authentication_failed"}, FatalAuth},
		{"assistant rate", Signals{AssistantError: "rate_limit"}, TransientOverload},
		// Resume from the wrong cwd is not an auth failure: the session is
		// not here, which a new session answers (as Claude Code 2.1 says it).
		{"no conversation", Signals{Text: "No conversation found with session ID: 01234567-89ab-cdef-0123-456789abcdef"}, ResumeRefused},
		{"not an id", Signals{Text: `Error: --resume requires a valid session ID or session title when used with --print. Usage: claude -p --resume <session-id|title>. Provided value "x" is not a UUID and does not match any session title.`}, ResumeRefused},
		{"unrecognised", Signals{Text: "segmentation fault"}, Unknown},
		{"numbers are not statuses", Signals{Text: "processed 429 files and 529 lines"}, Unknown},
		{"empty", Signals{}, Unknown},
	}
	for _, c := range cases {
		if got := ClassifyClaude(c.s); got.Class != c.want {
			t.Errorf("%s: %s (%q), want %s", c.name, got.Class, got.Reason, c.want)
		}
	}
}

func TestClaudeResetTimes(t *testing.T) {
	f := ClassifyClaude(Signals{Text: "Claude AI usage limit reached|1767225600"})
	if !f.ResetAt.Equal(time.Unix(1767225600, 0)) {
		t.Fatalf("reset %v", f.ResetAt)
	}
	f = ClassifyClaude(Signals{RateLimitStatus: "rejected", RateLimitReset: 1767225700})
	if !f.ResetAt.Equal(time.Unix(1767225700, 0)) {
		t.Fatalf("rate_limit_event reset %v", f.ResetAt)
	}
}

func TestClassifyCodexAndExec(t *testing.T) {
	if f := ClassifyCodex(Signals{Text: "You've hit your usage limit. Upgrade to Pro or try again at 3:28 PM."}); f.Class != TransientOverload {
		t.Errorf("codex usage limit: %s", f.Class)
	}
	if f := ClassifyCodex(Signals{Text: "unexpected status 401 Unauthorized: Missing bearer"}); f.Class != FatalAuth {
		t.Errorf("codex 401: %s", f.Class)
	}
	if f := ClassifyCodex(Signals{Text: "stream error: connection refused"}); f.Class != TransientUnreachable {
		t.Errorf("codex refused: %s", f.Class)
	}
	// Codex 0.171's words when lazy's required MCP server cannot start
	// (the real CLI's stderr, its Rust type names cut): a proxy that
	// is not there, never the agent's fault, never "unknown".
	mcpDown := "Reading additional input from stdin...\n2026-12-07T10:17:21.676680Z ERROR codex_core::session: Failed to create session: required MCP servers failed to initialize: lazy: handshaking with MCP server failed: Send message error Transport error: Broken pipe (os error 32), when send initialize request\nError: thread/start: thread/start failed"
	if f := ClassifyCodex(Signals{Text: mcpDown, ExitCode: 1}); f.Class != TransientUnreachable || !strings.Contains(f.Reason, "required MCP servers failed to initialize: lazy") {
		t.Errorf("codex without lazy's MCP server: %s %q", f.Class, f.Reason)
	}
	// Codex 0.171 resuming a thread this CODEX_HOME does not hold (the
	// real CLI's stderr, its backtrace cut): a new session answers it.
	gone := "Error: thread/resume: thread/resume failed: no rollout found for thread id 01234567-89ab-cdef-0123-456789abcdef (code -32600)\n\nStack backtrace:\n   0: <unknown>"
	if f := ClassifyCodex(Signals{Text: gone, ExitCode: 1}); f.Class != ResumeRefused || f.Reason != "Error: thread/resume: thread/resume failed: no rollout found for thread id 01234567-89ab-cdef-0123-456789abcdef (code -32600)" {
		t.Errorf("codex resume of a missing thread: %s %q", f.Class, f.Reason)
	}
	// A required MCP server failing during a resume stays unreachable.
	if f := ClassifyCodex(Signals{Text: "required MCP servers failed to initialize: lazy\nError: thread/resume: thread/resume failed", ExitCode: 1}); f.Class != TransientUnreachable {
		t.Errorf("codex MCP failure on resume: %s", f.Class)
	}
	if f := ClassifyExec(Signals{Text: "HTTP 429 Too Many Requests"}); f.Class != TransientOverload {
		t.Errorf("exec 429: %s", f.Class)
	}
	if f := ClassifyExec(Signals{Text: "make: *** [all] Error 2", ExitCode: 2}); f.Class != Unknown {
		t.Errorf("exec failure: %s", f.Class)
	}
}

func TestReasonsAreBoundedLines(t *testing.T) {
	long := "preamble\nAPI Error: Connection refused " + string(make([]byte, 0)) + repeat("x", 500) + "\ntrailer"
	f := ClassifyClaude(Signals{Text: long})
	if f.Class != TransientUnreachable || len([]rune(f.Reason)) > maxReason || f.Reason[:10] != "API Error:" {
		t.Fatalf("reason %q", f.Reason)
	}
}

func repeat(s string, n int) string {
	b := make([]byte, 0, n)
	for i := 0; i < n; i++ {
		b = append(b, s...)
	}
	return string(b)
}

func TestClassPredicates(t *testing.T) {
	if !FatalAuth.Fatal() || FatalAuth.Transient() || !TransientOverload.Transient() || Unknown.Fatal() || Unknown.Transient() {
		t.Fatal("class predicates")
	}
}
