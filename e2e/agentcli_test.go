package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/mockapi"
)

// These tests run the real agent CLIs (Claude Code, Codex) through the
// real lazy binary against internal/testfakes/mockapi on 127.0.0.1: no key, no
// internet. scripts/ci-install-agent-clis.sh installs the pinned CLIs and
// prints their directory (LAZY_AGENT_CLIS_DIR); without them the tests
// skip, unless LAZY_REQUIRE_AGENT_CLIS=1 says they must run.

// realCLI finds the real CLI called name.
func realCLI(t *testing.T, name string) string {
	t.Helper()
	full(t) // a real client: never in the fast lane
	if dir := os.Getenv("LAZY_AGENT_CLIS_DIR"); dir != "" {
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		if p, err := exec.LookPath(filepath.Join(home, ".cache", "lazy-agent-clis", "bin", name)); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv("LAZY_REQUIRE_AGENT_CLIS") == "1" {
		t.Fatalf("the real %s CLI is required (LAZY_REQUIRE_AGENT_CLIS=1) but was not found: run scripts/ci-install-agent-clis.sh and export LAZY_AGENT_CLIS_DIR", name)
	}
	t.Skipf("the real %s CLI is not installed (scripts/ci-install-agent-clis.sh)", name)
	return ""
}

// withRealAgents starts the mock API with the given scripts and returns
// a runner whose agents are the real CLIs pointed at it, in a HOME of
// their own (no login, no user config).
func withRealAgents(t *testing.T, r *runner, anthropic, openai []mockapi.Reply) (*runner, *mockapi.Server) {
	t.Helper()
	claude, codex := realCLI(t, "claude"), realCLI(t, "codex")
	srv, err := mockapi.Start(anthropic, openai)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	bin := t.TempDir()
	for name, p := range map[string]string{"claude": claude, "codex": codex} {
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	codexHome := codexHomeFor(t, srv.URL+"/v1")
	// The daemon serves the agents' MCP calls; it inherits this
	// environment from the command that starts it.
	return withDaemon(t, r).with(
		"PATH="+bin+string(os.PathListSeparator)+filepath.Dir(claude)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home, "CODEX_HOME="+codexHome, "MOCK_API_KEY=dummy",
		// Codex refuses to link its sandbox helper under the temporary
		// directory, which would hold CODEX_HOME.
		"TMPDIR="+t.TempDir(),
		"ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=dummy", "ANTHROPIC_AUTH_TOKEN=",
		"CLAUDE_CODE_MAX_RETRIES=0", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	), srv
}

// codexHomeFor writes a CODEX_HOME whose model provider is baseURL.
// Codex ignores OPENAI_BASE_URL: a model provider entry points it at the
// mock. Its own retries are kept short.
func codexHomeFor(t *testing.T, baseURL string) string {
	t.Helper()
	codexHome := t.TempDir()
	cfg := `model = "gpt-5-codex"
model_provider = "mock"
[model_providers.mock]
name = "mock"
base_url = "` + baseURL + `"
env_key = "MOCK_API_KEY"
wire_api = "responses"
stream_max_retries = 2
request_max_retries = 1
[features]
# Codex defers MCP tools behind tool search for models it knows; the
# mock's model is unknown to it, so the tools are offered directly.
tool_search_always_defer_mcp_tools = false
[sandbox_workspace_write]
# The tests' repositories live under /tmp, which workspace-write makes
# writable by default: without it, /tmp is like any other directory of a
# user's, and what a commit needs must be granted as it is for them.
exclude_slash_tmp = true
exclude_tmpdir_env_var = true
`
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return codexHome
}

// A real Claude turn calls lazy's MCP tools (allowed in -p mode), and its
// comment is recorded with actor agent.
func TestRealClaudeCallsLazyTools(t *testing.T) {
	r := newRepo(t)
	tk := r.create("real claude")
	r, srv := withRealAgents(t, r, []mockapi.Reply{{
		Tools: []mockapi.Call{
			{Name: "mcp__lazy__lazy_update_progress", Input: `{"message":"reading the code"}`},
			{Name: "mcp__lazy__lazy_comment", Input: `{"task":"` + tk.Slug + `","text":"hello from the real claude"}`},
		},
		Text: "All done.",
	}}, nil)
	r.ok("start", tk.Slug)
	s := r.waitStatus(tk.Slug, "blocked")
	if last := s.TurnList[len(s.TurnList)-1]; last.Content != "All done." || last.FailureClass != "" {
		t.Fatalf("turn %+v\nrequests %q", last, srv.Requests())
	}
	sh := r.show(tk.Slug)
	found := false
	for _, c := range sh.CommentList {
		found = found || c.Text == "hello from the real claude" && c.Actor == "agent"
	}
	if !found {
		bodies := srv.Bodies("anthropic")
		t.Fatalf("the agent's comment is missing: %+v\nlast request: %s", sh.CommentList, bodies[len(bodies)-1])
	}
	// What the CLI reported the turn cost is recorded per turn and per
	// task, and shown.
	var cost struct {
		Usage *struct {
			CostUSD      float64 `json:"cost_usd"`
			InputTokens  int64   `json:"input_tokens"`
			OutputTokens int64   `json:"output_tokens"`
		} `json:"usage"`
		TurnList []struct {
			Usage *struct {
				CostUSD float64 `json:"cost_usd"`
			} `json:"usage"`
		} `json:"turn_list"`
	}
	if err := json.Unmarshal([]byte(r.ok("show", "--json", tk.Slug)), &cost); err != nil {
		t.Fatal(err)
	}
	if cost.Usage == nil || cost.Usage.CostUSD <= 0 || cost.Usage.InputTokens == 0 || cost.Usage.OutputTokens == 0 || cost.TurnList[len(cost.TurnList)-1].Usage == nil {
		t.Fatalf("usage not recorded: %+v", cost)
	}
	if out := r.ok("show", tk.Slug); !strings.Contains(out, "Spent:    $") {
		t.Fatalf("show lacks the cost:\n%s", out)
	}
	var web struct{ URL string }
	if err := json.Unmarshal([]byte(r.ok("web", "--json")), &web); err != nil {
		t.Fatal(err)
	}
	base, token, _ := strings.Cut(web.URL, "/?token=")
	resp, err := http.Get(base + "/task/" + tk.ID + "?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.Contains(string(page), "agents spent $") {
		t.Fatalf("the web view lacks the cost:\n%s", page)
	}
	if out := r.ok("status", "--json"); !strings.Contains(out, `"cost_usd"`) {
		t.Fatalf("status --json lacks the cost:\n%s", out)
	}
	if out := r.ok("list", "--json"); !strings.Contains(out, `"cost_usd"`) {
		t.Fatalf("list --json lacks the cost:\n%s", out)
	}
	if b := strings.Join(srv.Bodies("anthropic"), "\n"); strings.Contains(b, "haven't granted it yet") || !strings.Contains(b, `"is_error":false`) && strings.Contains(b, `"is_error":true`) {
		t.Fatalf("a lazy tool call was denied:\n%s", b)
	}
}

// A real Codex turn calls lazy's MCP tools with the token passed through
// env_vars, and its comment is recorded with actor agent.
func TestRealCodexCallsLazyTools(t *testing.T) {
	r := newRepo(t)
	tk := r.create("real codex")
	r, srv := withRealAgents(t, r, nil, []mockapi.Reply{{
		Tools: []mockapi.Call{{Name: "~lazy_comment", Input: `{"task":"` + tk.Slug + `","text":"hello from the real codex"}`}},
		Text:  "Codex is done.",
	}})
	r.ok("start", tk.Slug, "--agent", "codex")
	s := r.waitStatus(tk.Slug, "blocked")
	bodies := srv.Bodies("openai")
	if last := s.TurnList[len(s.TurnList)-1]; last.Content != "Codex is done." || last.FailureClass != "" {
		t.Fatalf("turn %+v\nrequests %q\nlast body %s", last, srv.Requests(), bodies[len(bodies)-1])
	}
	found := false
	for _, c := range r.show(tk.Slug).CommentList {
		found = found || c.Text == "hello from the real codex" && c.Actor == "agent"
	}
	if out := r.ok("show", tk.Slug); !strings.Contains(out, " in / ") || !strings.Contains(out, "out tokens") {
		t.Fatalf("show lacks codex's tokens:\n%s", out)
	}
	if !found {
		b := bodies[len(bodies)-1]
		if i := strings.Index(b, `lazy`); i > 0 {
			b = b[max(0, i-1500):]
		}
		t.Fatalf("the agent's comment is missing (%d model calls)\nagent log:\n%s\nrequest tools and after: %.3000s", len(bodies), agentLog(t, r, tk.ID), b)
	}
}

// Real Claude API failures get their class and a readable reason.
func TestRealClaudeAPIFailures(t *testing.T) {
	cases := []struct {
		name   string
		reply  mockapi.Reply
		status string
		reason string
	}{
		{"401", mockapi.Reply{Status: 401, Message: "invalid x-api-key"}, "blocked", "fatal_auth: Invalid API key · Fix external API key"},
		{"403", mockapi.Reply{Status: 403, Message: "Your account does not have access to Claude."}, "blocked", "fatal_auth: Failed to authenticate. API Error: 403 Your account does not have access to Claude."},
		{"credit", mockapi.Reply{Status: 400, Message: "Your credit balance is too low to access the Anthropic API."}, "blocked", "fatal_auth: Credit balance is too low"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _ := withRealAgents(t, newRepo(t), []mockapi.Reply{c.reply}, nil)
			tk := r.create("fails " + c.name)
			r.ok("start", tk.Slug)
			s := r.waitStatus(tk.Slug, c.status)
			if s.Session.InterruptReason != c.reason {
				t.Fatalf("reason %q, want %q", s.Session.InterruptReason, c.reason)
			}
		})
	}
}

// A real Claude that gets 529, 429 or 500 is retried in-turn, resuming
// its own session, and completes when the API recovers.
func TestRealClaudeOverloadRetriesThenResumes(t *testing.T) {
	for _, c := range []struct {
		status  int
		message string
	}{{529, "Overloaded"}, {429, "Number of request tokens has exceeded your per-minute rate limit"}, {500, "Internal server error"}} {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			r, srv := withRealAgents(t, newRepo(t), []mockapi.Reply{
				{Text: "first answer"},
				{Status: c.status, Message: c.message},
				{Status: c.status, Message: c.message},
				{Text: "recovered"},
			}, nil)
			tk := r.create("overloaded")
			r.ok("start", tk.Slug)
			r.waitStatus(tk.Slug, "blocked")
			r.ok("unblock", tk.Slug, "-m", "go on")
			s := r.waitStatus(tk.Slug, "blocked")
			if last := s.TurnList[len(s.TurnList)-1]; last.Content != "recovered" || last.FailureClass != "" {
				t.Fatalf("turn %+v", last)
			}
			// The resumed conversation carries the first turn's answer.
			bodies := srv.Bodies("anthropic")
			if n := len(bodies); n < 4 || !strings.Contains(bodies[n-1], "first answer") || !strings.Contains(bodies[n-1], "go on") {
				t.Fatalf("%d model calls; the last did not resume the session", n)
			}
		})
	}
}

