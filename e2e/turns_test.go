package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// script writes a fake-agent script and returns the env that selects it.
func script(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return "FAKE_AGENT_SCRIPT=" + p
}

type turnJSON struct {
	Seq              int      `json:"seq"`
	Role             string   `json:"role"`
	Actor            string   `json:"actor"`
	Kind             string   `json:"kind"`
	Content          string   `json:"content"`
	FeedbackDelivery string   `json:"feedback_delivery"`
	Commits          []string `json:"commits"`
	ChangedFiles     []string `json:"changed_files"`
	ExitCode         *int     `json:"exit_code"`
	FailureClass     string   `json:"failure_class"`
}

type showFull struct {
	task
	TurnList []turnJSON `json:"turn_list"`
	Session  *struct {
		Branch                   string `json:"branch"`
		Worktree                 string `json:"worktree"`
		GitStartSHA              string `json:"git_start_sha"`
		Host                     string `json:"host"`
		Agent                    string `json:"agent"`
		InterruptReason          string `json:"interrupt_reason"`
		ConsecutiveInterruptions int    `json:"consecutive_interruptions"`
	} `json:"session"`
}

func (r *runner) showFull(name string) showFull {
	r.t.Helper()
	var s showFull
	out := r.ok("show", "--json", name)
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		r.t.Fatalf("show: %v\n%s", err, out)
	}
	return s
}

