package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// A repository checked out deep enough that its daemon's socket path is
// past the kernel's 107 bytes still gets a daemon, and a turn's agent still
// reaches it over MCP.
func TestDaemonOfADeepCheckout(t *testing.T) {
	full(t)
	deep := filepath.Join(t.TempDir(), strings.Repeat("a", 60), strings.Repeat("b", 60), "repo")
	if err := os.MkdirAll(filepath.Dir(deep), 0o755); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, filepath.Dir(deep), "clone", "-q", testrepo.New(t), deep)
	testrepo.Identity(t, deep)
	if sock := filepath.Join(deep, ".git", "lazy", "daemon.sock"); len(sock) <= 107 {
		t.Fatalf("the socket path is only %d bytes", len(sock))
	}
	r := withDaemon(t, &runner{t: t, dir: deep})
	r.ok("init")
	r.ok("daemon", "--ensure")
	if info := r.daemonInfo(); info.PID == 0 {
		t.Fatalf("daemon --status named no daemon")
	}
	// A turn's agent reaches the daemon through lazy's MCP proxy, the way
	// Claude and Codex do.
	tokenFile := filepath.Join(t.TempDir(), "token")
	ar := r.with(script(t, "getenv LAZY_MCP_TOKEN "+tokenFile, "print deep agent busy", "hang"))
	tk := ar.create("reach the daemon")
	ar.ok("start", tk.Slug, "--command", fakeAgentBin)
	waitFile(t, tokenFile)
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := mcpClient(t, r, []string{"LAZY_MCP_TOKEN=" + string(token)}, "mcp-proxy")
	if got := call(t, s, "lazy_show", map[string]any{"task": tk.Slug}, false); !strings.Contains(got, "reach the daemon") {
		t.Fatalf("lazy_show through the proxy: %s", got)
	}
	r.ok("stop", tk.Slug)
}
