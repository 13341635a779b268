package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests run the fake agent replaying transcripts captured from the
// real CLIs (agent/testdata), so hangs, retries and crashes have the real
// event shapes. The real CLIs themselves run in agentcli_test.go.

func transcript(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "agent", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitLive polls show --json until the live substate contains want.
func (r *runner) waitLive(name, want string) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := r.showFull(name)
		if strings.Contains(s.Live, want) {
			return
		}
		if s.Status != "working" || time.Now().After(deadline) {
			r.t.Fatalf("%s: live substate %q (status %s), want %q", name, s.Live, s.Status, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A Claude that only retries an unreachable API shows it, is not seen as
// progressing, and is parked blocked within lazy.unreachableTimeout.
func TestClaudeRetryingUnreachableParksWithinTheBound(t *testing.T) {
	r := withFakeClaude(t, manualResume(newRepo(t)))
	r.git("config", "lazy.unreachableTimeout", "4s")
	r.git("config", "lazy.watchdogKillGrace", "1s")
	r = r.with(script(t, "replay "+transcript(t, "claude/refused.jsonl")+" 3", "hang"))
	tk := r.create("offline")
	began := time.Now()
	r.ok("start", tk.Slug)
	r.waitLive(tk.Slug, "retrying (agent: transient_unreachable) attempt 2: cannot connect to its API")
	s := r.waitStatus(tk.Slug, "blocked")
	took := time.Since(began)
	reason := s.Session.InterruptReason
	if !strings.HasPrefix(reason, "transient_unreachable: the agent's API stayed unreachable for ") || !strings.Contains(reason, "lazy.unreachableTimeout is 4s") || strings.Count(reason, "transient_unreachable") != 1 {
		t.Fatalf("reason %q", reason)
	}
	if took > 40*time.Second {
		t.Fatalf("parking took %s with a 4s bound", took)
	}
	if out := r.ok("show", tk.Slug); !strings.Contains(out, "Blocked:  transient_unreachable: the agent's API stayed unreachable") || strings.Contains(out, "Interrupted:") {
		t.Fatalf("show:\n%s", out)
	}
}

// Codex's "Reconnecting..." error events are retry notices: a turn that
// reconnects and then succeeds is a success.
func TestCodexReconnectThenSucceed(t *testing.T) {
	r := withFakeClaude(t, newRepo(t))
	r = r.with(script(t, "replay "+transcript(t, "codex/reconnect.jsonl")))
	tk := r.create("flaky network")
	r.ok("start", tk.Slug, "--agent", "codex")
	s := r.waitStatus(tk.Slug, "blocked")
	last := s.TurnList[len(s.TurnList)-1]
	if last.Content != "Recovered." || last.FailureClass != "" || s.Session.InterruptReason != "" {
		t.Fatalf("turn %+v, reason %q", last, s.Session.InterruptReason)
	}
}

// Codex without network prints reconnect notices forever: they are not
// progress, and the bound parks the task blocked.
func TestCodexWithoutNetworkParks(t *testing.T) {
	r := withFakeClaude(t, manualResume(newRepo(t)))
	r.git("config", "lazy.unreachableTimeout", "3s")
	r.git("config", "lazy.watchdogKillGrace", "1s")
	r = r.with(script(t, "replay "+transcript(t, "codex/no-network.jsonl"), "hang"))
	tk := r.create("no network")
	r.ok("start", tk.Slug, "--agent", "codex")
	r.waitLive(tk.Slug, "retrying (agent: transient_unreachable)")
	s := r.waitStatus(tk.Slug, "blocked")
	if reason := s.Session.InterruptReason; !strings.HasPrefix(reason, "transient_unreachable: the agent's API stayed unreachable") || !strings.Contains(reason, "Reconnecting... waiting for network (Connection failed: error sending request)") {
		t.Fatalf("reason %q", reason)
	}
}

// A real no-credentials transcript, ended by the terminal-mode sequences
// Claude writes under a pty: the reason is readable and the class shows
// once.
func TestClaudeNotLoggedInReadsOnce(t *testing.T) {
	r := withFakeClaude(t, newRepo(t))
	esc := filepath.Join(t.TempDir(), "escapes")
	if err := os.WriteFile(esc, []byte("\x1b[?1006l\x1b[?1003l\x1b[?25h\x1b]0;\x07\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = r.with(script(t, "replay "+transcript(t, "claude/nocreds.jsonl"), "replay "+esc, "exit 1"))
	tk := r.create("no login")
	r.ok("start", tk.Slug)
	s := r.waitStatus(tk.Slug, "blocked")
	if s.Session.InterruptReason != "fatal_auth: Not logged in · Please run /login" {
		t.Fatalf("reason %q", s.Session.InterruptReason)
	}
	if raw := r.ok("show", "--json", tk.Slug); strings.Contains(raw, `\u001b`) || strings.Contains(raw, "\x1b") {
		t.Fatalf("escape sequences were recorded:\n%s", raw)
	}
	out := r.ok("show", tk.Slug)
	if !strings.Contains(out, "Blocked:  fatal_auth: Not logged in · Please run /login") || strings.Contains(out, "fatal_auth: fatal_auth") {
		t.Fatalf("show:\n%s", out)
	}
}

// Without any credentials, start, unblock and resume refuse at once with
// one sentence on how to log in, and the reconciler does not auto-resume.
func TestCredentialGate(t *testing.T) {
	r := withFakeClaude(t, manualResume(newRepo(t)))
	// A home with no login, and no key in the environment.
	none := r.with("HOME="+t.TempDir(), "ANTHROPIC_API_KEY=", "ANTHROPIC_AUTH_TOKEN=", "CLAUDE_CODE_OAUTH_TOKEN=", "ANTHROPIC_BASE_URL=", "CLAUDE_CONFIG_DIR=",
		"CLAUDE_CODE_USE_BEDROCK=", "CLAUDE_CODE_USE_VERTEX=", "CLAUDE_CODE_USE_FOUNDRY=", "OPENAI_API_KEY=", "CODEX_API_KEY=", "CODEX_HOME=")
	tk := r.create("no creds")
	msg := none.fails(1, nil, "start", tk.Slug)
	if !strings.Contains(msg, "the claude agent has no credentials") || !strings.Contains(msg, "/login") || !strings.Contains(msg, "nothing was started") || strings.Count(strings.TrimSpace(msg), "\n") > 0 {
		t.Fatalf("start without credentials: %q", msg)
	}
	if s := r.show(tk.Slug); s.Status != "backlog" {
		t.Fatalf("status %s", s.Status)
	}
	if msg := none.fails(1, nil, "start", tk.Slug, "--agent", "codex"); !strings.Contains(msg, "codex login") {
		t.Fatalf("codex start without credentials: %q", msg)
	}

	// A task whose agent crashed (interrupted) while credentials existed.
	crash := r.with(script(t, "print oops", "exit 3"))
	crash.ok("start", tk.Slug)
	s := crash.waitStatus(tk.Slug, "interrupted")
	turns := len(s.TurnList)
	if msg := none.fails(1, nil, "resume", tk.Slug); !strings.Contains(msg, "resume no-creds: the claude agent has no credentials") {
		t.Fatalf("resume without credentials: %q", msg)
	}
	if msg := none.fails(1, nil, "unblock", tk.Slug, "-m", "try again"); !strings.Contains(msg, "unblock no-creds: the claude agent has no credentials") {
		t.Fatalf("unblock without credentials: %q", msg)
	}
	// Auto-resume on: a reconcile without credentials leaves it for a human.
	none.git("config", "lazy.autoResume", "true")
	s = none.showFull(tk.Slug)
	if s.Status != "interrupted" || len(s.TurnList) != turns {
		t.Fatalf("auto-resumed without credentials: %s, %d turns (was %d)", s.Status, len(s.TurnList), turns)
	}
	if res := none.run(nil, "doctor"); !strings.Contains(res.Stdout, "not auto-resumed: the claude agent has no credentials") {
		t.Fatalf("doctor: %s", res)
	}
}

// A paired agent gets lazy's MCP tools like a supervised turn: its CLI's
// MCP flags, a token live while the task pairs, revoked afterwards.
func TestPairedAgentHasLazyTools(t *testing.T) {
	r := withDaemon(t, withFakeClaude(t, newRepo(t)))
	tk := r.create("paired tools")
	r.with(script(t, "claude-init s1", "claude-result done")).ok("start", tk.Slug)
	r.waitStatus(tk.Slug, "blocked")
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	human := r.with(script(t, "argv "+argvFile, "mcp-comment hello while pairing", "print bye"))
	cmd, _, output := ptyRun(t, human, nil, "pair", tk.Slug)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lazy pair: %v\n%s", err, output())
	}
	argv := strings.Join(readArgv(t, argvFile), " ")
	if !strings.Contains(argv, "--allowedTools=mcp__lazy") || !strings.Contains(argv, "--mcp-config=") || !strings.Contains(argv, "--resume=s1") {
		t.Fatalf("pair argv %q", argv)
	}
	found := false
	for _, c := range r.show(tk.Slug).CommentList {
		found = found || c.Text == "hello while pairing" && c.Actor == "agent"
	}
	if !found {
		t.Fatalf("the paired agent's comment is missing:\n%s", output())
	}
}

// A turn that ends with uncommitted changes gets one push-back turn from
// the supervisor, in the same conversation, when lazy.pushBack is on
// (lazy.uncommitted push-back); by default lazy commits them itself.
func TestSupervisorPushesBackOnUncommittedChanges(t *testing.T) {
	r := withFakeClaude(t, newRepo(t))
	r.git("config", "lazy.pushBack", "true")
	counter := filepath.Join(t.TempDir(), "runs")
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	sc := r.with(script(t, "attempt "+counter, "argv "+argvFile, "claude-init s1",
		"when 1 write left.txt uncommitted", "when 1 claude-result wrote left.txt",
		"when 2 commit agent: left.txt", "when 2 claude-result committed left.txt",
		"when 3 write again.txt x", "when 3 claude-result should not run"))
	tk := sc.create("dirty")
	sc.ok("start", tk.Slug)
	s := sc.waitStatus(tk.Slug, "blocked")
	n := len(s.TurnList)
	first, pb, last := s.TurnList[n-3], s.TurnList[n-2], s.TurnList[n-1]
	if first.Role != "agent" || first.Content != "wrote left.txt" ||
		pb.Role != "human" || pb.Actor != "supervisor" || pb.Kind != "push-back" || !strings.Contains(pb.Content, "uncommitted changes in the worktree (1 file: left.txt)") ||
		last.Content != "committed left.txt" || len(last.Commits) != 1 {
		t.Fatalf("turns %+v", s.TurnList)
	}
	if b, _ := os.ReadFile(counter); string(b) != "2" {
		t.Fatalf("the agent ran %s times, want 2 (one push-back, at most)", b)
	}
	if argv := strings.Join(readArgv(t, argvFile), " "); !strings.Contains(argv, "--resume=s1") || !strings.Contains(argv, "[supervisor] Your turn ended with uncommitted changes") {
		t.Fatalf("push-back argv %q", argv)
	}
	if out := r.ok("show", tk.Slug); !strings.Contains(out, "supervisor push-back") {
		t.Fatalf("show:\n%s", out)
	}

	// keep: the dirty turn parks as it is.
	r.git("config", "lazy.pushBack", "false")
	r.git("config", "lazy.uncommitted", "keep")
	off := r.with(script(t, "write off.txt uncommitted", "claude-result left it"))
	tk2 := off.create("no push back")
	off.ok("start", tk2.Slug)
	s = off.waitStatus(tk2.Slug, "blocked")
	if last := s.TurnList[len(s.TurnList)-1]; last.Content != "left it" || len(last.Commits) != 0 || s.TurnList[len(s.TurnList)-2].Kind == "push-back" {
		t.Fatalf("turns %+v", s.TurnList)
	}

	// The default: lazy commits what was left, as the agent's, once.
	r.git("config", "--unset", "lazy.uncommitted")
	r.git("config", "--unset", "lazy.pushBack")
	def := r.with(script(t, "attempt "+filepath.Join(t.TempDir(), "runs"), "write def.txt uncommitted", "claude-result Left def.txt for you"))
	tk3 := def.create("default")
	def.ok("start", tk3.Slug)
	s = def.waitStatus(tk3.Slug, "blocked")
	if last := s.TurnList[len(s.TurnList)-1]; last.Content != "Left def.txt for you" || len(last.Commits) != 1 || s.TurnList[len(s.TurnList)-2].Kind == "push-back" {
		t.Fatalf("turns %+v", s.TurnList)
	}
	if msg := r.git("log", "-1", "--format=%an <%ae>|%s", "lazy/"+tk3.Slug); msg != "Claude Code (via lazy) <claude@agents.lazy.invalid>|Left def.txt for you" {
		t.Fatalf("the leftover commit: %q", msg)
	}
}

// An agent that prints nothing while it edits and commits still makes
// progress: the watchdog counts worktree changes too.
func TestWorktreeChangesAreProgress(t *testing.T) {
	r := withFakeClaude(t, manualResume(newRepo(t)))
	// The run takes 9 s with no output after init; changes come every
	// 1.5 s and are looked at every 5s/3, well inside the 5 s limit.
	r.git("config", "lazy.watchdogTimeout", "5s")
	r.git("config", "lazy.watchdogKillGrace", "1s")
	r = r.with(script(t, "claude-init s1",
		"sleep 1500ms", "write a.txt one", "sleep 1500ms", "write b.txt two", "sleep 1500ms", "commit agent: a and b",
		"sleep 1500ms", "write c.txt three", "sleep 1500ms", "commit agent: c", "sleep 1500ms", "claude-result quiet but busy"))
	tk := r.create("quiet worker")
	r.ok("start", tk.Slug)
	s := r.waitStatus(tk.Slug, "blocked")
	if last := s.TurnList[len(s.TurnList)-1]; last.Content != "quiet but busy" || len(last.Commits) != 2 {
		t.Fatalf("turn %+v, reason %q", last, s.Session.InterruptReason)
	}
}
