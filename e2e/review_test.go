package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuf is a bytes.Buffer a running process writes while a test reads.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestReviewLoopDiffShowDryRunWaitAndNotify(t *testing.T) {
	r := newRepo(t)
	notified := filepath.Join(t.TempDir(), "notified")
	r.git("config", "lazy.notify.command", `printf '%s %s\n' "$LAZY_TASK_SLUG" "$LAZY_STATUS" >> `+notified)
	r = r.with(script(t,
		"print working on it",
		"write hello.txt hello from the agent",
		"commit agent: add hello.txt",
		"print done: added hello.txt",
	))
	r.create("Say hello", "-m", "Write hello.txt.")
	res := r.run(nil, "start", "say-hello", "--command", fakeAgentBin, "--wait")
	if res.Code != 0 || !strings.Contains(res.Stdout, "say-hello: blocked; next: lazy diff say-hello") {
		t.Fatalf("start --wait: %s", res)
	}
	eventually(t, "the notification", func() bool {
		b, _ := os.ReadFile(notified)
		return string(b) == "say-hello blocked\n"
	})

	if out := r.ok("diff", "say-hello"); !strings.Contains(out, "+++ b/hello.txt") || !strings.Contains(out, "+hello from the agent") {
		t.Fatalf("diff: %q", out)
	}
	if out := r.ok("diff", "say-hello", "--name-only"); out != "hello.txt\n" {
		t.Fatalf("diff --name-only: %q", out)
	}
	if out := r.ok("diff", "say-hello", "--stat"); !strings.Contains(out, "1 file changed") {
		t.Fatalf("diff --stat: %q", out)
	}
	if out := r.ok("diff", "say-hello", "--", "other.txt"); out != "No changes on lazy/say-hello against main in other.txt.\n" {
		t.Fatalf("diff limited to another path: %q", out)
	}

	show := r.ok("show", "say-hello")
	for _, want := range []string{"1 commit, 1 file changed\n         hello.txt\n", "\nNext\n  lazy diff say-hello\n  lazy accept say-hello\n"} {
		if !strings.Contains(show, want) {
			t.Fatalf("show lacks %q:\n%s", want, show)
		}
	}
	if out := r.ok("blocked"); !strings.Contains(out, "lazy diff say-hello  |  lazy accept say-hello") {
		t.Fatalf("blocked: %s", out)
	}

	mainBefore := r.git("rev-parse", "main")
	dry := r.ok("accept", "say-hello", "--dry-run")
	for _, want := range []string{"would squash-merge lazy/say-hello into main", "Commits (1):", "agent: add hello.txt", "A\thello.txt", "  Say hello\n  \n  Write hello.txt.", "Lazy-Task: "} {
		if !strings.Contains(dry, want) {
			t.Fatalf("accept --dry-run lacks %q:\n%s", want, dry)
		}
	}
	if r.git("rev-parse", "main") != mainBefore || r.show("say-hello").Status != "blocked" {
		t.Fatal("accept --dry-run changed something")
	}

	logs := r.ok("logs", "say-hello")
	if !strings.Contains(logs, "── turn 1 (start)") || !strings.Contains(logs, "working on it\ndone: added hello.txt") {
		t.Fatalf("logs: %q", logs)
	}
	if out := r.ok("logs", "say-hello", "--turn", "2"); !strings.Contains(out, "working on it") {
		t.Fatalf("logs --turn 2: %q", out)
	}
	if msg := r.fails(1, nil, "logs", "say-hello", "--turn", "7"); !strings.Contains(msg, "no agent run of turn 7 is logged; logged turns: 1") {
		t.Fatalf("logs --turn 7: %s", msg)
	}

	// wait on a settled task returns at once, with its outcome.
	if out := r.ok("wait", "say-hello"); out != "say-hello: blocked\n" {
		t.Fatalf("wait: %q", out)
	}
	r.ok("accept", "say-hello")
	if out := r.ok("wait", "say-hello", "--json"); !strings.Contains(out, `"status": "complete"`) {
		t.Fatalf("wait --json: %s", out)
	}
}