// A real Claude whose API port is closed retries by itself; lazy shows
// it retrying and parks the task blocked within lazy.unreachableTimeout.
func TestRealClaudeUnreachableParks(t *testing.T) {
	r, _ := withRealAgents(t, manualResume(newRepo(t)), nil, nil)
	// A port nothing listens on, and Claude's own default retries.
	r = r.with("ANTHROPIC_BASE_URL=http://127.0.0.1:9", "CLAUDE_CODE_MAX_RETRIES=")
	r.git("config", "lazy.unreachableTimeout", "5s")
	r.git("config", "lazy.watchdogKillGrace", "2s")
	tk := r.create("offline")
	began := time.Now()
	r.ok("start", tk.Slug)
	r.waitLive(tk.Slug, "retrying (agent: transient_unreachable)")
	s := r.waitStatus(tk.Slug, "blocked")
	if took := time.Since(began); took > 40*time.Second {
		t.Fatalf("parking took %s with a 5s bound", took)
	}
	if reason := s.Session.InterruptReason; !strings.HasPrefix(reason, "transient_unreachable: the agent's API stayed unreachable for ") {
		t.Fatalf("reason %q", reason)
	}
}

// A real ask reads but cannot write, and lazy's tools work in it.
func TestRealClaudeAskIsReadOnlyAndUsesLazyTools(t *testing.T) {
	r := newRepo(t)
	tk := r.create("asked")
	r, srv := withRealAgents(t, r, []mockapi.Reply{
		{Text: "worked"},
		{Tools: []mockapi.Call{
			{Name: "Read", Input: `{"file_path":"` + mockapi.Cwd + `/README.md"}`},
			{Name: "Write", Input: `{"file_path":"` + mockapi.Cwd + `/written-by-ask.txt","content":"no"}`},
			{Name: "mcp__lazy__lazy_comment", Input: `{"task":"` + tk.Slug + `","text":"noted while answering"}`},
		}, Text: "The answer is 42."},
	}, nil)
	r.ok("start", tk.Slug)
	wt := r.waitStatus(tk.Slug, "blocked").Session.Worktree
	if got := sessionOf(t, r, tk.ID)["worktree"]; got != wt || within(wt, r.dir) {
		t.Fatalf("worktree %v (%s), want one outside the checkout and its .git", got, wt)
	}
	r.ok("ask", tk.Slug, "-m", "what is the answer?")
	s := r.waitStatus(tk.Slug, "blocked")
	if last := s.TurnList[len(s.TurnList)-1]; last.Content != "The answer is 42." {
		t.Fatalf("turn %+v", last)
	}
	found := false
	for _, c := range r.show(tk.Slug).CommentList {
		found = found || c.Text == "noted while answering" && c.Actor == "agent"
	}
	if !found {
		b := srv.Bodies("anthropic")
		last := b[len(b)-1]
		if i := strings.LastIndex(last, `"tool_result"`); i > 0 {
			last = last[i:]
		}
		t.Fatalf("the ask's lazy_comment was not recorded; the tool said: %.600s", last)
	}
	if _, err := os.Stat(filepath.Join(wt, "written-by-ask.txt")); err == nil {
		t.Fatal("a read-only ask wrote a file")
	}
	b := srv.Bodies("anthropic")
	if last := b[len(b)-1]; !strings.Contains(last, "# test") {
		t.Fatalf("the ask could not read the worktree: %.2000s", last[strings.LastIndex(last, `"tool_result"`):])
	}
}

