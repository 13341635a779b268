package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
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
	Attempts         int      `json:"failure_attempts"`
}

type showFull struct {
	task
	Live     string     `json:"live_substate"`
	TurnList []turnJSON `json:"turn_list"`
	Session  *struct {
		Branch                   string `json:"branch"`
		Worktree                 string `json:"worktree"`
		GitStartSHA              string `json:"git_start_sha"`
		Host                     string `json:"host"`
		Agent                    string `json:"agent"`
		InterruptReason          string `json:"interrupt_reason"`
		InterruptLogs            string `json:"interrupt_logs"`
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
	// Longer than the reconciler's 30 s start grace, so a supervisor that
	// died silently shows up as interrupted, with its diagnostics, rather
	// than as a timeout here.
	deadline := time.Now().Add(45 * time.Second)
	for {
		s := r.showFull(name)
		if s.Status != "working" {
			if s.Status != want {
				logs := ""
				if s.Session != nil {
					logs = s.Session.InterruptLogs
				}
				r.t.Fatalf("%s became %s, want %s: %+v\ninterrupt logs:\n%s", name, s.Status, want, s, logs)
			}
			return s
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s still working after 45s", name)
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
	t.Run("fast unknown failures trip the crash-loop detector and interrupt", func(t *testing.T) {
		r := manualResume(newRepo(t))
		counter := filepath.Join(t.TempDir(), "runs")
		r = r.with(script(t, "attempt "+counter, "print something broke", "exit 3"))
		r.create("breaks")
		r.ok("start", "breaks", "--command", fakeAgentBin)
		s := r.waitStatus("breaks", "interrupted")
		if s.Session.ConsecutiveInterruptions != 1 || !strings.Contains(s.Session.InterruptReason, "status 3") || !strings.Contains(s.Session.InterruptReason, "crash loop") {
			t.Fatalf("session %+v", s.Session)
		}
		last := s.TurnList[len(s.TurnList)-1]
		if last.Role != "agent" || last.ExitCode == nil || *last.ExitCode != 3 || last.FailureClass != "unknown" || last.Attempts != 3 || s.TurnList[0].FeedbackDelivery != "pending" {
			t.Fatalf("turns %+v", s.TurnList)
		}
		if b, _ := os.ReadFile(counter); string(b) != "3" {
			t.Fatalf("the agent ran %s times, want 3", b)
		}
	})
	t.Run("fatal auth stops at once and parks blocked with the reason", func(t *testing.T) {
		r := newRepo(t)
		counter := filepath.Join(t.TempDir(), "runs")
		r = r.with(script(t, "attempt "+counter, `print API Error: 401 {"type":"error","error":{"type":"authentication_error"}}`, "exit 1"))
		r.create("no creds")
		r.ok("start", "no-creds", "--command", fakeAgentBin)
		s := r.waitStatus("no-creds", "blocked")
		if !strings.HasPrefix(s.Session.InterruptReason, "fatal_auth") || s.TurnList[0].FeedbackDelivery != "pending" {
			t.Fatalf("session %+v turns %+v", s.Session, s.TurnList)
		}
		if b, _ := os.ReadFile(counter); string(b) != "1" {
			t.Fatalf("a fatal failure was retried: %s runs", b)
		}
	})
	t.Run("unreachable is retried, then escalates to a stop within lazy.unreachableTimeout", func(t *testing.T) {
		r := newRepo(t)
		r.git("config", "lazy.unreachableTimeout", "3s")
		counter := filepath.Join(t.TempDir(), "runs")
		r = r.with(script(t, "attempt "+counter, "print API Error: Connection refused", "exit 1"))
		r.create("unreachable")
		r.ok("start", "unreachable", "--command", fakeAgentBin)
		s := r.waitStatus("unreachable", "blocked")
		reason := s.Session.InterruptReason
		if !strings.HasPrefix(reason, "transient_unreachable") || !strings.Contains(reason, "stayed unreachable for") || !strings.Contains(reason, "lazy.unreachableTimeout is 3s") {
			t.Fatalf("reason %q", reason)
		}
		b, _ := os.ReadFile(counter)
		if n, _ := strconv.Atoi(string(b)); n < 2 {
			t.Fatalf("ran %s times: unreachable was not retried", b)
		}
	})
	t.Run("a killed agent is relaunched in the turn", func(t *testing.T) {
		r := newRepo(t)
		counter := filepath.Join(t.TempDir(), "runs")
		r = r.with(script(t, "attempt "+counter, "when 1 print about to be killed", "when 1 hang", "print recovered"))
		r.create("killed")
		r.ok("start", "killed", "--command", fakeAgentBin)
		pid := agentPID(t, r)
		// Kill only once the agent is hanging: killed before it counted
		// its run, the relaunch would take itself for the first run and
		// hang too.
		waitLog(t, r, "about to be killed")
		p, _ := os.FindProcess(pid)
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		s := r.waitStatus("killed", "blocked")
		if last := s.TurnList[len(s.TurnList)-1]; !strings.Contains(last.Content, "recovered") {
			t.Fatalf("agent turn %+v", last)
		}
	})
}

// waitLog waits until the task's agent log contains text.
func waitLog(t *testing.T, r *runner, text string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		logs, _ := filepath.Glob(filepath.Join(r.dir, ".git", "lazy", "logs", "*", "agent.log"))
		for _, l := range logs {
			if b, err := os.ReadFile(l); err == nil && strings.Contains(string(b), text) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the agent never printed %q", text)
}

// agentPID waits for the supervisor to report its agent's pid.
func agentPID(t *testing.T, r *runner) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		matches, _ := filepath.Glob(filepath.Join(r.dir, ".git", "lazy", "proto", "*", "status.json"))
		for _, m := range matches {
			var st struct {
				AgentPID int `json:"agent_pid"`
			}
			if b, err := os.ReadFile(m); err == nil && json.Unmarshal(b, &st) == nil && st.AgentPID != 0 {
				return st.AgentPID
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("agent never started")
	return 0
}

func TestWatchdog(t *testing.T) {
	setup := func(t *testing.T, lines ...string) *runner {
		r := manualResume(newRepo(t))
		r.ok("init")
		r.git("config", "lazy.watchdogTimeout", "300ms")
		r.git("config", "lazy.watchdogKillGrace", "200ms")
		return r.with(script(t, lines...))
	}
	t.Run("zero-work kills relaunch in the turn, boundedly", func(t *testing.T) {
		counter := filepath.Join(t.TempDir(), "runs")
		r := setup(t, "attempt "+counter, "print thinking", "hang")
		r.create("stuck")
		r.ok("start", "stuck", "--command", fakeAgentBin)
		s := r.waitStatus("stuck", "interrupted")
		reason := s.Session.InterruptReason
		for _, want := range []string{"watchdog", "no progress for 300ms", "keep-alives are not progress", "no work captured", "relaunched the agent 2 times"} {
			if !strings.Contains(reason, want) {
				t.Fatalf("reason %q lacks %q", reason, want)
			}
		}
		if b, _ := os.ReadFile(counter); string(b) != "3" {
			t.Fatalf("ran %s times, want 3 (1 + 2 relaunches)", b)
		}
	})
	t.Run("a kill after work ends the turn", func(t *testing.T) {
		counter := filepath.Join(t.TempDir(), "runs")
		r := setup(t, "attempt "+counter, "write a.txt work", "commit some work", "print committed", "hang")
		// The commit must finish before the watchdog's SIGTERM reaches
		// its git, even on a loaded machine.
		r.git("config", "lazy.watchdogTimeout", "3s")
		r.create("worked")
		r.ok("start", "worked", "--command", fakeAgentBin)
		s := r.waitStatus("worked", "interrupted")
		if !strings.Contains(s.Session.InterruptReason, "after the agent had done work") || !strings.Contains(s.Session.InterruptReason, "relaunched the agent 0 times") || !strings.Contains(s.Session.InterruptReason, "no progress for 3s") {
			t.Fatalf("reason %q", s.Session.InterruptReason)
		}
		if b, _ := os.ReadFile(counter); string(b) != "1" {
			t.Fatalf("ran %s times, want 1", b)
		}
		if last := s.TurnList[len(s.TurnList)-1]; len(last.Commits) != 1 {
			t.Fatalf("the killed turn's commit was not recorded: %+v", last)
		}
	})
	t.Run("SIGTERM ignored escalates to SIGKILL", func(t *testing.T) {
		// SIGTERM is ignored from the start, so a watchdog that fires
		// while a loaded machine is still committing meets it too.
		r := setup(t, "ignore-term", "write a.txt work", "commit some work", "print committed", "hang")
		// Long enough that the commit (whose git would die of the
		// group's SIGTERM) finishes first even on a loaded machine.
		r.git("config", "lazy.watchdogTimeout", "3s")
		r.create("stubborn")
		r.ok("start", "stubborn", "--command", fakeAgentBin)
		s := r.waitStatus("stubborn", "interrupted")
		if !strings.Contains(s.Session.InterruptReason, "SIGTERM, then SIGKILL") {
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
	if msg := r.fails(1, nil, "start", "no-command", "--agent", "gemini"); !strings.Contains(msg, "not supported") {
		t.Fatalf("unknown agent: %s", msg)
	}
}