// waitStatus polls lazy show (which reconciles) until the task leaves
// working, and fails if it does not reach want.
func (r *runner) waitStatus(name, want string) showFull {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := r.showFull(name)
		if s.Status != "working" {
			if s.Status != want {
				r.t.Fatalf("%s became %s, want %s: %+v", name, s.Status, want, s)
			}
			return s
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s still working after 30s", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartRunsTheAgentAndParksBlocked(t *testing.T) {
	r := newRepo(t)
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	r = r.with(script(t,
		"argv "+argvFile,
		"print working on it",
		"write hello.txt hello from the agent",
		"commit agent: add hello.txt",
		"print done: added hello.txt",
	))
	r.create("Say hello", "-m", "Write hello.txt.\nKeep \"quotes\" and $dollars and 'single' intact.")
	out := r.ok("start", "say-hello", "--command", fakeAgentBin)
	if !strings.Contains(out, "branch lazy/say-hello") {
		t.Fatalf("start said %q", out)
	}
	s := r.waitStatus("say-hello", "blocked")

	// What the agent actually received: the prompt verbatim, as the last
	// argv element and in LAZY_PROMPT, in the task's worktree.
	var got struct {
		Argv      []string `json:"argv"`
		PromptEnv string   `json:"prompt_env"`
		Cwd       string   `json:"cwd"`
	}
	b, err := os.ReadFile(argvFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	wantPrompt := "Say hello\n\nWrite hello.txt.\nKeep \"quotes\" and $dollars and 'single' intact."
	if got.Argv[len(got.Argv)-1] != wantPrompt || got.PromptEnv != wantPrompt {
		t.Fatalf("agent got argv %q env %q", got.Argv, got.PromptEnv)
	}
	if s.Session == nil || got.Cwd != s.Session.Worktree || s.Session.Branch != "lazy/say-hello" || s.Session.Agent != "exec" {
		t.Fatalf("session %+v, agent cwd %s", s.Session, got.Cwd)
	}
	if len(s.TurnList) != 2 {
		t.Fatalf("turns %+v", s.TurnList)
	}
	human, ag := s.TurnList[0], s.TurnList[1]
	if human.Role != "human" || human.Actor != "human" || human.Kind != "start" || human.Content != wantPrompt || human.FeedbackDelivery != "consumed" {
		t.Fatalf("human turn %+v", human)
	}
	if ag.Role != "agent" || !strings.Contains(ag.Content, "done: added hello.txt") || len(ag.Commits) != 1 || ag.ExitCode == nil || *ag.ExitCode != 0 {
		t.Fatalf("agent turn %+v", ag)
	}
	if len(ag.ChangedFiles) != 1 || ag.ChangedFiles[0] != "hello.txt" {
		t.Fatalf("changed files %q", ag.ChangedFiles)
	}
	// The work is on the task branch, not on main.
	if r.git("log", "-1", "--format=%s", "lazy/say-hello") != "agent: add hello.txt" {
		t.Fatal("commit not on the task branch")
	}
	if _, err := os.Stat(filepath.Join(r.dir, "hello.txt")); err == nil {
		t.Fatal("the agent wrote into the user's checkout")
	}
	var ops []string
	for _, h := range s.History {
		ops = append(ops, h.Op+":"+h.Actor+":"+h.To)
	}
	if strings.Join(ops, " ") != "create:human:backlog start:human:working reconcile:system:blocked" {
		t.Fatalf("changelog %v", ops)
	}
	// A blocked task cannot be started again.
	if msg := r.fails(1, nil, "start", "say-hello", "--command", fakeAgentBin); !strings.Contains(msg, "backlog") {
		t.Fatalf("second start: %s", msg)
	}
}

func TestNULInGoalReachesTheAgentEscaped(t *testing.T) {
	r := newRepo(t)
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	r = r.with(script(t, "argv "+argvFile))
	res := r.run([]byte("before\x00after"), "create", "nul goal")
	if res.Code != 0 {
		t.Fatal(res)
	}
	r.ok("start", "nul-goal", "--command", fakeAgentBin)
	r.waitStatus("nul-goal", "blocked")
	b, err := os.ReadFile(argvFile)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Argv []string `json:"argv"`
	}
	_ = json.Unmarshal(b, &got)
	last := got.Argv[len(got.Argv)-1]
	if !strings.Contains(last, `before\u0000after`) || !strings.Contains(last, "control characters") {
		t.Fatalf("agent prompt %q", last)
	}
}

func TestAgentFailuresAreClassified(t *testing.T) {
	t.Run("unknown failure interrupts", func(t *testing.T) {
		r := newRepo(t)
		r = r.with(script(t, "print something broke", "exit 3"))
		r.create("breaks")
		r.ok("start", "breaks", "--command", fakeAgentBin)
		s := r.waitStatus("breaks", "interrupted")
		if s.Session.ConsecutiveInterruptions != 1 || !strings.Contains(s.Session.InterruptReason, "status 3") {
			t.Fatalf("session %+v", s.Session)
		}
		last := s.TurnList[len(s.TurnList)-1]
		if last.Role != "agent" || last.ExitCode == nil || *last.ExitCode != 3 || last.FailureClass != "unknown" || s.TurnList[0].FeedbackDelivery != "pending" {
			t.Fatalf("turns %+v", s.TurnList)
		}
	})
	t.Run("fatal auth parks blocked with the reason", func(t *testing.T) {
		r := newRepo(t)
		r = r.with(script(t, `print API Error: 401 {"type":"error","error":{"type":"authentication_error"}}`, "exit 1"))
		r.create("no creds")
		r.ok("start", "no-creds", "--command", fakeAgentBin)
		s := r.waitStatus("no-creds", "blocked")
		if !strings.HasPrefix(s.Session.InterruptReason, "fatal_auth") || s.TurnList[0].FeedbackDelivery != "pending" {
			t.Fatalf("session %+v turns %+v", s.Session, s.TurnList)
		}
	})
	t.Run("a killed agent interrupts with the signal", func(t *testing.T) {
		r := newRepo(t)
		r = r.with(script(t, "print about to be killed", "hang"))
		r.create("killed")
		r.ok("start", "killed", "--command", fakeAgentBin)
		// Find the agent's pid from status.json and SIGKILL it.
		var pid int
		deadline := time.Now().Add(20 * time.Second)
		for pid == 0 && time.Now().Before(deadline) {
			matches, _ := filepath.Glob(filepath.Join(r.dir, ".git", "lazy", "proto", "*", "status.json"))
			for _, m := range matches {
				var st struct {
					AgentPID int `json:"agent_pid"`
				}
				if b, err := os.ReadFile(m); err == nil && json.Unmarshal(b, &st) == nil {
					pid = st.AgentPID
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		if pid == 0 {
			t.Fatal("agent never started")
		}
		p, _ := os.FindProcess(pid)
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		s := r.waitStatus("killed", "interrupted")
		if !strings.Contains(s.Session.InterruptReason, "137") {
			t.Fatalf("reason %q", s.Session.InterruptReason)
		}
	})
}

func TestStartNeedsACommand(t *testing.T) {
	r := newRepo(t)
	r.create("no command")
	if msg := r.fails(1, nil, "start", "no-command", "--agent", "exec"); !strings.Contains(msg, "needs a command") {
		t.Fatalf("start without a command: %s", msg)
	}
	// The default agent is claude; without it on PATH nothing starts.
	if msg := r.with("PATH=/usr/bin:/bin").fails(1, nil, "start", "no-command"); !strings.Contains(msg, `"claude" is not an executable on PATH`) {
		t.Fatalf("start without claude installed: %s", msg)
	}
	if msg := r.fails(1, nil, "start", "no-command", "--command", "/no/such/agent"); !strings.Contains(msg, "not an executable") {
		t.Fatalf("start with a missing command: %s", msg)
	}
	if s := r.show("no-command"); s.Status != "backlog" {
		t.Fatalf("a refused start moved the task to %s", s.Status)
	}
	if msg := r.fails(1, nil, "start", "no-command", "--agent", "codex"); !strings.Contains(msg, "not supported yet") {
		t.Fatalf("codex agent: %s", msg)
	}
}
