package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/mockapi"
)

// These tests run the real agent CLIs (Claude Code, Codex) through the
// real lazy binary against internal/mockapi on 127.0.0.1: no key, no
// internet. scripts/ci-install-agent-clis.sh installs the pinned CLIs and
// prints their directory (LAZY_AGENT_CLIS_DIR); without them the tests
// skip, unless LAZY_REQUIRE_AGENT_CLIS=1 says they must run.

// realCLI finds the real CLI called name.
func realCLI(t *testing.T, name string) string {
	t.Helper()
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
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	// Codex ignores OPENAI_BASE_URL: a model provider entry points it at
	// the mock. Its own retries are kept short.
	cfg := `model = "gpt-5-codex"
model_provider = "mock"
[model_providers.mock]
name = "mock"
base_url = "` + srv.URL + `/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
stream_max_retries = 2
request_max_retries = 1
[features]
# Codex defers MCP tools behind tool search for models it knows; the
# mock's model is unknown to it, so the tools are offered directly.
tool_search_always_defer_mcp_tools = false
`
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// The daemon serves the agents' MCP calls; it inherits this
	// environment from the command that starts it.
	return withDaemon(t, r).with(
		"PATH="+bin+string(os.PathListSeparator)+filepath.Dir(claude)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home, "CODEX_HOME="+codexHome, "MOCK_API_KEY=dummy",
		"ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=dummy", "ANTHROPIC_AUTH_TOKEN=",
		"CLAUDE_CODE_MAX_RETRIES=0", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	), srv
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
	if !found {
		b := bodies[len(bodies)-1]
		if i := strings.Index(b, `lazy`); i > 0 {
			b = b[max(0, i-1500):]
		}
		t.Fatalf("the agent's comment is missing (%d model calls)\nagent log:\n%s\nrequest tools and after: %.3000s", len(bodies), agentLog(t, r, tk.ID), b)
	}
}