// Real Codex: reconnects then success is a success; with no network the
// bound parks it.
func TestRealCodexReconnects(t *testing.T) {
	r, srv := withRealAgents(t, manualResume(newRepo(t)), nil, []mockapi.Reply{{Drop: true}, {Text: "Recovered."}})
	tk := r.create("flaky")
	r.ok("start", tk.Slug, "--agent", "codex")
	s := r.waitStatus(tk.Slug, "blocked")
	if last := s.TurnList[len(s.TurnList)-1]; last.Content != "Recovered." || last.FailureClass != "" || srv.Calls("openai") != 2 {
		t.Fatalf("turn %+v after %d calls\n%s", last, srv.Calls("openai"), agentLog(t, r, tk.ID))
	}

	off := r.with("CODEX_HOME=" + codexHomeFor(t, "http://127.0.0.1:9/v1"))
	off.git("config", "lazy.unreachableTimeout", "5s")
	off.git("config", "lazy.watchdogKillGrace", "2s")
	tk2 := off.create("no network")
	off.ok("start", tk2.Slug, "--agent", "codex")
	s = off.waitStatus(tk2.Slug, "blocked")
	if reason := s.Session.InterruptReason; !strings.HasPrefix(reason, "transient_unreachable: the agent's API stayed unreachable for ") || !strings.Contains(reason, "Reconnecting...") {
		t.Fatalf("reason %q\n%s", reason, agentLog(t, off, tk2.ID))
	}
}

// A real Claude with settings but no login gets past the credential gate
// (it cannot tell) and stops at once as fatal_auth, said once.
func TestRealClaudeNotLoggedIn(t *testing.T) {
	r, srv := withRealAgents(t, newRepo(t), nil, nil)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = r.with("HOME="+home, "ANTHROPIC_API_KEY=", "ANTHROPIC_BASE_URL=")
	tk := r.create("no login")
	r.ok("start", tk.Slug)
	s := r.waitStatus(tk.Slug, "blocked")
	if s.Session.InterruptReason != "fatal_auth: Not logged in · Please run /login" {
		t.Fatalf("reason %q", s.Session.InterruptReason)
	}
	if out := r.ok("show", tk.Slug); !strings.Contains(out, "Blocked:  fatal_auth: Not logged in · Please run /login") {
		t.Fatalf("show:\n%s", out)
	}
	if n := srv.Calls("anthropic"); n != 0 {
		t.Fatalf("%d model calls without a login", n)
	}
}