func TestLogsFollowRendersAClaudeTurnUntilItEnds(t *testing.T) {
	r := withFakeClaude(t, newRepo(t))
	goAhead := filepath.Join(t.TempDir(), "go")
	r = r.with(script(t,
		"claude-init s1",
		"claude-say Looking at the flaky test",
		`claude-tool Bash {"command":"go test ./login/..."}`,
		"wait-file "+goAhead,
		"write fix.txt fixed",
		"commit fix the race",
		"claude-result Fixed the race.",
	))
	r.create("Fix login")
	r.ok("start", "fix-login")

	cmd := exec.Command(lazyBin, "logs", "-f", "fix-login")
	cmd.Dir, cmd.Env = r.dir, r.environ()
	var out, errb syncBuf
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	eventually(t, "the tool call in the followed log", func() bool { return strings.Contains(out.String(), "→ Bash: go test ./login/...") })
	if strings.Contains(out.String(), `"type"`) {
		t.Fatalf("raw stream-json in lazy logs: %s", out.String())
	}
	if err := os.WriteFile(goAhead, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("logs -f: %v\n%s\n%s", err, out.String(), errb.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("logs -f did not end with the turn:\n%s", out.String())
	}
	got := out.String()
	for _, want := range []string{"── turn 1 (start)", "· session started (model fake)", "Looking at the flaky test", "✓ done ($0.01): Fixed the race."} {
		if !strings.Contains(got, want) {
			t.Fatalf("logs -f lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(errb.String(), "fix-login is blocked; next: lazy diff fix-login") {
		t.Fatalf("logs -f stderr: %s", errb.String())
	}
	if raw := r.ok("logs", "--raw", "fix-login"); !strings.Contains(raw, `"type":"result"`) {
		t.Fatalf("logs --raw: %s", raw)
	}
}

func TestWaitExitCodesAndTimeout(t *testing.T) {
	r := manualResume(newRepo(t))
	goAhead := filepath.Join(t.TempDir(), "go")
	r = r.with(script(t, "wait-file "+goAhead, "print broke", "exit 3"))
	r.create("breaks")
	r.ok("start", "breaks", "--command", fakeAgentBin)
	res := r.run(nil, "wait", "breaks", "--timeout", "300ms")
	if res.Code != 124 || res.Stdout != "" {
		t.Fatalf("wait --timeout on a running task: %s", res)
	}
	if err := os.WriteFile(goAhead, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res = r.run(nil, "wait", "breaks")
	if res.Code != 3 || res.Stdout != "breaks: interrupted\n" {
		t.Fatalf("wait on a crashing task: %s", res)
	}
	if msg := r.fails(1, nil, "wait", "nosuch"); !strings.Contains(msg, "nosuch") {
		t.Fatalf("wait nosuch: %s", msg)
	}
}

func TestAcceptRefusesABacklogTaskInPlainWords(t *testing.T) {
	r := newRepo(t)
	r.create("Not yet")
	for _, args := range [][]string{{"accept", "not-yet"}, {"accept", "--dry-run", "not-yet"}} {
		msg := r.fails(1, nil, args...)
		if !strings.Contains(msg, "accept not-yet: the task is in backlog and has no work yet; lazy start not-yet first") || strings.Contains(msg, "cannot move") {
			t.Fatalf("%v: %s", args, msg)
		}
	}
	if msg := r.fails(1, nil, "diff", "not-yet"); !strings.Contains(msg, "not-yet has not started, so it has no work to review; lazy start not-yet first") {
		t.Fatalf("diff on backlog: %s", msg)
	}
}

func TestUnblockFollowAndWaitAny(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "followed", "f.txt f")
	goAhead := filepath.Join(t.TempDir(), "go")
	hanging := r.with(script(t, "wait-file "+goAhead, "print never mind"))
	slow := hanging.create("slow one")
	hanging.ok("start", slow.Slug, "--command", fakeAgentBin)
	// One of the two is settled already: --any returns with it alone.
	res := r.run(nil, "wait", slow.Slug, tk.Slug, "--any")
	if res.Code != 0 || res.Stdout != tk.Slug+": blocked\n" {
		t.Fatalf("wait --any: %s", res)
	}
	if err := os.WriteFile(goAhead, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitStatus(slow.Slug, "blocked")

	next := r.with(script(t, "print second turn output", "append f.txt more", "commit agent: more"))
	res = next.run(nil, "unblock", tk.Slug, "-m", "more please", "--follow")
	if res.Code != 0 || !strings.Contains(res.Stdout, "Unblocked "+tk.Slug) || !strings.Contains(res.Stdout, "second turn output") {
		t.Fatalf("unblock --follow: %s", res)
	}
	if strings.Contains(res.Stdout, "did followed") || strings.Contains(res.Stdout, "── turn 1 ") || !strings.Contains(res.Stdout, "── turn 3 (unblock)") {
		t.Fatalf("unblock --follow replayed the earlier turn's output: %s", res.Stdout)
	}
	if !strings.Contains(res.Stderr, tk.Slug+" is blocked; next: lazy diff") {
		t.Fatalf("unblock --follow did not end with the status: %s", res.Stderr)
	}
}

func TestTheDaemonRunsTheNotifyCommand(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	notified := filepath.Join(t.TempDir(), "notified")
	r.git("config", "lazy.notify.command", `printf '%s\n' "$LAZY_MESSAGE" >> `+notified)
	r = r.with(script(t, "print working", "exit 3"))
	r.git("config", "lazy.autoResume", "false")
	tk := r.create("Crashes")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	// Nothing here reads the task: the daemon's own reconcile pass must
	// record the turn and notify.
	eventually(t, "the daemon's notification", func() bool {
		b, _ := os.ReadFile(notified)
		return string(b) == "lazy: crashes is interrupted and needs you (lazy show crashes)\n"
	})
}
