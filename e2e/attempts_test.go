package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/mockapi"
)

// attemptAgent is an exec agent that works differently in each attempt:
// it writes a file named after its worktree (fix-login-a1.txt, ...) and
// commits it.
func attemptAgent(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "attempt-agent")
	body := `#!/bin/sh
name=$(basename "$PWD")
printf 'the %s way\n' "$name" > "$name.txt"
git add "$name.txt" && git commit -q -m "work of $name" && echo "committed $name.txt"
`
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

type attemptJSON struct {
	K       int    `json:"attempt"`
	ID      string `json:"id"`
	Slug    string `json:"slug"`
	Agent   string `json:"agent"`
	Status  string `json:"status"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
	Diff    *struct {
		Files     int `json:"files"`
		Additions int `json:"additions"`
	} `json:"diff"`
}

type groupShow struct {
	task
	AttemptIDs []string      `json:"attempt_ids"`
	Attempts   []attemptJSON `json:"attempts"`
	Chosen     int           `json:"attempt_chosen"`
	Live       string        `json:"live_substate"`
}

func (r *runner) showGroup(name string) groupShow {
	r.t.Helper()
	var g groupShow
	if err := json.Unmarshal([]byte(r.ok("show", "--json", name)), &g); err != nil {
		r.t.Fatal(err)
	}
	return g
}

// TestAttemptsSideBySide: lazy start --attempts 2 with the exec agent
// runs two attempts, each on its own branch, that commit different
// files; show and diff --attempts compare them; accept --attempt 2 lands
// the second on main through the normal accept, completes the group and
// closes the first with the reason, keeping its branch.
func TestAttemptsSideBySide(t *testing.T) {
	r := newRepo(t)
	t.Cleanup(func() { killTurns(r) })
	agent := attemptAgent(t)
	g := r.create("Fix the login race", "--slug", "fix-login")

	// Bad input is one sentence, and nothing is recorded.
	for _, tc := range []struct{ args, want string }{
		{"--attempts 0", "2 to 8"},
		{"--attempts 50", "at most 8"},
		{"--agent claude,codex", "goes with --attempts"},
		{"--attempts 2 --model=-rf", "not a model name"},
	} {
		res := r.run(nil, append([]string{"start", g.Slug, "--command", agent}, strings.Fields(tc.args)...)...)
		if stderr := res.Stderr; res.Code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") > 1 || !strings.Contains(stderr, tc.want) {
			t.Fatalf("start %s: %s, want it to say %q", tc.args, res, tc.want)
		}
	}
	if s := r.show(g.Slug); s.Status != "backlog" {
		t.Fatalf("a refused start changed the task: %s", s.Status)
	}

	out := r.ok("start", g.Slug, "--attempts", "2", "--command", agent)
	if !strings.Contains(out, "Trying fix-login 2 ways") || !strings.Contains(out, "fix-login-a1") || !strings.Contains(out, "fix-login-a2") {
		t.Fatalf("start --attempts said:\n%s", out)
	}
	a1 := r.waitStatus("fix-login-a1", "blocked")
	a2 := r.waitStatus("fix-login-a2", "blocked")
	if a1.Session.Branch != "lazy/fix-login-a1" || a2.Session.Branch != "lazy/fix-login-a2" || a1.Session.Agent != "exec" {
		t.Fatalf("attempt sessions: %+v %+v", a1.Session, a2.Session)
	}

	grp := r.showGroup(g.Slug)
	if grp.Status != "backlog" || len(grp.AttemptIDs) != 2 || len(grp.Attempts) != 2 || !strings.Contains(grp.Live, "tried 2 ways") {
		t.Fatalf("group: %+v", grp)
	}
	for i, at := range grp.Attempts {
		if at.K != i+1 || at.Status != "blocked" || at.Diff == nil || at.Diff.Files != 1 || at.Diff.Additions != 1 || at.Agent != "exec" {
			t.Fatalf("attempt %d in show --json: %+v", i+1, at)
		}
	}
	text := r.ok("show", g.Slug)
	if !strings.Contains(text, "Attempts (2") || !strings.Contains(text, "fix-login-a2") || !strings.Contains(text, "1 file, +1 -0") || !strings.Contains(text, "lazy accept fix-login --attempt K") {
		t.Fatalf("show of the group:\n%s", text)
	}
	diff := r.ok("diff", g.Slug, "--attempts")
	for _, want := range []string{"# attempt 1: fix-login-a1 (exec, blocked, 1 file, +1 -0)", "+the fix-login-a1 way", "# attempt 2: fix-login-a2", "+the fix-login-a2 way"} {
		if !strings.Contains(diff, want) {
			t.Fatalf("diff --attempts lacks %q:\n%s", want, diff)
		}
	}
	if i1, i2 := strings.Index(diff, "+the fix-login-a1 way"), strings.Index(diff, "+the fix-login-a2 way"); i1 > i2 {
		t.Fatalf("diff --attempts is out of order:\n%s", diff)
	}
	// The list shows the attempts under their group.
	listed := r.ok("list")
	if ig, i1 := strings.Index(listed, "fix-login "), strings.Index(listed, "fix-login-a1"); ig < 0 || i1 < ig {
		t.Fatalf("list:\n%s", listed)
	}

	if stderr := r.fails(1, nil, "accept", g.Slug, "--attempt", "3"); !strings.Contains(stderr, "has 2 attempts; --attempt 3 is not one of them") {
		t.Fatalf("accept --attempt 3: %q", stderr)
	}
	out = r.ok("accept", g.Slug, "--attempt", "2")
	if !strings.Contains(out, "Accepted fix-login-a2") || !strings.Contains(out, "fix-login is complete") {
		t.Fatalf("accept --attempt 2 said:\n%s", out)
	}
	log := r.git("log", "--format=%s%n%b", "main")
	if !strings.Contains(log, "Lazy-Task: "+a2.ID) || strings.Contains(log, "Lazy-Task: "+a1.ID) {
		t.Fatalf("main's log:\n%s", log)
	}
	files := r.git("ls-tree", "--name-only", "main")
	if !strings.Contains(files, "fix-login-a2.txt") || strings.Contains(files, "fix-login-a1.txt") {
		t.Fatalf("main holds:\n%s", files)
	}
	grp = r.showGroup(g.Slug)
	if grp.Status != "complete" || grp.Outcome != "accepted" || grp.Reason != "attempt 2 (fix-login-a2) landed" || grp.Chosen != 2 {
		t.Fatalf("group after the accept: %+v", grp)
	}
	closed := r.show("fix-login-a1")
	if closed.Status != "abandoned" || closed.Outcome != "closed" || closed.Reason != "attempt 2 was chosen" {
		t.Fatalf("attempt 1 after the accept: %+v", closed)
	}
	if tip := r.git("rev-parse", "--verify", "-q", "refs/heads/lazy/fix-login-a1"); strings.TrimSpace(tip) == "" {
		t.Fatal("the closed attempt's branch is gone")
	}
	if landed := r.show("fix-login-a2"); landed.Status != "complete" || landed.Outcome != "accepted" {
		t.Fatalf("attempt 2: %+v", landed)
	}
}

// TestRealAgentsAsAttempts: --attempts 2 --agent claude,codex runs the
// real Claude Code in attempt 1 and the real Codex in attempt 2, each
// against the mock API, each recorded as its session's agent.
func TestRealAgentsAsAttempts(t *testing.T) {
	r := projectRepo(t)
	g := r.create("Say which way", "--slug", "which-way")
	// Each attempt's agent does real work in its own worktree: a file of
	// its own, the project's check, a commit.
	r, srv := withRealAgents(t, r, []mockapi.Reply{{Tools: []mockapi.Call{
		{Name: "Write", Input: `{"file_path":"` + mockapi.Cwd + `/way.txt","content":"the claude way\n"}`},
		{Name: "Bash", Input: `{"command":"sh check.sh","description":"run the project's check"}`},
		{Name: "Bash", Input: `{"command":"git add way.txt check.out && git commit -q -m 'claude: the claude way'","description":"commit"}`},
	}, Text: "The claude way."}}, []mockapi.Reply{{Tools: []mockapi.Call{
		{Name: "exec_command", Input: `{"cmd":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: way.txt\n+the codex way\n*** End Patch\nEOF"}`},
		{Name: "exec_command", Input: `{"cmd":"sh check.sh"}`},
		{Name: "exec_command", Input: `{"cmd":"git add way.txt check.out && git commit -q -m 'codex: the codex way' && echo COMMITTED"}`},
	}, Text: "The codex way."}})
	t.Cleanup(func() { killTurns(r) })
	r.ok("start", g.Slug, "--attempts", "2", "--agent", "claude,codex")
	for k, want := range map[string]struct{ agent, text string }{
		"which-way-a1": {"claude", "The claude way."},
		"which-way-a2": {"codex", "The codex way."},
	} {
		s := r.waitStatus(k, "blocked")
		if s.Session == nil || s.Session.Agent != want.agent {
			t.Fatalf("%s ran %+v, want %s", k, s.Session, want.agent)
		}
		if last := s.TurnList[len(s.TurnList)-1]; last.Content != want.text {
			t.Fatalf("%s answered %+v\nrequests %q", k, last, srv.Requests())
		}
	}
	if srv.Calls("anthropic") == 0 || srv.Calls("openai") == 0 {
		t.Fatalf("the mock heard from claude %d times and codex %d times", srv.Calls("anthropic"), srv.Calls("openai"))
	}
	grp := r.showGroup(g.Slug)
	if len(grp.Attempts) != 2 || grp.Attempts[0].Agent != "claude" || grp.Attempts[1].Agent != "codex" {
		t.Fatalf("show compares %+v", grp.Attempts)
	}
	for k, want := range map[string]string{"which-way-a1": "claude: the claude way", "which-way-a2": "codex: the codex way"} {
		if log := strings.TrimSpace(r.git("log", "--format=%s", "main..lazy/"+k)); log != want {
			t.Fatalf("%s's branch has %q, want its agent's one commit %q", k, log, want)
		}
	}
	// Codex's way lands; Claude's stays on its branch, closed.
	r.ok("accept", g.Slug, "--attempt", "2")
	if got := strings.TrimSpace(r.git("show", "main:way.txt")); got != "the codex way" {
		t.Fatalf("main's way.txt is %q after accepting attempt 2", got)
	}
	if a1 := r.show("which-way-a1"); a1.Status != "abandoned" || !strings.Contains(a1.Reason, "attempt 2 was chosen") {
		t.Fatalf("the other attempt: %s %q", a1.Status, a1.Reason)
	}
	if log := strings.TrimSpace(r.git("log", "--format=%s", "main..lazy/which-way-a1")); log != "claude: the claude way" {
		t.Fatalf("the closed attempt's branch lost its work: %q", log)
	}
}

