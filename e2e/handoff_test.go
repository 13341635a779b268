package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/mockapi"
)

// handoffAgent is an exec agent named name: it keeps every prompt it
// gets, writes <name>.txt, commits it and says what it did.
func handoffAgent(t *testing.T, name string) (command, prompts string) {
	t.Helper()
	dir := t.TempDir()
	prompts = filepath.Join(dir, "prompts")
	body := fmt.Sprintf(`#!/bin/sh
set -e
printf '%%s\n=====\n' "$LAZY_PROMPT" >> %[1]s
echo "%[2]s was here" >> %[2]s.txt
git add %[2]s.txt
git commit -q -m "%[2]s: wrote %[2]s.txt"
echo "I wrote %[2]s.txt; a retry loop was ruled out because it hid the race."
`, prompts, name)
	p := filepath.Join(dir, name+".sh")
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p, prompts
}

// A task one agent worked is handed to another: a new session on the
// same branch and worktree, whose prompt is the record lazy keeps in the
// task (the goal, the commits and files, the last agent's own words, the
// human's decisions, the feedback still pending, the next step).
func TestHandoffGivesTheNextAgentTheRecord(t *testing.T) {
	r := newRepo(t)
	first, _ := handoffAgent(t, "first")
	second, secondPrompts := handoffAgent(t, "second")
	tk := r.create("Fix the race", "-m", "The login test fails one run in ten.")
	r.ok("start", tk.Slug, "--agent", "exec", "--command", first)
	r.waitStatus(tk.Slug, "blocked")
	r.ok("unblock", tk.Slug, "-m", "Use a mutex, not a channel.")
	r.waitStatus(tk.Slug, "blocked")

	// What a human taking over would read; it changes nothing.
	printed := r.ok("handoff", tk.Slug, "--print")
	for _, want := range []string{"# Handoff: Fix the race", "one run in ten", "first: wrote first.txt", "first.txt", "ruled out because it hid the race", "Use a mutex, not a channel."} {
		if !strings.Contains(printed, want) {
			t.Fatalf("the printed record lacks %q:\n%s", want, printed)
		}
	}
	if s := r.showFull(tk.Slug); s.Status != "blocked" || s.Session.Agent != "exec" {
		t.Fatalf("--print changed the task: %+v", s)
	}

	out := r.ok("handoff", tk.Slug, "--to", "exec", "--command", second, "-m", "Write the regression test next.")
	if !strings.Contains(out, "Handed "+tk.Slug+" to exec") {
		t.Fatalf("handoff said %q", out)
	}
	s := r.waitStatus(tk.Slug, "blocked")
	b, err := os.ReadFile(secondPrompts)
	if err != nil {
		t.Fatal(err)
	}
	prompt := string(b)
	for _, want := range []string{"# Handoff: Fix the race", "first: wrote first.txt", "ruled out because it hid the race", "Use a mutex, not a channel.", "## Next step\n\nWrite the regression test next."} {
		if !strings.Contains(prompt, want) {
			t.Fatalf("the second agent's prompt lacks %q:\n%s", want, prompt)
		}
	}
	// The same branch, with both agents' commits; a second session.
	log := r.git("log", "--format=%s", "lazy/"+tk.Slug)
	if !strings.Contains(log, "second: wrote second.txt") || !strings.Contains(log, "first: wrote first.txt") {
		t.Fatalf("the branch lacks one of the agents' commits:\n%s", log)
	}
	var handoffTurn *turnJSON
	for i := range s.TurnList {
		if s.TurnList[i].Kind == "handoff" {
			handoffTurn = &s.TurnList[i]
		}
	}
	if handoffTurn == nil || !strings.HasPrefix(handoffTurn.Content, "# Handoff") || handoffTurn.FeedbackDelivery != "consumed" {
		t.Fatalf("the handoff record is not kept in the task as its turn: %+v", s.TurnList)
	}
	var raw struct {
		Sessions int `json:"sessions"`
	}
	_ = json.Unmarshal([]byte(r.ok("show", "--json", tk.Slug)), &raw)
	if raw.Sessions != 2 {
		t.Fatalf("%d sessions, want 2", raw.Sessions)
	}

	// Bad input: one sentence each, nothing changed.
	if out := r.fails(2, nil, "handoff", tk.Slug); !strings.Contains(out, "--to") {
		t.Fatalf("handoff without --to: %s", out)
	}
	if out := r.fails(1, nil, "handoff", tk.Slug, "--to", "gpt"); !strings.Contains(out, "gpt") {
		t.Fatalf("handoff to an unknown agent: %s", out)
	}
	backlog := r.create("Not started")
	if out := r.fails(1, nil, "handoff", backlog.Slug, "--to", "exec", "--command", second); !strings.Contains(out, "lazy start") {
		t.Fatalf("handoff of a task never started: %s", out)
	}
}

