package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mcpCallLine is a fake agent's script line that calls tool over the MCP
// server lazy gave its turn.
func mcpCallLine(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return "mcp-call " + tool + " " + string(b)
}

// writeScript writes a fake agent's script where a sandboxed agent can
// read it (sandboxBase keeps the test's files out of /tmp).
func writeScript(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The attack, with real bubblewrap: an agent running sandboxed
// creates a subtask over MCP and starts it with its own command, which
// tries to write the main checkout and $HOME, first asking to turn the
// sandbox off, open the network and loosen the permission mode. Each
// loosening is refused with the reason; the start that is granted runs
// the command inside bubblewrap, where both writes fail and nothing
// lands; lazy show says so. A human may still loosen, on the command
// line.
func TestAgentCannotUnboxItsWork(t *testing.T) {
	base := sandboxBase(t)
	r := withDaemon(t, newRepo(t))
	home := filepath.Join(base, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	// lazy.sandbox stays off: only the parent is sandboxed, because its
	// human said so; the network, when sandboxed, is off; work turns run
	// in Claude's default mode.
	r.git("config", "lazy.sandbox.network", "off")
	r.git("config", "lazy.claude.permissionMode", "default")
	parent := r.create("boxed parent")
	readme := filepath.Join(r.dir, "README.md")
	planted := filepath.Join(r.dir, "planted.txt")
	escaped := filepath.Join(home, "escaped")
	child := writeScript(t,
		"try-write "+readme,
		"try-write "+planted,
		"try-write "+escaped,
		"write inside.txt child work",
		"commit agent: child work",
		"exit 0")
	command := fakeAgentBin + " --script=" + child
	start := func(extra map[string]any) string {
		args := map[string]any{"task": "escape", "command": command}
		for k, v := range extra {
			args[k] = v
		}
		return mcpCallLine(t, "lazy_start", args)
	}
	sr := r.with("HOME="+home, script(t,
		mcpCallLine(t, "lazy_create", map[string]any{"title": "escape"}),
		start(map[string]any{"sandbox": "off"}),
		start(map[string]any{"network": "on"}),
		start(map[string]any{"network": "example.com"}),
		start(map[string]any{"permission_mode": "bypassPermissions"}),
		start(nil),
		"exit 0"))
	sr.ok("start", parent.Slug, "--sandbox", "on", "--command", fakeAgentBin)
	r.waitStatus(parent.Slug, "blocked")
	log := agentLog(t, r, parent.ID)
	for _, want := range []string{
		"mcp-call lazy_create: ok",
		"mcp-call lazy_start: refused (lazy_start failed: start escape: it would run less confined than it must (it would run outside the sandbox); work an agent or a builder starts runs at least as confined as the session that asks and as this machine's config, and only a human loosens that, on the command line (lazy start escape --sandbox off, or git config lazy.sandbox.* and lazy.claude.permissionMode); nothing was started",
		"(network on is more open than network off)",
		"(the network allowlist example.com is more open than network off)",
		"(permission mode bypassPermissions is looser than default)",
	} {
		if !strings.Contains(log, want) {
			t.Fatalf("the parent agent's log lacks %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "mcp-call lazy_start: refused"); n != 4 {
		t.Fatalf("%d starts refused, want 4:\n%s", n, log)
	}
	if !strings.Contains(log, "mcp-call lazy_start: ok") {
		t.Fatalf("the confined start was refused too:\n%s", log)
	}

	sub := r.waitStatus("escape", "blocked")
	clog := agentLog(t, r, sub.ID)
	for _, p := range []string{readme, planted, escaped} {
		if !strings.Contains(clog, "try-write "+p+": refused") {
			t.Fatalf("the subtask's command could write %s: it did not run in the sandbox:\n%s", p, clog)
		}
	}
	if b, _ := os.ReadFile(readme); string(b) != "# test\n" {
		t.Fatalf("the main checkout changed: %q", b)
	}
	for _, p := range []string{planted, escaped} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s exists: %v", p, err)
		}
	}
	if got := r.git("show", "lazy/escape:inside.txt"); got != "child work" {
		t.Fatalf("the subtask's work in its own worktree: %q", got)
	}
	if out := r.ok("show", "escape"); !strings.Contains(out, "Permissions (exec, sandboxed, network off)") {
		t.Fatalf("lazy show does not say the subtask runs sandboxed with no network:\n%s", out)
	}

	// The human may loosen: lazy start --sandbox off on a subtask of the
	// same sandboxed parent runs it unconfined.
	free := r.create("let out", "--parent", parent.Slug)
	marker := filepath.Join(base, "written-by-the-human's-choice")
	r.with(script(t, "try-write "+marker, "exit 0")).ok("start", free.Slug, "--sandbox", "off", "--command", fakeAgentBin)
	r.waitStatus(free.Slug, "blocked")
	if log := agentLog(t, r, free.ID); !strings.Contains(log, "try-write "+marker+": ok") {
		t.Fatalf("a human's start --sandbox off did not win:\n%s", log)
	}
	if out := r.ok("show", free.Slug); !strings.Contains(out, "Permissions (exec, allow-list)") {
		t.Fatalf("lazy show of the human's unconfined subtask:\n%s", out)
	}
}

// Where the sandbox cannot run for the work an agent starts (the daemon
// that starts it finds no bwrap on its PATH), the start is refused with
// the reason and the fix, and nothing runs unconfined.
func TestNoBwrapRefusesAgentWork(t *testing.T) {
	sandboxBase(t)
	r := withDaemon(t, newRepo(t))
	bin := t.TempDir()
	if err := os.Symlink("/usr/bin/git", filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	// The daemon, which runs the agents' MCP calls, starts without bwrap.
	r.with("PATH="+bin).ok("daemon", "--ensure")
	parent := r.create("boxed parent")
	marker := filepath.Join(t.TempDir(), "ran-unconfined")
	command := fakeAgentBin + " --script=" + writeScript(t, "try-write "+marker, "exit 0")
	r.with(script(t,
		mcpCallLine(t, "lazy_create", map[string]any{"title": "nowhere to run"}),
		mcpCallLine(t, "lazy_start", map[string]any{"task": "nowhere-to-run", "command": command}),
		"exit 0")).ok("start", parent.Slug, "--sandbox", "on", "--command", fakeAgentBin)
	r.waitStatus(parent.Slug, "blocked")
	log := agentLog(t, r, parent.ID)
	for _, want := range []string{
		"mcp-call lazy_create: ok",
		"mcp-call lazy_start: refused (lazy_start failed: start nowhere-to-run: the task runs sandboxed",
		"bubblewrap (bwrap) is not installed; install it",
		"nothing was started",
	} {
		if !strings.Contains(log, want) {
			t.Fatalf("the parent agent's log lacks %q:\n%s", want, log)
		}
	}
	if s := r.show("nowhere-to-run"); s.Status != "backlog" {
		t.Fatalf("the refused subtask is %s", s.Status)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the command ran: %v", err)
	}
}

// The daemon, which starts what agents ask for over MCP, lives long: it
// confines each start by git config as it is then, not as it was when the
// daemon began. An unconfined agent's subtask runs sandboxed once
// lazy.sandbox is on.
func TestDaemonReadsTheSandboxAfresh(t *testing.T) {
	base := sandboxBase(t)
	r := withDaemon(t, newRepo(t))
	parent, token := agentWithToken(t, r, "unconfined parent")
	r.ok("daemon", "--ensure")
	r.git("config", "lazy.sandbox", "on")
	s, _ := mcpClient(t, r, []string{"LAZY_MCP_TOKEN=" + token}, "mcp-proxy")
	var created struct {
		Task struct{ ID, Slug string } `json:"task"`
	}
	decodeInto(t, call(t, s, "lazy_create", map[string]any{"title": "after the change"}, false), &created)
	planted := filepath.Join(base, "planted-outside")
	call(t, s, "lazy_start", map[string]any{"task": created.Task.Slug, "command": fakeAgentBin + " --script=" + writeScript(t, "try-write "+planted, "exit 0")}, false)
	r.waitStatus(created.Task.Slug, "blocked")
	if log := agentLog(t, r, created.Task.ID); !strings.Contains(log, "try-write "+planted+": refused") {
		t.Fatalf("the subtask ran unconfined after lazy.sandbox was turned on (parent %s):\n%s", parent.Slug, log)
	}
}

// A sandbox with a network allowlist confines the merge gate as it does
// the agent: the gate's commands run with the allowlist's proxy as their
// only way out (before, such a gate could not start at all).
func TestGateRunsUnderTheAllowlist(t *testing.T) {
	sandboxBase(t)
	r := newRepo(t)
	r.git("config", "lazy.sandbox", "on")
	r.git("config", "lazy.sandbox.network", "example.com")
	r.git("config", "lazy.gate", `test -n "$HTTPS_PROXY" && test -e g.txt`)
	tk := workedTask(t, r, "gated behind the proxy", "g.txt gated")
	if out := r.ok("accept", tk.Slug); !strings.Contains(out, "Accepted") {
		t.Fatalf("accept: %s", out)
	}
	if got := r.git("show", "main:g.txt"); got != "gated" {
		t.Fatalf("main:g.txt = %q", got)
	}
}
