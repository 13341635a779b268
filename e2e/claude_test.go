package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// withFakeClaude puts our fake agent on PATH as "claude" and "codex".
func withFakeClaude(t *testing.T, r *runner) *runner {
	t.Helper()
	bin := t.TempDir()
	for _, name := range []string{"claude", "codex"} {
		if err := os.Symlink(fakeAgentBin, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return r.with("PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"))
}

func TestCodexTurnAndResume(t *testing.T) {
	r := withFakeClaude(t, newRepo(t))
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	first := r.with(script(t, "argv "+argvFile, "codex-thread th-1", "write c.txt codex", "commit codex edit", "codex-message interim", "codex-message Done by codex."))
	first.create("codex task")
	first.ok("start", "codex-task", "--agent", "codex")
	s := first.waitStatus("codex-task", "blocked")
	if last := s.TurnList[len(s.TurnList)-1]; last.Content != "Done by codex." || len(last.Commits) != 1 {
		t.Fatalf("codex turn %+v", last)
	}
	second := r.with(script(t, "argv "+argvFile, "codex-fail unexpected status 401 Unauthorized"))
	second.ok("unblock", "codex-task", "--message=-starts with a dash")
	s = second.waitStatus("codex-task", "blocked")
	argv := readArgv(t, argvFile)
	got := strings.Join(argv[1:], " ")
	// Its sandbox lets it write where a commit writes: the repository's
	// objects, branch refs and logs, and the worktree's own git dir.
	common := filepath.Join(r.dir, ".git")
	if !strings.HasPrefix(got, "exec --json -c mcp_servers.lazy.command=\""+lazyBin+"\" -c mcp_servers.lazy.args=[\"-C\",") ||
		!strings.Contains(got, "\"mcp-proxy\"] -c mcp_servers.lazy.env_vars=[\"LAZY_MCP_TOKEN\"] -c mcp_servers.lazy.default_tools_approval_mode=\"approve\" -c mcp_servers.lazy.startup_timeout_sec=60 -c mcp_servers.lazy.required=true -s workspace-write "+
			"--add-dir "+filepath.Join(common, "objects")+" --add-dir "+filepath.Join(common, "refs", "heads")+" --add-dir "+filepath.Join(common, "logs")+" --add-dir "+filepath.Join(common, "worktrees")) ||
		!strings.HasSuffix(got, " resume th-1 -- -starts with a dash") {
		t.Fatalf("codex resume argv %q", got)
	}
	if strings.Contains(got, "lazy_") {
		t.Fatal("the MCP token leaked into argv")
	}
	if !strings.HasPrefix(s.Session.InterruptReason, "fatal_auth") {
		t.Fatalf("codex 401: %q", s.Session.InterruptReason)
	}
}

func TestClaudeTurnParsesStreamJSONAndResumes(t *testing.T) {
	r := withFakeClaude(t, newRepo(t))
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	first := r.with(script(t,
		"argv "+argvFile,
		"claude-init sess-one",
		"claude-say looking at the login test",
		"write fix.txt fixed",
		"commit fix the race",
		"claude-result Fixed the race in the login test.",
	))
	first.create("Fix login", "-m", "the test is flaky")
	first.ok("start", "fix-login")
	s := first.waitStatus("fix-login", "blocked")
	argv := readArgv(t, argvFile)
	joined := strings.Join(argv[1:], " ")
	for _, want := range []string{"-p", "--output-format stream-json", "--verbose", "--permission-mode acceptEdits"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("claude argv %q lacks %q", argv, want)
		}
	}
	if argv[len(argv)-2] != "--" || argv[len(argv)-1] != "Fix login\n\nthe test is flaky" {
		t.Fatalf("prompt not after --: %q", argv)
	}
	// lazy's MCP server rides along; the token is a ${VAR} reference,
	// never its value.
	var mcpConfig struct {
		Servers map[string]struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	for _, a := range argv {
		if rest, ok := strings.CutPrefix(a, "--mcp-config="); ok {
			if err := json.Unmarshal([]byte(rest), &mcpConfig); err != nil {
				t.Fatalf("--mcp-config is not JSON: %v", err)
			}
		}
	}
	srv := mcpConfig.Servers["lazy"]
	if srv.Type != "stdio" || srv.Command != lazyBin || srv.Args[len(srv.Args)-1] != "mcp-proxy" || srv.Env["LAZY_MCP_TOKEN"] != "${LAZY_MCP_TOKEN}" {
		t.Fatalf("claude's MCP config %+v", mcpConfig)
	}
	if strings.Contains(joined, "lazy_") {
		t.Fatal("the MCP token appears in argv")
	}
	ag := s.TurnList[1]
	if ag.Content != "Fixed the race in the login test." || len(ag.Commits) != 1 {
		t.Fatalf("agent turn %+v (the result text, not the raw stream, is the turn)", ag)
	}
	out := first.ok("show", "--json", "fix-login")
	if !strings.Contains(out, `"agent_session_id": "sess-one"`) {
		t.Fatalf("agent session id not recorded:\n%s", out)
	}

	// The next turn resumes that session; a re-issued id is kept.
	second := r.with(script(t, "argv "+argvFile, "claude-init sess-two", "claude-result Logout covered too."))
	second.ok("unblock", "fix-login", "-m", "cover logout as well")
	s = second.waitStatus("fix-login", "blocked")
	argv = readArgv(t, argvFile)
	if !strings.Contains(strings.Join(argv, " "), "--resume=sess-one") || argv[len(argv)-1] != "cover logout as well" {
		t.Fatalf("resume argv %q", argv)
	}
	if out := second.ok("show", "--json", "fix-login"); !strings.Contains(out, `"agent_session_id": "sess-two"`) {
		t.Fatal("the latest session id was not kept")
	}
	if s.TurnList[3].Content != "Logout covered too." {
		t.Fatalf("second agent turn %+v", s.TurnList[3])
	}
}

func TestClaudeAPIErrorsAreClassified(t *testing.T) {
	r := withFakeClaude(t, newRepo(t))
	auth := r.with(script(t, "claude-init s1", `claude-api-error 401 Invalid API key · Please run /login`))
	auth.create("auth")
	auth.ok("start", "auth")
	s := auth.waitStatus("auth", "blocked")
	if !strings.HasPrefix(s.Session.InterruptReason, "fatal_auth") {
		t.Fatalf("401: %q", s.Session.InterruptReason)
	}
	// An overload is retried in-turn, inside the same conversation, and
	// the turn completes once the provider recovers.
	counter := filepath.Join(t.TempDir(), "runs")
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	over := r.with(script(t, "attempt "+counter, "argv "+argvFile, "claude-init s2",
		`when 1 claude-api-error 529 API Error: 529 {"type":"overloaded_error"}`,
		`when 2 claude-api-error 529 API Error: 529 {"type":"overloaded_error"}`,
		"claude-result recovered after the overload"))
	over.create("overloaded")
	over.ok("start", "overloaded")
	s = over.waitStatus("overloaded", "blocked")
	if last := s.TurnList[len(s.TurnList)-1]; last.Content != "recovered after the overload" {
		t.Fatalf("agent turn %+v", last)
	}
	if b, _ := os.ReadFile(counter); string(b) != "3" {
		t.Fatalf("claude ran %s times, want 3", b)
	}
	if argv := readArgv(t, argvFile); !strings.Contains(strings.Join(argv, " "), "--resume=s2") {
		t.Fatalf("the retry did not resume the conversation: %q", argv)
	}
}

func TestStatusJSONCarriesProgress(t *testing.T) {
	r := withFakeClaude(t, newRepo(t))
	r = r.with(script(t, "claude-init s1", "claude-say   running   migration 3/7  ", "sleep 2500ms", "claude-result done"))
	tk := r.create("progress")
	r.ok("start", tk.Slug)
	status := filepath.Join(r.dir, ".git", "lazy", "proto", tk.ID, "status.json")
	deadline := time.Now().Add(20 * time.Second)
	for {
		var st struct {
			Phase        string `json:"phase"`
			Progress     string `json:"progress"`
			LastProgress string `json:"last_progress"`
			PID          int    `json:"pid"`
		}
		if b, err := os.ReadFile(status); err == nil && json.Unmarshal(b, &st) == nil && st.Progress != "" {
			if st.Progress != "running migration 3/7" || st.LastProgress == "" || st.PID == 0 || st.Phase != "agent" {
				t.Fatalf("status.json %+v", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("status.json never reported progress")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.waitStatus(tk.Slug, "blocked")
}
