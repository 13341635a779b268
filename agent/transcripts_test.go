package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The transcripts under testdata were captured from the real CLIs
// (Claude Code 2.1.332, Codex CLI 0.171.0) run against lazy's mock API
// (internal/testfakes/mockapi); docs/agent-clis.md says how. Each one must keep
// its class, so the adapters cannot drift from what the CLIs print.

func replay(t *testing.T, s Stream, file string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	// A pty writes CRLF and the supervisor's reads split anywhere.
	text := strings.ReplaceAll(string(b), "\n", "\r\n")
	for len(text) > 0 {
		n := min(len(text), 97)
		_, _ = s.Write([]byte(text[:n]))
		text = text[n:]
	}
	s.Close()
}

func TestClaudeTranscripts(t *testing.T) {
	cases := []struct {
		file, class, reason string
		exit                int
	}{
		{"ok.jsonl", "", "", 0},
		{"nocreds.jsonl", string(FatalAuth), "Not logged in · Please run /login", 1},
		{"e401.jsonl", string(FatalAuth), "Invalid API key", 1},
		{"e403.jsonl", string(FatalAuth), "does not have access to Claude", 1},
		{"credit.jsonl", string(FatalAuth), "Credit balance is too low", 1},
		{"e429.jsonl", string(TransientOverload), "Request rejected (429)", 1},
		{"e529.jsonl", string(TransientOverload), "529 Overloaded", 1},
		{"e500.jsonl", string(TransientOverload), "500 Internal server error", 1},
		{"refused.jsonl", string(TransientUnreachable), "Connection refused", 1},
		{"dns.jsonl", string(TransientUnreachable), "Can't reach the API server", 1},
	}
	for _, c := range cases {
		s := &ClaudeStream{}
		replay(t, s, "claude/"+c.file)
		f, failed := s.Outcome(c.exit)
		if c.class == "" {
			if failed || s.Final() != "Hello from the mock." || s.Activity().Work == 0 {
				t.Errorf("%s: failed=%v %+v final %q activity %+v", c.file, failed, f, s.Final(), s.Activity())
			}
			continue
		}
		if !failed || string(f.Class) != c.class || !strings.Contains(f.Reason, c.reason) {
			t.Errorf("%s: %v %s %q, want %s containing %q", c.file, failed, f.Class, f.Reason, c.class, c.reason)
		}
		if s.Progress() != "" {
			t.Errorf("%s: the CLI's synthetic error message became progress %q", c.file, s.Progress())
		}
	}
}

// A Claude that only retries its API shows a retry, and no work.
func TestClaudeRetryNoticesAreNotWork(t *testing.T) {
	for file, want := range map[string]Class{"refused.jsonl": TransientUnreachable, "e529.jsonl": TransientOverload, "e500.jsonl": TransientOverload, "e429.jsonl": TransientOverload} {
		s := &ClaudeStream{}
		b, _ := os.ReadFile(filepath.Join("testdata/claude", file))
		// Only the lines up to the last api_retry notice: the CLI is
		// still retrying.
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			keep = append(keep, l)
			if strings.Contains(l, `"api_retry"`) && !strings.Contains(strings.Join(strings.Split(string(b), "\n")[len(keep):], ""), `"api_retry"`) {
				break
			}
		}
		_, _ = s.Write([]byte(strings.Join(keep, "\n") + "\n"))
		a := s.Activity()
		if a.Work != 0 || a.Retry == nil || a.Retry.Class != want || a.RetryAttempt < 1 {
			t.Errorf("%s: activity %+v (retry %+v), want retrying %s with no work", file, a, a.Retry, want)
		}
	}
	s := &ClaudeStream{}
	replay(t, s, "claude/ok.jsonl")
	if a := s.Activity(); a.Retry != nil || a.Work == 0 {
		t.Errorf("ok: %+v", a)
	}
}

func TestCodexTranscripts(t *testing.T) {
	cases := []struct {
		file, class, reason string
		exit                int
	}{
		{"ok.jsonl", "", "", 0},
		// Reconnect notices, then success: exit 0 is a success.
		{"reconnect.jsonl", "", "", 0},
		// The reason is turn.failed's message, not a reconnect notice.
		{"e401.jsonl", string(FatalAuth), "unexpected status 401 Unauthorized", 1},
		{"e429.jsonl", string(TransientOverload), "429 Too Many Requests", 1},
		// Killed while it waited for the network (it never exits by itself).
		{"no-network.jsonl", string(TransientUnreachable), "Connection failed: error sending request", 143},
		{"dns.jsonl", string(TransientUnreachable), "error sending request", 143},
	}
	for _, c := range cases {
		s := &CodexStream{}
		replay(t, s, "codex/"+c.file)
		f, failed := s.Outcome(c.exit)
		if c.class == "" {
			if failed || s.Final() == "" || s.Activity().Retry != nil {
				t.Errorf("%s: failed=%v %+v final %q activity %+v", c.file, failed, f, s.Final(), s.Activity())
			}
			continue
		}
		if !failed || string(f.Class) != c.class || !strings.Contains(f.Reason, c.reason) || strings.HasPrefix(f.Reason, "Reconnecting") && c.file == "e401.jsonl" {
			t.Errorf("%s: %v %s %q, want %s containing %q", c.file, failed, f.Class, f.Reason, c.class, c.reason)
		}
	}
	s := &CodexStream{}
	replay(t, s, "codex/no-network.jsonl")
	if a := s.Activity(); a.Work != 0 || a.Retry == nil || a.Retry.Class != TransientUnreachable {
		t.Errorf("no network: %+v", a)
	}
}

