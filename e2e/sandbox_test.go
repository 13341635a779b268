package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/lazyorch/lazy/sandbox"
)

// sandboxBase makes the test's temporary files live outside /tmp, which
// the sandbox replaces with a private one: a write the sandbox refuses
// must fail, not land in a private copy.
func sandboxBase(t *testing.T) string {
	t.Helper()
	full(t) // a real client: never in the fast lane
	if err := sandbox.Check(context.Background()); err != nil {
		if os.Getenv("LAZY_REQUIRE_BWRAP") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	base, err := os.MkdirTemp("/var/tmp", "lazy-e2e-sandbox-")
	if err != nil {
		t.Skip("no /var/tmp:", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	t.Setenv("TMPDIR", base)
	return base
}

func agentLog(t *testing.T, r *runner, id string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, ".git", "lazy", "logs", id, "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSandboxedAgentIsConfined(t *testing.T) {
	base := sandboxBase(t)
	r := withDaemon(t, newRepo(t))
	home := filepath.Join(base, "home")
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(home, ".ssh", "id_test")
	if err := os.WriteFile(secret, []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := workedTask(t, r, "another task", "o.txt o")
	otherWT := sessionOf(t, r, other.ID)["worktree"].(string)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()

	r.git("config", "lazy.sandbox", "on")
	r.git("config", "lazy.sandbox.network", "off")
	tk := r.create("confined")
	readme := filepath.Join(r.dir, "README.md")
	sr := r.with("HOME="+home, script(t,
		"try-write "+readme,
		"try-read "+secret,
		"try-write "+filepath.Join(otherWT, "stolen"),
		"try-connect "+ln.Addr().String(),
		"mcp-comment hello from the sandbox",
		"write mine.txt confined work",
		"commit agent: confined work",
		"exit 0"))
	sr.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	log := agentLog(t, r, tk.ID)
	for _, want := range []string{
		"try-write " + readme + ": refused",
		"try-read " + secret + ": refused",
		"try-write " + filepath.Join(otherWT, "stolen") + ": refused",
		"try-connect " + ln.Addr().String() + ": refused",
		"mcp-comment : ok",
	} {
		if !strings.Contains(log, want) {
			t.Fatalf("agent log lacks %q:\n%s", want, log)
		}
	}
	if got := r.git("show", "lazy/confined:mine.txt"); got != "confined work" {
		t.Fatalf("the sandboxed commit did not land: %q", got)
	}
	if out := r.ok("show", tk.Slug); !strings.Contains(out, "hello from the sandbox") {
		t.Fatalf("the MCP comment from inside the sandbox is missing:\n%s", out)
	}
	if b, _ := os.ReadFile(readme); string(b) != "# test\n" {
		t.Fatalf("the main checkout changed: %q", b)
	}

	// An ask is read-only, enforced for the exec agent too.
	answer := filepath.Join(sessionOf(t, r, tk.ID)["worktree"].(string), "answer.txt")
	r.with(script(t, "try-write "+answer, "print answered")).ok("ask", tk.Slug, "-m", "may you write?")
	r.waitStatus(tk.Slug, "blocked")
	if log := agentLog(t, r, tk.ID); !strings.Contains(log, "try-write "+answer+": refused") {
		t.Fatalf("the ask could write its worktree:\n%s", log)
	}
}

func TestSandboxedStartRefusesWithoutBwrap(t *testing.T) {
	r := newRepo(t)
	r.git("config", "lazy.sandbox", "on")
	tk := r.create("needs a sandbox")
	// A PATH without bwrap: the start must refuse, never run unconfined.
	bin := t.TempDir()
	if err := os.Symlink("/usr/bin/git", filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	msg := r.with("PATH="+bin).fails(1, nil, "start", tk.Slug, "--command", fakeAgentBin)
	if !strings.Contains(msg, "bwrap") || !strings.Contains(msg, "nothing was started") {
		t.Fatalf("start without bwrap: %s", msg)
	}
	if s := r.show(tk.Slug); s.Status != "backlog" {
		t.Fatalf("the task is %s", s.Status)
	}
}

func TestSandboxNetworkAllowlist(t *testing.T) {
	sandboxBase(t)
	r := newRepo(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	r.git("config", "lazy.sandbox", "on")
	r.git("config", "lazy.sandbox.network", "127.0.0.1")
	tk := r.create("allowlisted")
	r.with(script(t, "try-proxy "+addr, "try-proxy localhost:"+port, "try-connect "+addr, "exit 0")).
		ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	log := agentLog(t, r, tk.ID)
	for _, want := range []string{
		"try-proxy " + addr + ": ok",
		"try-proxy localhost:" + port + ": refused (proxy answered HTTP/1.1 403",
		"try-connect " + addr + ": refused", // no route but the proxy
	} {
		if !strings.Contains(log, want) {
			t.Fatalf("agent log lacks %q:\n%s", want, log)
		}
	}
	if msg := r.with().run(nil, "start", "--sandbox", "maybe", tk.Slug); msg.Code == 0 {
		t.Fatal("start --sandbox maybe was accepted")
	}
}

func TestCreateSandboxOnlyAddsConfinement(t *testing.T) {
	base := sandboxBase(t)
	r := newRepo(t)
	tk := r.create("asks for a sandbox", "--sandbox")
	readme := filepath.Join(r.dir, "README.md")
	r.with(script(t, "try-write "+readme, "exit 0")).ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	if log := agentLog(t, r, tk.ID); !strings.Contains(log, "try-write "+readme+": refused") {
		t.Fatalf("a task created with --sandbox ran unconfined with lazy.sandbox off:\n%s", log)
	}
	// The local user may still decide otherwise, explicitly.
	free := r.create("sandboxed unless told", "--sandbox")
	marker := filepath.Join(base, "outside")
	r.with(script(t, "try-write "+marker, "exit 0")).ok("start", free.Slug, "--sandbox", "off", "--command", fakeAgentBin)
	r.waitStatus(free.Slug, "blocked")
	if log := agentLog(t, r, free.ID); !strings.Contains(log, "try-write "+marker+": ok") {
		t.Fatalf("start --sandbox off did not win:\n%s", log)
	}
}

func TestSandboxedChatIsReadOnly(t *testing.T) {
	sandboxBase(t)
	r := newRepo(t)
	r.git("config", "lazy.sandbox", "on")
	tk := workedTask(t, r, "talk to me", "c.txt c")
	probe := filepath.Join(sessionOf(t, r, tk.ID)["worktree"].(string), "written-in-chat")
	chat := r.with("SHELL="+fakeAgentBin, script(t, "try-write "+probe, "print bye"))
	cmd, _, out := ptyRun(t, chat, &pty.Winsize{Rows: 24, Cols: 200}, "chat", tk.Slug)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chat: %v\n%s", err, out())
	}
	for _, want := range []string{"sandboxed", "try-write " + probe + ": refused"} {
		if !strings.Contains(out(), want) {
			t.Fatalf("chat output lacks %q:\n%s", want, out())
		}
	}
	if _, err := os.Stat(probe); err == nil {
		t.Fatal("a sandboxed chat wrote the worktree")
	}
}
