package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAskIsReadOnlyAndStatusNeutral(t *testing.T) {
	r := withFakeClaude(t, newRepo(t))
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	first := r.with(script(t, "claude-init s1", "claude-result did the work"))
	first.create("asked")
	if msg := first.fails(1, nil, "ask", "asked", "-m", "why?"); !strings.Contains(msg, "backlog") {
		t.Fatalf("ask of a backlog task: %s", msg)
	}
	first.ok("start", "asked")
	first.waitStatus("asked", "blocked")

	q := r.with(script(t, "argv "+argvFile, "claude-init s1", "claude-result Because the test races the login timer."))
	out := q.ok("ask", "asked", "-m", "Why did you change the timeout?")
	if strings.TrimSpace(out) != "Because the test races the login timer." {
		t.Fatalf("ask printed %q", out)
	}
	argv := strings.Join(readArgv(t, argvFile), " ")
	for _, want := range []string{"--resume=s1", "--permission-mode dontAsk", "--disallowedTools=Edit,Write,MultiEdit,NotebookEdit,Bash", "-- Why did you change the timeout?"} {
		if !strings.Contains(argv, want) {
			t.Fatalf("ask argv %q lacks %q", argv, want)
		}
	}
	s := q.showFull("asked")
	if s.Status != "blocked" {
		t.Fatalf("ask changed the status to %s", s.Status)
	}
	n := len(s.TurnList)
	if s.TurnList[n-2].Kind != "ask" || s.TurnList[n-2].FeedbackDelivery != "consumed" || s.TurnList[n-1].Role != "agent" {
		t.Fatalf("ask turns %+v", s.TurnList[n-2:])
	}
	// An agent error during an ask restores the status too.
	bad := r.with(script(t, "claude-init s1", `claude-api-error 401 Invalid API key · Please run /login`))
	if msg := bad.fails(1, nil, "ask", "asked", "-m", "still there?"); !strings.Contains(msg, "could not answer") {
		t.Fatalf("failed ask: %s", msg)
	}
	if s := bad.showFull("asked"); s.Status != "blocked" {
		t.Fatalf("a failed ask left the task %s", s.Status)
	}
}

func TestSyncMergesUpstream(t *testing.T) {
	r := newRepo(t)
	r = r.with(script(t, "write mine.txt mine", "commit agent work"))
	r.create("synced")
	r.ok("start", "synced", "--command", fakeAgentBin)
	r.waitStatus("synced", "blocked")
	if err := os.WriteFile(filepath.Join(r.dir, "theirs.txt"), []byte("theirs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("add", "theirs.txt")
	r.git("commit", "-q", "-m", "upstream")
	out := r.ok("sync", "synced")
	if !strings.Contains(out, "merged main") || !strings.Contains(out, "now blocked") {
		t.Fatalf("sync said %q", out)
	}
	if _, err := gitErr(r, "merge-base", "--is-ancestor", "main", "lazy/synced"); err != nil {
		t.Fatal("sync did not merge main")
	}
	// A conflicting sync is aborted and reported; the task parks again.
	if err := os.WriteFile(filepath.Join(r.dir, "mine.txt"), []byte("main's version\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("add", "mine.txt")
	r.git("commit", "-q", "-m", "main edits mine.txt")
	if msg := r.fails(1, nil, "sync", "synced"); !strings.Contains(msg, "mine.txt") {
		t.Fatalf("conflicting sync: %s", msg)
	}
	if s := r.showFull("synced"); s.Status != "blocked" {
		t.Fatalf("after a conflicting sync: %s", s.Status)
	}
}

func TestAskWaitsOnTheDaemonStream(t *testing.T) {
	r := withDaemon(t, withFakeClaude(t, newRepo(t)))
	first := r.with(script(t, "claude-init s1", "claude-result ready"))
	first.create("streamed")
	first.ok("start", "streamed")
	first.waitStatus("streamed", "blocked")
	q := r.with(script(t, "claude-init s1", "claude-say checking the timer code", "sleep 4s", "claude-result It is the 200 ms debounce."))
	res := q.run(nil, "ask", "streamed", "-m", "what causes it?")
	if res.Code != 0 || strings.TrimSpace(res.Stdout) != "It is the 200 ms debounce." {
		t.Fatalf("ask: %s", res)
	}
	if !strings.Contains(res.Stderr, "streamed agent: checking the timer code") {
		t.Fatalf("no progress from the daemon's stream on stderr:\n%s", res.Stderr)
	}
}