func TestClassifierTexts(t *testing.T) {
	cases := map[string]Class{
		"failed to lookup address information: Name or service not known":                      TransientUnreachable,
		"Reconnecting... waiting for network (Connection failed: error sending request)":       TransientUnreachable,
		"API Error: 500 Internal server error. This is a server-side issue, usually temporary": TransientOverload,
		"Failed to authenticate. API Error: 403 Your account does not have access to Claude.":  FatalAuth,
		"Credit balance is too low": FatalAuth,
		"API Error: Can't reach the API server — check your internet or DNS (ENOTFOUND)":           TransientUnreachable,
		"API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)":    TransientUnreachable,
		"exceeded retry limit, last status: 429 Too Many Requests":                                 TransientOverload,
		"unexpected status 401 Unauthorized: Incorrect API key provided: dummy., url: http://x/v1": FatalAuth,
	}
	for text, want := range cases {
		if got := ClassifyClaude(Signals{Text: text}).Class; got != want && !strings.HasPrefix(text, "unexpected") && !strings.HasPrefix(text, "exceeded") && !strings.HasPrefix(text, "Reconnecting") {
			t.Errorf("claude %q: %s, want %s", text, got, want)
		}
		if got := ClassifyCodex(Signals{Text: text}).Class; got != want && !strings.Contains(text, "Claude") && !strings.HasPrefix(text, "Credit") {
			t.Errorf("codex %q: %s, want %s", text, got, want)
		}
	}
}

func TestStripTerminal(t *testing.T) {
	in := "\x1b[?1006l\x1b[?1003l\x1b[?25hNot logged in\x1b]0;title\x07 · Please run /login\x1b(B\x1b=\r\n\x00done\x1b["
	if got := StripTerminal(in); got != "Not logged in · Please run /login\r\ndone" {
		t.Fatalf("%q", got)
	}
	if StripTerminal("plain ü text\n") != "plain ü text\n" {
		t.Fatal("plain text changed")
	}
}

func TestUsageFromTranscripts(t *testing.T) {
	cs := &ClaudeStream{}
	replay(t, cs, "claude/ok.jsonl")
	if u := cs.Usage(); u.CostUSD != 0.000188 || u.InputTokens != 12 || u.OutputTokens != 7 {
		t.Errorf("claude usage %+v", u)
	}
	xs := &CodexStream{}
	replay(t, xs, "codex/ok.jsonl")
	if u := xs.Usage(); u.CostUSD != 0 || u.InputTokens != 12 || u.OutputTokens != 7 {
		t.Errorf("codex usage %+v", u)
	}
}

// What a budget and a usage limit look like to lazy, from the real CLIs:
// Claude's --max-budget-usd stop is class budget with the figure it
// reached; a usage limit carries its reset time (Claude's
// rate_limit_event, Codex's "try again at").
func TestBudgetAndLimitTranscripts(t *testing.T) {
	cs := &ClaudeStream{}
	replay(t, cs, "claude/budget.jsonl")
	f, failed := cs.Outcome(1)
	if !failed || f.Class != Budget || f.Reason != "Reached maximum budget ($0.5)" || cs.Final() != "hello" {
		t.Errorf("claude budget: %v %+v", failed, f)
	}
	// 1M input and 1k output tokens of the session's model, as priced by
	// the CLI itself; the tokens come from modelUsage (result.usage is 0).
	if u := cs.Usage(); u.CostUSD != 4.02 || u.InputTokens != 1000000 || u.OutputTokens != 1000 || u.Model != "claude-opus-5-5" {
		t.Errorf("claude budget usage %+v", u)
	}

	want := time.Unix(1796540000, 0).UTC()
	cs = &ClaudeStream{}
	replay(t, cs, "claude/usage-limit.jsonl")
	f, failed = cs.Outcome(1)
	if !failed || f.Class != TransientOverload || !f.ResetAt.Equal(want) || !strings.Contains(f.Reason, "hit your 5-hour limit") {
		t.Errorf("claude usage limit: %v %+v, want reset %s", failed, f, want)
	}

	xs := &CodexStream{}
	replay(t, xs, "codex/usage-limit.jsonl")
	f, failed = xs.Outcome(1)
	// Codex says "6:53 AM" (UTC here, as captured): the minute after it.
	if !failed || f.Class != TransientOverload || f.ResetAt.IsZero() || f.ResetAt.Minute() != 54 || !strings.Contains(f.Reason, "usage limit") {
		t.Errorf("codex usage limit: %v %+v", failed, f)
	}
}

func TestCodexResetAt(t *testing.T) {
	now := time.Date(2026, 12, 6, 6, 10, 30, 0, time.UTC)
	cases := map[string]time.Time{
		"or try again at 6:53 AM.":                time.Date(2026, 12, 6, 6, 54, 0, 0, time.UTC),
		"or try again at 6:10 AM.":                time.Date(2026, 12, 6, 6, 11, 0, 0, time.UTC), // this minute
		"or try again at 12:05 PM.":               time.Date(2026, 12, 6, 12, 6, 0, 0, time.UTC),
		"or try again at 12:05 AM.":               time.Date(2026, 12, 7, 0, 6, 0, 0, time.UTC), // past today: tomorrow
		"or try again at Dec 9th, 2026 6:13 AM.":  time.Date(2026, 12, 9, 6, 14, 0, 0, time.UTC),
		"or try again at Jan 1st, 2027 11:59 PM.": time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC),
		"or try again later.":                     {},
		"or try again at 13:05 PM.":               {},
		"or try again at Foo 9th, 2026 6:13 AM.":  {},
	}
	for text, want := range cases {
		if got := CodexResetAt(text, now); !got.Equal(want) {
			t.Errorf("%q: %s, want %s", text, got, want)
		}
	}
}
