package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mcpSDKVersion is the @modelcontextprotocol/sdk that
// scripts/ci-install-mcp-sdk.sh installs.
const mcpSDKVersion = "1.32.2"

// tsSDK finds node and the TypeScript MCP SDK; CI installs the SDK with
// scripts/ci-install-mcp-sdk.sh and sets LAZY_REQUIRE_MCP_SDK so that a
// missing one fails instead of skipping.
func tsSDK(t *testing.T) (node, dir string) {
	t.Helper()
	full(t) // a real client: never in the fast lane
	skip := func(why string) {
		if os.Getenv("LAZY_REQUIRE_MCP_SDK") != "" {
			t.Fatalf("LAZY_REQUIRE_MCP_SDK is set but %s (run sh scripts/ci-install-mcp-sdk.sh)", why)
		}
		t.Skip(why + " (sh scripts/ci-install-mcp-sdk.sh installs it)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node is not installed")
	}
	dir = os.Getenv("LAZY_MCP_SDK_DIR")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			skip("no cache directory to find the MCP SDK in")
		}
		dir = filepath.Join(cache, "lazy", "mcp-sdk-"+mcpSDKVersion)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		skip("the TypeScript MCP SDK is not installed in " + dir)
	}
	return node, dir
}

// TestTypeScriptSDKClient drives lazy mcp with the official TypeScript
// SDK client: every tool listed with an object outputSchema and its
// annotations, every tool called and its result validated by the SDK
// against that schema, a wait three times longer than the client's
// timeout kept alive by progress, and a client without progress that
// gets still_running and completes by calling again.
func TestTypeScriptSDKClient(t *testing.T) {
	node, sdkDir := tsSDK(t)
	r := newRepo(t)
	r.ok("init") // set the repository up, so its note is not the server's stderr
	const slowSeconds = 15
	agent := func(lines ...string) string {
		return "env " + script(t, lines...) + " " + fakeAgentBin
	}
	cfg := map[string]any{
		"sdk": filepath.Join(sdkDir, "node_modules", "@modelcontextprotocol", "sdk"), "lazy": lazyBin, "repo": r.dir,
		"fast":        agent("attempt "+filepath.Join(t.TempDir(), "runs"), "when 1 write ts.txt from the ts client", "when 1 commit agent: ts", "print turn done"),
		"slow":        agent("print starting a slow turn", "sleep "+(slowSeconds*time.Second).String(), "print slow turn done"),
		"hang":        agent("print hanging", "hang"),
		"slowSeconds": slowSeconds,
	}
	runTSClient(t, r, sdkDir, node, cfg)
}

// TestTypeScriptSDKClientThroughTheAgentProxy drives an agent turn's
// lazy mcp-proxy with the TypeScript SDK client: the agent's tools and
// schemas, its journal and progress, and a subtask's 15 s turn waited for
// under a 5 s client timeout, kept alive by progress the daemon relays.
func TestTypeScriptSDKClientThroughTheAgentProxy(t *testing.T) {
	node, sdkDir := tsSDK(t)
	r := withDaemon(t, newRepo(t))
	a, token := agentWithToken(t, r, "ts agent")
	const slowSeconds = 15
	cfg := map[string]any{
		"mode": "agent", "task": a.Slug,
		"sdk": filepath.Join(sdkDir, "node_modules", "@modelcontextprotocol", "sdk"), "lazy": lazyBin, "repo": r.dir,
		"slow":        "env " + script(t, "print starting a slow turn", "sleep "+(slowSeconds*time.Second).String(), "print slow turn done") + " " + fakeAgentBin,
		"slowSeconds": slowSeconds,
	}
	runTSClient(t, r.with("LAZY_MCP_TOKEN="+token), sdkDir, node, cfg)
}

// runTSClient runs testdata/mcp-ts-client.cjs with cfg and reports its
// findings.
func runTSClient(t *testing.T, r *runner, sdkDir, node string, cfg map[string]any) {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "mcp-ts-client.cjs"), cfgPath)
	cmd.Env = r.environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	oks := 0
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct{ OK, Fail string }
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			t.Errorf("node printed %q", sc.Text())
			continue
		}
		if line.Fail != "" {
			t.Errorf("TS client: %s", line.Fail)
		} else {
			oks++
			if strings.Contains(line.OK, "completes") || strings.Contains(line.OK, "progress arrived") {
				t.Logf("TS client: %s", line.OK)
			}
		}
	}
	if runErr != nil || oks == 0 {
		t.Fatalf("node: %v (%d checks passed)\n%s", runErr, oks, stderr.String())
	}
}
