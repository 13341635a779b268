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

// An upstream merge that conflicts when unblock (or sync) merges it is
// the agent's to resolve: the conflict is left in the worktree, and the
// turn's prompt names the files. Before, the turn died in merge_and_fix
// and the task turned interrupted seconds after "Unblocked".
func TestUpstreamConflictGoesToTheAgent(t *testing.T) {
	r := newRepo(t)
	counter, argvFile := filepath.Join(t.TempDir(), "runs"), filepath.Join(t.TempDir(), "argv.json")
	r = r.with(script(t, "attempt "+counter, "argv "+argvFile,
		"when 1 write README.md the agent's readme", "when 1 commit agent rewrites readme",
		// Later turns resolve whatever conflicts and conclude the merge.
		"write README.md resolved by the agent", "commit resolve the merge"))
	r.create("conflicts")
	r.ok("start", "conflicts", "--command", fakeAgentBin)
	s := r.waitStatus("conflicts", "blocked")
	wt := s.Session.Worktree
	conflictMain := func(text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(r.dir, "README.md"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		r.git("commit", "-q", "-am", "main rewrites readme")
	}

	// sync: no agent runs; the conflict stays in the worktree and the
	// task parks, saying who resolves it.
	conflictMain("main's readme\n")
	res := r.run(nil, "sync", "conflicts")
	if res.Code == 0 || !strings.Contains(res.Stderr, "README.md") || !strings.Contains(res.Stderr, "the next turn") {
		t.Fatalf("sync with a conflict: %s", res)
	}
	if st := r.showFull("conflicts"); st.Status != "blocked" {
		t.Fatalf("after the conflicting sync the task is %s", st.Status)
	}
	if out, _ := gitErrIn(wt, "status", "--porcelain"); !strings.Contains(out, "UU README.md") {
		t.Fatalf("the conflict is not in the worktree:\n%s", out)
	}

	// unblock: the turn runs, its prompt names the conflict before the
	// feedback, and the agent's commit concludes the merge.
	out := r.ok("unblock", "conflicts", "-m", "carry on")
	if !strings.Contains(out, "is running") {
		t.Fatalf("unblock said %q", out)
	}
	s = r.waitStatus("conflicts", "blocked")
	prompt := readArgv(t, argvFile)
	if p := prompt[len(prompt)-1]; !strings.Contains(p, "conflicted in 1 file: README.md") || !strings.HasSuffix(p, "carry on") {
		t.Fatalf("the agent was told %q", p)
	}
	last := s.TurnList[len(s.TurnList)-1]
	if last.FailureClass != "" || len(last.Commits) == 0 || s.TurnList[len(s.TurnList)-2].FeedbackDelivery != "consumed" {
		t.Fatalf("turns %+v", s.TurnList)
	}
	if parents := strings.Fields(r.git("log", "-1", "--format=%P", "lazy/conflicts")); len(parents) != 2 {
		t.Fatalf("the agent's commit is not the merge: parents %v", parents)
	}
	if got := r.git("show", "lazy/conflicts:README.md"); got != "resolved by the agent" {
		t.Fatalf("README.md on the branch: %q", got)
	}
	if out, _ := gitErrIn(wt, "status", "--porcelain"); out != "" {
		t.Fatalf("the worktree is left dirty:\n%s", out)
	}
}

func gitErr(r *runner, args ...string) (string, error) { return gitErrIn(r.dir, args...) }

func gitErrIn(dir string, args ...string) (string, error) {
	out, err := gitCmd(dir, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// After lazy edit --goal, the next work turn's prompt carries the new
// goal; once a turn completed with it, later prompts do not repeat it.
func TestEditedGoalReachesTheNextTurn(t *testing.T) {
	r := newRepo(t)
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	r = r.with(script(t, "argv "+argvFile, "print done"))
	tk := r.create("goal task", "-m", "The old goal.")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	r.ok("edit", tk.Slug, "--goal", "THE NEW GOAL: cover logout too.")
	r.ok("unblock", tk.Slug, "-m", "go on")
	r.waitStatus(tk.Slug, "blocked")
	if p := lastPrompt(t, argvFile); !strings.Contains(p, "THE NEW GOAL: cover logout too.") || !strings.Contains(p, "goal was edited") || !strings.HasSuffix(p, "go on") {
		t.Fatalf("the turn after the edit was told %q", p)
	}
	r.ok("unblock", tk.Slug, "-m", "and again")
	r.waitStatus(tk.Slug, "blocked")
	if p := lastPrompt(t, argvFile); p != "and again" {
		t.Fatalf("a later turn was told %q", p)
	}
}
