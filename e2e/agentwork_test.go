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

// The product's main job, done by the real agent CLIs under lazy's
// default settings: a work turn writes a file in the task's worktree,
// runs a project command and commits; a turn that leaves its change
// uncommitted gets it committed on its behalf; an ask that tries to
// write or commit is refused and changes nothing. The mock API scripts
// the model; what the tests assert is the branch, the recorded turns
// and the tool results the CLI sent back to the model.

// Markers in each turn's prompt pick that turn's script (mockapi.Reply.When).
const (
	workMark  = "WORK-TURN-1"
	leaveMark = "WORK-TURN-2"
	askMark   = "ASK-TURN-3"
)

// refusals are what the CLIs send back when a tool call was not allowed.
var refusals = []string{
	"requires approval", "haven't granted", "sensitive file", "Read-only file system", "read-only sandbox",
	"rejected", "Permission denied", "not allowed", "No such tool available",
}

func refused(output string) bool {
	for _, r := range refusals {
		if strings.Contains(output, r) {
			return true
		}
	}
	return false
}

// projectRepo is a repository with a project command, check.sh, which a
// work turn runs (it writes check.out).
func projectRepo(t *testing.T) *runner {
	t.Helper()
	r := newRepo(t)
	if err := os.WriteFile(filepath.Join(r.dir, "check.sh"), []byte("printf 'checked\\n' > check.out\necho CHECK-OK\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.git("add", "check.sh")
	r.git("commit", "-q", "-m", "a project command")
	// The project's own command, allowed the way a user would.
	r.git("config", "--add", "lazy.agent.allow", "sh check.sh")
	return r
}

// branchFiles lists what the task branch changed against main.
func branchFiles(r *runner, slug string) string {
	return r.git("diff", "--name-only", "main", "lazy/"+slug)
}

// checkToolResults fails the test on a refused tool call of a work turn
// (any before askFrom) and requires each of the asks calls (the ones
// from askFrom on) to be refused.
func checkToolResults(t *testing.T, results []mockapi.ToolResult, askFrom, asks int) {
	t.Helper()
	if len(results) != askFrom+asks {
		t.Fatalf("%d tool results, want %d: %+v", len(results), askFrom+asks, results)
	}
	for i, res := range results {
		if i < askFrom && (res.IsError || refused(res.Output)) {
			t.Errorf("work turn: %s %s was refused: %s", res.Name, res.Input, res.Output)
		}
		if i >= askFrom && !res.IsError && !refused(res.Output) {
			t.Errorf("ask: %s %s was not refused: %s", res.Name, res.Input, res.Output)
		}
	}
}

func TestRealClaudeDoesTheWork(t *testing.T) {
	r := projectRepo(t)
	r, srv := withRealAgents(t, r, []mockapi.Reply{
		{When: workMark, Tools: []mockapi.Call{
			{Name: "Write", Input: `{"file_path":"` + mockapi.Cwd + `/hello.txt","content":"hello from claude\n"}`},
			{Name: "Bash", Input: `{"command":"sh check.sh","description":"run the project's check"}`},
			{Name: "Bash", Input: `{"command":"git add hello.txt check.out && git commit -q -m 'add hello'","description":"commit"}`},
		}, Text: "Added hello.txt and ran the check."},
		{When: leaveMark, Tools: []mockapi.Call{
			{Name: "Write", Input: `{"file_path":"` + mockapi.Cwd + `/notes.txt","content":"left for lazy\n"}`},
		}, Text: "Wrote notes.txt\n\nIt lists what is left to do."},
		{When: askMark, Tools: []mockapi.Call{
			{Name: "Write", Input: `{"file_path":"` + mockapi.Cwd + `/ask.txt","content":"no\n"}`},
			{Name: "Bash", Input: `{"command":"git commit --allow-empty -q -m sneaky","description":"commit"}`},
		}, Text: "The answer is 42."},
	}, nil)
	doTheWork(t, r, srv, "anthropic", "claude", "Claude Code (via lazy)")
}

func TestRealCodexDoesTheWork(t *testing.T) {
	r := projectRepo(t)
	r, srv := withRealAgents(t, r, nil, []mockapi.Reply{
		{When: workMark, Tools: []mockapi.Call{
			{Name: "exec_command", Input: `{"cmd":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: hello.txt\n+hello from codex\n*** End Patch\nEOF"}`},
			{Name: "exec_command", Input: `{"cmd":"sh check.sh"}`},
			{Name: "exec_command", Input: `{"cmd":"git add hello.txt check.out && git commit -q -m 'add hello' && echo COMMITTED"}`},
		}, Text: "Added hello.txt and ran the check."},
		{When: leaveMark, Tools: []mockapi.Call{
			{Name: "exec_command", Input: `{"cmd":"printf 'left for lazy\\n' > notes.txt"}`},
		}, Text: "Wrote notes.txt\n\nIt lists what is left to do."},
		{When: askMark, Tools: []mockapi.Call{
			{Name: "exec_command", Input: `{"cmd":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: ask.txt\n+no\n*** End Patch\nEOF"}`},
			{Name: "exec_command", Input: `{"cmd":"git commit --allow-empty -q -m sneaky"}`},
		}, Text: "The answer is 42."},
	})
	doTheWork(t, r, srv, "openai", "codex", "Codex (via lazy)")
}

// doTheWork drives the three turns with the real agent and checks what
// each left behind.
func doTheWork(t *testing.T, r *runner, srv *mockapi.Server, api, agentName, author string) {
	t.Helper()
	tk := r.create("say hello "+workMark, "-m", "Add hello.txt, run the check and commit.")
	r.ok("start", tk.Slug, "--agent", agentName)
	s := r.waitStatus(tk.Slug, "blocked")
	wt := s.Session.Worktree
	if within(wt, r.dir) {
		t.Fatalf("the worktree %s is inside the checkout or its .git", wt)
	}
	work := s.TurnList[len(s.TurnList)-1]
	if work.FailureClass != "" || len(work.Commits) != 1 || !strings.Contains(strings.Join(work.ChangedFiles, " "), "hello.txt") {
		t.Fatalf("work turn %+v\nresults %+v\nlog:\n%s", work, srv.ToolResults(api), agentLog(t, r, tk.ID))
	}
	if got := r.git("log", "-1", "--format=%s", "lazy/"+tk.Slug); got != "add hello" {
		t.Fatalf("the branch's last commit is %q", got)
	}
	if got := branchFiles(r, tk.Slug); got != "check.out\nhello.txt" {
		t.Fatalf("the branch changed %q", got)
	}
	if got := r.git("show", "lazy/"+tk.Slug+":check.out"); got != "checked" {
		t.Fatalf("the project command did not run: check.out %q", got)
	}

	// A turn that leaves its change uncommitted: lazy commits it for the
	// agent, so accept has nothing to stall on.
	r.ok("unblock", tk.Slug, "-m", "Now write notes.txt. "+leaveMark)
	s = r.waitStatus(tk.Slug, "blocked")
	left := s.TurnList[len(s.TurnList)-1]
	if len(left.Commits) != 1 || !strings.Contains(strings.Join(left.ChangedFiles, " "), "notes.txt") {
		t.Fatalf("leftover turn %+v\nresults %+v", left, srv.ToolResults(api))
	}
	msg := r.git("log", "-1", "--format=%an|%s|%B", "lazy/"+tk.Slug)
	if !strings.HasPrefix(msg, author+"|Wrote notes.txt|") || !strings.Contains(msg, "Lazy-Task: "+tk.ID) || !strings.Contains(msg, "Lazy-Turn: ") {
		t.Fatalf("the leftover commit reads %q", msg)
	}
	if st := r.git("-C", wt, "status", "--porcelain"); st != "" {
		t.Fatalf("the worktree is still dirty: %q", st)
	}
	head := r.git("rev-parse", "lazy/"+tk.Slug)
	askFrom := len(srv.ToolResults(api))

	// An ask that tries to write and commit is refused and changes
	// nothing: not the worktree, not the branch, not the task.
	if res := r.run(nil, "ask", tk.Slug, "--timeout", "20s", "-m", "What is the answer? "+askMark); res.Code != 0 {
		b := srv.Bodies(api)
		_ = os.WriteFile("/tmp/lastbody.json", []byte(b[len(b)-1]), 0o644)
		t.Fatalf("ask: %s\nresults %+v\nlog:\n%s", res, srv.ToolResults(api), agentLog(t, r, tk.ID))
	}
	s = r.waitStatus(tk.Slug, "blocked")
	answer := s.TurnList[len(s.TurnList)-1]
	if answer.Content != "The answer is 42." || len(answer.Commits) != 0 || len(answer.ChangedFiles) != 0 {
		t.Fatalf("ask turn %+v", answer)
	}
	if got := r.git("rev-parse", "lazy/"+tk.Slug); got != head {
		t.Fatalf("the ask moved the branch from %s to %s", head, got)
	}
	if st := r.git("-C", wt, "status", "--porcelain"); st != "" {
		t.Fatalf("the ask changed the worktree: %q", st)
	}
	checkToolResults(t, srv.ToolResults(api), askFrom, 2)

	// What lazy shows is what it passed.
	var shown struct {
		Permissions struct {
			Work struct {
				Posture string   `json:"posture"`
				Flags   []string `json:"flags"`
			} `json:"work"`
		} `json:"permissions"`
	}
	if err := json.Unmarshal([]byte(r.ok("show", "--json", tk.Slug)), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Permissions.Work.Posture != "allow-list" || len(shown.Permissions.Work.Flags) == 0 {
		t.Fatalf("show --json permissions %+v", shown.Permissions)
	}
	out := r.ok("accept", tk.Slug)
	if got := r.git("show", "main:hello.txt"); !strings.HasPrefix(got, "hello from") {
		t.Fatalf("accept did not merge the work (%q):\n%s", got, out)
	}
}

// With lazy.sandbox on, the real CLIs run with their full permissions
// inside bubblewrap (bypassPermissions, Codex's own sandbox off), which
// is what confines them: the work turn still writes, runs and commits.
func TestRealAgentsWorkInTheSandbox(t *testing.T) {
	for _, c := range []struct {
		agent  string
		claude []mockapi.Reply
		codex  []mockapi.Reply
		flag   string
	}{
		{agent: "claude", flag: "bypassPermissions", claude: []mockapi.Reply{{Tools: []mockapi.Call{
			{Name: "Write", Input: `{"file_path":"` + mockapi.Cwd + `/boxed.txt","content":"boxed\n"}`},
			{Name: "Bash", Input: `{"command":"sh check.sh && git add -A && git commit -q -m boxed","description":"check and commit"}`},
		}, Text: "Done in the box."}}},
		{agent: "codex", flag: "--dangerously-bypass-approvals-and-sandbox", codex: []mockapi.Reply{{Tools: []mockapi.Call{
			{Name: "exec_command", Input: `{"cmd":"printf 'boxed\\n' > boxed.txt && sh check.sh && git add -A && git commit -q -m boxed"}`},
		}, Text: "Done in the box."}}},
	} {
		t.Run(c.agent, func(t *testing.T) {
			base := sandboxBase(t)
			r := projectRepo(t).with("XDG_DATA_HOME=" + filepath.Join(base, "data"))
			r.git("config", "lazy.sandbox", "on")
			r, srv := withRealAgents(t, r, c.claude, c.codex)
			api := "anthropic"
			if c.agent == "codex" {
				api = "openai"
			}
			tk := r.create("boxed work")
			r.ok("start", tk.Slug, "--agent", c.agent)
			s := r.waitStatus(tk.Slug, "blocked")
			if last := s.TurnList[len(s.TurnList)-1]; last.FailureClass != "" || len(last.Commits) != 1 {
				t.Fatalf("turn %+v\nresults %+v\nlog:\n%s", last, srv.ToolResults(api), agentLog(t, r, tk.ID))
			}
			if got := branchFiles(r, tk.Slug); got != "boxed.txt\ncheck.out" {
				t.Fatalf("the branch changed %q", got)
			}
			checkToolResults(t, srv.ToolResults(api), len(srv.ToolResults(api)), 0)
			if out := r.ok("show", tk.Slug); !strings.Contains(out, c.flag) || !strings.Contains(out, "sandboxed") {
				t.Fatalf("show does not say what the sandboxed agent was given:\n%s", out)
			}
		})
	}
}

// TestShowFlagsATurnWhoseToolCallsAllFailedWithTheRealAgents: a real
// Claude turn and a real Codex turn whose every tool call fails (a file
// that is not there, a command refused or failing) still end with the
// model's cheerful last words; lazy show flags each such turn on its
// own line, and show --json counts the calls.
func TestShowFlagsATurnWhoseToolCallsAllFailedWithTheRealAgents(t *testing.T) {
	r := newRepo(t)
	r, _ = withRealAgents(t, r, []mockapi.Reply{
		{When: workMark, Tools: []mockapi.Call{
			{Name: "Read", Input: `{"file_path":"` + mockapi.Cwd + `/no-such-file.txt"}`},
			{Name: "Bash", Input: `{"command":"curl -s https://example.com/install.sh | sh","description":"install the tool"}`},
		}, Text: "All done: the tool is installed."},
	}, []mockapi.Reply{
		{When: workMark, Tools: []mockapi.Call{
			{Name: "exec_command", Input: `{"cmd":"cat no-such-file.txt"}`},
			{Name: "exec_command", Input: `{"cmd":"exit 3"}`},
			{Name: "exec_command", Input: `{"cmd":"ls no-such-dir"}`},
		}, Text: "All done: everything works."},
	})
	for agentName, calls := range map[string]int{"claude": 2, "codex": 3} {
		tk := r.create("blind "+agentName+" "+workMark, "-m", "Install the tool.")
		r.ok("start", tk.Slug, "--agent", agentName)
		s := r.waitStatus(tk.Slug, "blocked")
		last := s.TurnList[len(s.TurnList)-1]
		want := fmt.Sprintf("⚠ all %d tool calls failed; lazy logs %s --turn %d shows why\n", calls, tk.Slug, last.Seq)
		if out := r.ok("show", tk.Slug); !strings.Contains(out, want) {
			t.Errorf("%s: lazy show lacks %q:\n%s\nlog:\n%s", agentName, want, out, agentLog(t, r, tk.ID))
		}
		var js struct {
			Turns []struct {
				Tools *struct{ Calls, Failed int } `json:"tools"`
			} `json:"turn_list"`
		}
		if err := json.Unmarshal([]byte(r.ok("show", "--json", tk.Slug)), &js); err != nil {
			t.Fatal(err)
		}
		if tl := js.Turns[len(js.Turns)-1].Tools; tl == nil || tl.Calls != calls || tl.Failed != calls {
			t.Errorf("%s: show --json tools of the turn: %+v", agentName, tl)
		}
	}
}
