package agent

import (
	"strings"
	"testing"
)

func feed(s *ClaudeStream, text string, chunk int) {
	for len(text) > 0 {
		n := chunk
		if n > len(text) {
			n = len(text)
		}
		_, _ = s.Write([]byte(text[:n]))
		text = text[n:]
	}
	s.Close()
}

const okStream = `{"type":"system","subtype":"init","session_id":"a1","cwd":"/w"}` + "\r\n" +
	`not json at all` + "\r\n" +
	`{"type":"future_event","x":1}` + "\r\n" +
	`{"type":"assistant","message":{"content":[{"type":"thinking","text":"hmm"},{"type":"text","text":"running tests"}]}}` + "\r\n" +
	`{"type":"result","subtype":"success","is_error":false,"result":"All green.","session_id":"a2","total_cost_usd":0.25}`

func TestClaudeStreamAnyChunking(t *testing.T) {
	for _, chunk := range []int{1, 3, 17, 4096} {
		s := &ClaudeStream{}
		feed(s, okStream, chunk)
		if s.SessionID != "a2" || s.Result != "All green." || !s.HaveResult || s.Progress() != "running tests" || s.CostUSD != 0.25 {
			t.Fatalf("chunk %d: %+v", chunk, s)
		}
		if _, failed := s.Outcome(0); failed {
			t.Fatalf("chunk %d: a clean result reads as failed", chunk)
		}
	}
}

func TestClaudeStreamErrorShapes(t *testing.T) {
	// An API failure can arrive as subtype success with is_error.
	s := &ClaudeStream{}
	feed(s, `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 529 overloaded","api_error_status":529}`+"\n", 64)
	if f, failed := s.Outcome(1); !failed || f.Class != TransientOverload {
		t.Fatalf("529 result: %+v %v", f, failed)
	}
	// A usage error exits 1 with no JSON at all.
	s = &ClaudeStream{}
	feed(s, "Error: When using --print, --output-format=stream-json requires --verbose\n", 64)
	if f, failed := s.Outcome(1); !failed || f.Class != Unknown || !strings.Contains(f.Reason, "requires --verbose") {
		t.Fatalf("usage error: %+v", f)
	}
	// Exit 0 without any result event is not a success.
	s = &ClaudeStream{}
	feed(s, `{"type":"system","subtype":"init","session_id":"x"}`+"\n", 64)
	if _, failed := s.Outcome(0); !failed {
		t.Fatal("a run without a result read as success")
	}
	// A rejected rate_limit_event carries its reset time.
	s = &ClaudeStream{}
	feed(s, `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resets_at":1767225600}}`+"\n", 64)
	if f, _ := s.Outcome(1); f.Class != TransientOverload || f.ResetAt.Unix() != 1767225600 {
		t.Fatalf("rate limit event: %+v", f)
	}
}

func TestClaudeArgv(t *testing.T) {
	argv := ClaudeArgv(Turn{Prompt: "-rf --help", ResumeID: "sid", Grants: Grants{PermissionMode: "acceptEdits"}})
	got := strings.Join(argv, " ")
	if !strings.HasPrefix(got, "claude -p --output-format stream-json --verbose --resume=sid --permission-mode acceptEdits --allowedTools=Bash(git add:*),") || !strings.HasSuffix(got, " -- -rf --help") {
		t.Fatalf("argv %q", got)
	}
	ro := strings.Join(ClaudeArgv(Turn{Prompt: "q", ReadOnly: true}), " ")
	if !strings.Contains(ro, "--permission-mode dontAsk --disallowedTools=Edit,Write,MultiEdit,NotebookEdit,Bash -- q") || strings.Contains(ro, "--resume") {
		t.Fatalf("ask argv %q", ro)
	}
}

