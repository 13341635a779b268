package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readArgv(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Argv []string `json:"argv"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	return got.Argv
}

func TestUnblockDeliversFeedbackVerbatimAfterMergingUpstream(t *testing.T) {
	r := newRepo(t)
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	r = r.with(script(t, "argv "+argvFile, "append agent.txt turn", "commit agent turn", "print ok"))
	r.create("iterate")
	if msg := r.fails(1, nil, "unblock", "iterate", "-m", "too early"); !strings.Contains(msg, "backlog") {
		t.Fatalf("unblock of a backlog task: %s", msg)
	}
	r.ok("start", "iterate", "--command", fakeAgentBin)
	r.waitStatus("iterate", "blocked")

	// Upstream moves on while the task waits for review.
	if err := os.WriteFile(filepath.Join(r.dir, "upstream.txt"), []byte("new on main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("add", "upstream.txt")
	r.git("commit", "-q", "-m", "upstream change")

	feedback := "Also cover logout.\n\nKeep \"quotes\", $HOME, `backticks` and\ttabs exactly."
	r.ok("unblock", "iterate", "-m", feedback)
	s := r.waitStatus("iterate", "blocked")
	argv := readArgv(t, argvFile)
	if argv[len(argv)-1] != feedback {
		t.Fatalf("agent got %q, want the feedback verbatim %q", argv[len(argv)-1], feedback)
	}
	// The upstream commit was merged into the task branch before the turn.
	if _, err := gitErr(r, "merge-base", "--is-ancestor", "main", "lazy/iterate"); err != nil {
		t.Fatal("main was not merged into the task branch before the turn")
	}
	if len(s.TurnList) != 4 {
		t.Fatalf("turns %+v", s.TurnList)
	}
	ub := s.TurnList[2]
	if ub.Kind != "unblock" || ub.Actor != "human" || ub.Content != feedback || ub.FeedbackDelivery != "consumed" {
		t.Fatalf("unblock turn %+v", ub)
	}
	// The agent turn counts only its own work, not the merged upstream.
	if files := s.TurnList[3].ChangedFiles; len(files) != 1 || files[0] != "agent.txt" {
		t.Fatalf("second agent turn changed %q", files)
	}
}

func TestUnblockFeedbackWithNULFromStdin(t *testing.T) {
	r := newRepo(t)
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	r = r.with(script(t, "argv "+argvFile))
	r.create("nul feedback")
	r.ok("start", "nul-feedback", "--command", fakeAgentBin)
	r.waitStatus("nul-feedback", "blocked")
	if res := r.run([]byte("fix\x00this"), "unblock", "nul-feedback"); res.Code != 0 {
		t.Fatal(res)
	}
	r.waitStatus("nul-feedback", "blocked")
	argv := readArgv(t, argvFile)
	if last := argv[len(argv)-1]; !strings.HasPrefix(last, `fix\u0000this`) || !strings.Contains(last, "control characters") {
		t.Fatalf("agent got %q", last)
	}
}

func TestUnblockWithConflictingUpstreamIsInterruptedAndAborted(t *testing.T) {
	r := newRepo(t)
	r = r.with(script(t, "write README.md the agent's readme", "commit agent rewrites readme"))
	r.create("conflicts")
	r.ok("start", "conflicts", "--command", fakeAgentBin)
	s := r.waitStatus("conflicts", "blocked")
	if err := os.WriteFile(filepath.Join(r.dir, "README.md"), []byte("main's readme\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("commit", "-q", "-am", "main rewrites readme")
	r.ok("unblock", "conflicts", "-m", "carry on")
	s = r.waitStatus("conflicts", "interrupted")
	if !strings.Contains(s.Session.InterruptReason, "README.md") || !strings.Contains(s.Session.InterruptReason, "aborted") {
		t.Fatalf("reason %q", s.Session.InterruptReason)
	}
	wt := s.Session.Worktree
	if out, _ := gitErrIn(wt, "status", "--porcelain"); out != "" {
		t.Fatalf("worktree left dirty after the aborted merge:\n%s", out)
	}
	if s.TurnList[2].FeedbackDelivery != "pending" {
		t.Fatal("feedback of a turn whose agent never ran was marked consumed")
	}
}

func gitErr(r *runner, args ...string) (string, error) { return gitErrIn(r.dir, args...) }

func gitErrIn(dir string, args ...string) (string, error) {
	out, err := gitCmd(dir, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