// Claude Code works a task (writes a file, runs the project's check,
// commits); lazy start --agent codex hands it to Codex, the handoff
// record, with Claude's own words, reaches Codex's request to its API,
// and Codex carries on in the same worktree: its own file and commit on
// the same branch, over Claude's.
func TestRealClaudeHandsOffToRealCodex(t *testing.T) {
	r, srv := withRealAgents(t, projectRepo(t), []mockapi.Reply{{Tools: []mockapi.Call{
		{Name: "Write", Input: `{"file_path":"` + mockapi.Cwd + `/cache_fix.txt","content":"session cache keyed per user\n"}`},
		{Name: "Bash", Input: `{"command":"sh check.sh","description":"run the project's check"}`},
		{Name: "Bash", Input: `{"command":"git add cache_fix.txt check.out && git commit -q -m 'claude: key the session cache per user'","description":"commit"}`},
	}, Text: "I traced the flake to the session cache; a sleep-based fix was ruled out."}},
		[]mockapi.Reply{{Tools: []mockapi.Call{
			{Name: "exec_command", Input: `{"cmd":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: cache_test.txt\n+a test for the per-user cache\n*** End Patch\nEOF"}`},
			{Name: "exec_command", Input: `{"cmd":"sh check.sh"}`},
			{Name: "exec_command", Input: `{"cmd":"git add cache_test.txt && git commit -q -m 'codex: test the per-user cache' && echo COMMITTED"}`},
		}, Text: "codex carried on"}})
	tk := r.create("Fix the flake", "-m", "Find and fix the flaky login test.")
	r.ok("start", tk.Slug, "--agent", "claude")
	r.waitStatus(tk.Slug, "blocked")
	r.ok("start", tk.Slug, "--agent", "codex")
	s := r.waitStatus(tk.Slug, "blocked")
	if s.Session == nil || s.Session.Agent != "codex" {
		t.Fatalf("the session after the handoff: %+v", s.Session)
	}
	if last := s.TurnList[len(s.TurnList)-1]; last.Content != "codex carried on" {
		t.Fatalf("codex's turn: %+v", last)
	}
	bodies := srv.Bodies("openai")
	if len(bodies) == 0 {
		t.Fatal("codex never called its API")
	}
	for _, want := range []string{"# Handoff: Fix the flake", "the claude agent", "traced the flake to the session cache", "sleep-based fix was ruled out", "Find and fix the flaky login test.", "claude: key the session cache per user", "cache_fix.txt"} {
		if !strings.Contains(bodies[0], want) {
			t.Fatalf("codex's first request lacks %q", want)
		}
	}
	// Both agents' work, one branch: Claude's commit, then Codex's.
	log := r.git("log", "--format=%s", "main..lazy/"+tk.Slug)
	if strings.TrimSpace(log) != "codex: test the per-user cache\nclaude: key the session cache per user" {
		t.Fatalf("the branch's commits:\n%s", log)
	}
	if files := strings.TrimSpace(branchFiles(r, tk.Slug)); files != "cache_fix.txt\ncache_test.txt\ncheck.out" {
		t.Fatalf("the branch changed:\n%s", files)
	}
	checkToolResults(t, srv.ToolResults("anthropic"), 3, 0)
}