func TestArgvWithAModel(t *testing.T) {
	claude := ClaudeArgv(Turn{Prompt: "p", ResumeID: "sid", Model: "claude-opus-4-1", Grants: Grants{Sandboxed: true}})
	if got, want := strings.Join(claude, " "), "claude -p --output-format stream-json --verbose --resume=sid --model=claude-opus-4-1 --permission-mode bypassPermissions -- p"; got != want {
		t.Fatalf("claude argv\n got %q\nwant %q", got, want)
	}
	codex := CodexArgv(Turn{Prompt: "p", ResumeID: "th1", Model: "gpt-5-codex", Grants: Grants{Sandboxed: true}})
	if got, want := strings.Join(codex, " "), "codex exec --json --dangerously-bypass-approvals-and-sandbox --model=gpt-5-codex resume th1 -- p"; got != want {
		t.Fatalf("codex argv\n got %q\nwant %q", got, want)
	}
	for _, m := range []string{"sonnet", "gpt-5-codex", "claude-opus-4-1@20250805", "openrouter/qwen:free", ""} {
		if err := ValidModel(m); err != nil {
			t.Errorf("ValidModel(%q): %v", m, err)
		}
	}
	for _, m := range []string{"-rf", "--help", "a b", "x;rm", "a\nb", strings.Repeat("m", MaxModel+1)} {
		if err := ValidModel(m); err == nil {
			t.Errorf("ValidModel(%q) accepted it", m)
		}
	}
}

func TestCodexArgvAndStream(t *testing.T) {
	if got := strings.Join(CodexArgv(Turn{Prompt: "-x", ResumeID: "th1", Grants: Grants{WritableRoots: []string{"/r/.git/objects"}}}), " "); got != "codex exec --json -s workspace-write --add-dir /r/.git/objects resume th1 -- -x" {
		t.Fatalf("argv %q", got)
	}
	if got := strings.Join(CodexArgv(Turn{Prompt: "q", ReadOnly: true}), " "); got != "codex exec --json -s read-only -- q" {
		t.Fatalf("read-only argv %q", got)
	}
	s := &CodexStream{}
	_, _ = s.Write([]byte(`{"type":"thread.started","thread_id":"t-9"}` + "\r\n" + `{"type":"turn.started"}` + "\n" +
		`{"type":"item.completed","item":{"type":"agent_message","text":"first"}}` + "\n" +
		`{"type":"item.completed","item":{"type":"reasoning","text":"hmm"}}` + "\n" +
		`{"type":"item.completed","item":{"type":"agent_message","text":"final answer"}}`))
	s.Close()
	if s.ThreadID != "t-9" || s.Result != "final answer" {
		t.Fatalf("stream %+v", s)
	}
	if _, failed := s.Outcome(0); failed {
		t.Fatal("clean codex run read as failed")
	}
	s = &CodexStream{}
	_, _ = s.Write([]byte(`{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}` + "\n"))
	if f, failed := s.Outcome(1); !failed || f.Class != FatalAuth {
		t.Fatalf("401: %+v", f)
	}
	s = &CodexStream{}
	_, _ = s.Write([]byte(`{"type":"error","message":"You've hit your usage limit. Try again at 3:28 PM."}` + "\n"))
	if f, _ := s.Outcome(1); f.Class != TransientOverload {
		t.Fatalf("usage limit: %+v", f)
	}
}

// Every Claude turn kind that gets lazy's MCP server also allows its
// tools: in -p mode Claude denies MCP tools that were not allowed.
func TestClaudeAllowsLazyMCPInEveryKind(t *testing.T) {
	a, _ := For("claude")
	m := &MCPServer{Command: "/bin/lazy", Args: []string{"mcp-proxy"}, EnvVars: []string{"LAZY_MCP_TOKEN"}}
	for _, turn := range []Turn{{Prompt: "work", Grants: Grants{PermissionMode: "acceptEdits"}}, {Prompt: "again", ResumeID: "s1"}, {Prompt: "ask", ReadOnly: true}, {Prompt: "boxed", Grants: Grants{Sandboxed: true}}} {
		turn.MCP = m
		argv, err := a.Argv(turn)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(argv, " ")
		if !strings.Contains(got, " --allowedTools=mcp__lazy") || strings.Count(got, "--allowedTools") != 1 || !strings.Contains(got, `"LAZY_MCP_TOKEN":"${LAZY_MCP_TOKEN}"`) {
			t.Errorf("argv %q", got)
		}
	}
}