// TestAttemptsComparedOnTheWeb: the group's web page has the Attempts
// table (each attempt linked, its agent, status and diff stat), an
// attempt's page leads back to the group, and Chromium screenshots both.
func TestAttemptsComparedOnTheWeb(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	t.Cleanup(func() { killTurns(r) })
	g := r.create("Fix the login race", "--slug", "fix-login")
	r.ok("start", g.Slug, "--attempts", "2", "--command", attemptAgent(t))
	a1 := r.waitStatus("fix-login-a1", "blocked")
	r.waitStatus("fix-login-a2", "blocked")
	full, base := webURL(t, r)
	_, token, _ := strings.Cut(full, "?token=")

	b := openBrowser(t, base+"/task/"+g.ID+"?token="+token)
	b.waitFor("the Attempts table", `document.querySelectorAll("#attempts tbody tr").length === 2`)
	row := b.eval(`document.getElementById("attempt-1").textContent`)
	for _, want := range []string{"fix-login-a1", "exec", "blocked", "+1", "in 1 file"} {
		if !strings.Contains(row, want) {
			t.Fatalf("attempt 1's row %q lacks %q", row, want)
		}
	}
	if href := b.eval(`document.querySelector("#attempt-1 a").getAttribute("href")`); href != "/task/"+a1.ID {
		t.Fatalf("attempt 1 links to %q", href)
	}
	checkScreenshot(t, b.screenshot("attempts"))
	b.call("Page.navigate", map[string]any{"url": base + "/task/" + a1.ID}, nil)
	b.waitFor("the way back to the group", `document.getElementById("attempt-of") && document.getElementById("attempt-of").textContent.includes("attempt 1 of fix-login")`)
	checkScreenshot(t, b.screenshot("attempt"))
}
