package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/internal/testfakes/mockapi"
)

// slowMCPEnv, set in this test binary's environment, makes it an MCP
// server over stdio that starts serving after the duration it holds.
const slowMCPEnv = "LAZY_E2E_SLOW_MCP"

// serveSlowMCP serves one tool, lazy_ping, after waiting d: lazy's
// server as a loaded machine starts it. It returns the exit status.
func serveSlowMCP(d string) int {
	wait, err := time.ParseDuration(d)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	time.Sleep(wait) // the slow start under test, not a test's wait
	srv := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "lazy_ping", Description: "answers pong"},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil, nil
		})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// The real Codex offers lazy's tools even when lazy's MCP server takes
// seconds to start: left optional, a server slower than about a second
// is dropped from the turn (the CI flake of TestRealCodexCallsLazyTools
// on a loaded machine), so lazy marks it required. The argv is the one
// lazy builds for a turn (agent.For("codex").Argv).
func TestRealCodexWaitsForASlowLazyServer(t *testing.T) {
	codex := realCLI(t, "codex")
	srv, err := mockapi.Start(nil, []mockapi.Reply{{
		Tools: []mockapi.Call{{Name: "~lazy_ping", Input: `{}`}},
		Text:  "pinged",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.For("codex")
	if err != nil {
		t.Fatal(err)
	}
	argv, err := a.Argv(agent.Turn{Prompt: "ping lazy", MCP: &agent.MCPServer{Command: self, Args: []string{}, EnvVars: []string{slowMCPEnv}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	cmd := exec.Command(codex, argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), slowMCPEnv+"=3s", "CODEX_HOME="+codexHomeFor(t, srv.URL+"/v1"), "MOCK_API_KEY=dummy",
		"HOME="+t.TempDir(), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("codex: %v\n%s", err, out)
	}
	res := srv.ToolResults("openai")
	if len(res) != 1 || !strings.Contains(res[0].Output, "pong") || res[0].IsError {
		t.Fatalf("the model's call of lazy_ping did not reach the slow server: %+v\ncodex printed:\n%s", res, out)
	}
	if !strings.Contains(string(out), `"server":"lazy"`) {
		t.Fatalf("codex's stream lacks the lazy server's tool call:\n%s", out)
	}
}
