package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStopParksAndKillsTheAgent(t *testing.T) {
	r := newRepo(t)
	r = r.with(script(t, "print working hard", "hang"))
	r.create("long job")
	r.ok("start", "long-job", "--command", fakeAgentBin)
	pid := agentPID(t, r)
	if msg := r.fails(1, nil, "stop", "long-jobx"); !strings.Contains(msg, "no task") {
		t.Fatalf("stop of an unknown task: %s", msg)
	}
	out := r.ok("stop", "long-job", "-m", "wrong direction")
	if !strings.Contains(out, "now blocked") {
		t.Fatalf("stop said %q", out)
	}
	deadline := time.Now().Add(15 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("agent %d still alive after stop", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s := r.showFull("long-job")
	last := s.History[len(s.History)-1]
	if s.Status != "blocked" || last.Op != "stop" || last.Actor != "human" || last.From != "working" {
		t.Fatalf("after stop: %s, last op %+v", s.Status, last)
	}
	if tn := s.TurnList[len(s.TurnList)-1]; tn.Kind != "stop" || !strings.Contains(tn.Content, "wrong direction") {
		t.Fatalf("stop turn %+v", tn)
	}
	if msg := r.fails(1, nil, "stop", "long-job"); !strings.Contains(msg, "only a working task") {
		t.Fatalf("second stop: %s", msg)
	}
}

func TestResumeRedeliversFeedbackAfterMergingUpstream(t *testing.T) {
	r := manualResume(newRepo(t))
	counter := filepath.Join(t.TempDir(), "runs")
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	r = r.with(script(t, "attempt "+counter,
		"when 1 exit 3", "when 2 exit 3", "when 3 exit 3",
		"argv "+argvFile, "print resumed fine"))
	r.create("Crashy", "-m", "Do the thing exactly like this.")
	if msg := r.fails(1, nil, "resume", "crashy"); !strings.Contains(msg, "interrupted") {
		t.Fatalf("resume of a backlog task: %s", msg)
	}
	r.ok("start", "crashy", "--command", fakeAgentBin)
	r.waitStatus("crashy", "interrupted")
	if err := os.WriteFile(filepath.Join(r.dir, "up.txt"), []byte("up\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("add", "up.txt")
	r.git("commit", "-q", "-m", "upstream moved")

	r.ok("resume", "crashy")
	s := r.waitStatus("crashy", "blocked")
	argv := readArgv(t, argvFile)
	prompt := argv[len(argv)-1]
	if !strings.HasPrefix(prompt, "You are being resumed after a crash. Upstream has been merged") {
		t.Fatalf("clean-path prompt %q", prompt)
	}
	if !strings.HasSuffix(prompt, "verbatim:\n\nCrashy\n\nDo the thing exactly like this.") {
		t.Fatalf("the never-delivered start prompt was not re-delivered verbatim: %q", prompt)
	}
	if _, err := gitErr(r, "merge-base", "--is-ancestor", "main", "lazy/crashy"); err != nil {
		t.Fatal("the clean resume did not merge upstream")
	}
	if s.TurnList[0].FeedbackDelivery != "consumed" || s.Session.ConsecutiveInterruptions != 0 {
		t.Fatalf("after a completed resume: %+v %+v", s.TurnList[0], s.Session)
	}
}

func TestResumeDirtyWorktreeSkipsTheMerge(t *testing.T) {
	r := manualResume(newRepo(t))
	counter := filepath.Join(t.TempDir(), "runs")
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	r = r.with(script(t, "attempt "+counter,
		"when 1 write half.txt half written", "when 1 exit 3", "when 2 exit 3", "when 3 exit 3",
		"argv "+argvFile, "print looked at the mess"))
	r.create("dirty crash")
	r.ok("start", "dirty-crash", "--command", fakeAgentBin)
	r.waitStatus("dirty-crash", "interrupted")
	r.git("commit", "-q", "--allow-empty", "-m", "upstream moved")
	r.ok("resume", "dirty-crash")
	r.waitStatus("dirty-crash", "blocked")
	argv := readArgv(t, argvFile)
	if !strings.HasPrefix(argv[len(argv)-1], "You are being resumed after a crash. There are uncommitted changes") {
		t.Fatalf("dirty-path prompt %q", argv[len(argv)-1])
	}
	if _, err := gitErr(r, "merge-base", "--is-ancestor", "main", "lazy/dirty-crash"); err == nil {
		t.Fatal("upstream was merged into a dirty worktree")
	}
}
