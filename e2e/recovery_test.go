package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Crash-recovery tests: real supervisors are SIGKILLed (or stopped) while
// the fake agent works, and the reconciler run by lazy show/list (or by
// the daemon) detects it, auto-resumes within the circuit breaker and
// re-delivers feedback. Assertions are on the argv the resumed agent
// actually received.

const (
	resumeClean = "You are being resumed after a crash. Upstream has been merged into your branch since your last turn."
	resumeDirty = "You are being resumed after a crash. There are uncommitted changes in your worktree"
)

// crashRepo is a repository whose reconciler gives a missing supervisor a
// 1 s start grace instead of 30 s.
func crashRepo(t *testing.T) *runner {
	t.Helper()
	r := newRepo(t)
	r.git("config", "lazy.startGrace", "1s")
	return r
}

// waitSupervisor waits for a supervisor other than notPID to run the
// task's agent and returns the supervisor's pid.
func waitSupervisor(t *testing.T, r *runner, id string, notPID int) int {
	t.Helper()
	path := filepath.Join(r.dir, ".git", "lazy", "proto", id, "status.json")
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var st struct {
			PID      int    `json:"pid"`
			AgentPID int    `json:"agent_pid"`
			Phase    string `json:"phase"`
		}
		// A finished turn's status.json stays behind: only a running
		// supervisor (a live process, not a zombie) counts.
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &st) == nil && st.PID != notPID && st.AgentPID != 0 && st.Phase != "done" {
			if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", st.PID)); err == nil && len(cmdline) > 0 {
				return st.PID
			}
		}
		r.run(nil, "list") // the reconciler, which auto-resumes
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no new supervisor (other than %d) ran the agent", notPID)
	return 0
}

// crash SIGKILLs a supervisor, as an OOM kill or a power cut would.
func crash(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill supervisor %d: %v", pid, err)
	}
}

// waitRun waits until the fake agent's attempt counter reaches n.
func waitRun(t *testing.T, counter string, n string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(counter); strings.TrimSpace(string(b)) == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the agent never reached run %s", n)
}

func upstreamCommit(t *testing.T, r *runner, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, name), []byte("upstream\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("add", name)
	r.git("commit", "-q", "-m", "upstream: "+name)
}

// lastPrompt is the prompt a fake agent recorded with "argv".
func lastPrompt(t *testing.T, path string) string {
	t.Helper()
	argv := readArgv(t, path)
	return argv[len(argv)-1]
}

func autoResumeTurns(s showFull) []turnJSON {
	var out []turnJSON
	for _, tn := range s.TurnList {
		if tn.Kind == "auto-resume" {
			out = append(out, tn)
		}
	}
	return out
}

func TestCrashScenarios(t *testing.T) {
	const goal = "Edit the files.\nKeep \"quotes\", $dollars and `ticks` intact."
	type scenario struct {
		name   string
		before []string // what the agent does in run 1 before it hangs
		dirty  bool
		check  func(t *testing.T, r *runner, s showFull)
	}
	for _, sc := range []scenario{
		{name: "A crash before any edits", before: []string{"print reading files"}},
		{name: "B crash mid-edit leaves the worktree dirty", dirty: true,
			before: []string{"write a.txt fully edited", "write b.txt half wri"},
			check: func(t *testing.T, r *runner, s showFull) {
				b, err := os.ReadFile(filepath.Join(s.Session.Worktree, "b.txt"))
				if err != nil || string(b) != "half wri\n" {
					t.Fatalf("the interrupted edit was not left for the agent: %q %v", b, err)
				}
			}},
		{name: "C crash after commit before the response",
			before: []string{"write c.txt committed work", "commit agent: c.txt"},
			check: func(t *testing.T, r *runner, s showFull) {
				head := strings.TrimSpace(r.git("rev-parse", "lazy/c-crash-after-commit-before-the-response~1"))
				var crashed *turnJSON
				for i := range s.TurnList {
					if strings.Contains(s.TurnList[i].Content, "exited without writing a response") {
						crashed = &s.TurnList[i]
					}
				}
				if crashed == nil || len(crashed.Commits) != 1 {
					t.Fatalf("the crashed turn did not record its commit: %+v", crashed)
				}
				// The commit is on the branch, below the upstream merge.
				if _, err := gitErr(r, "merge-base", "--is-ancestor", crashed.Commits[0], "lazy/c-crash-after-commit-before-the-response"); err != nil {
					t.Fatalf("commit %s not on the branch (head~1 %s)", crashed.Commits[0], head)
				}
			}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			r := crashRepo(t)
			counter := filepath.Join(t.TempDir(), "runs")
			argvFile := filepath.Join(t.TempDir(), "argv.json")
			lines := []string{"attempt " + counter, "when 2 argv " + argvFile, "when 2 print resumed and verified", "when 2 exit 0"}
			lines = append(lines, sc.before...)
			lines = append(lines, "print about to hang", "hang")
			r = r.with(script(t, lines...))
			tk := r.create(strings.Fields(sc.name)[0]+" "+strings.Join(strings.Fields(sc.name)[1:], " "), "-m", goal)
			r.ok("start", tk.Slug, "--command", fakeAgentBin)
			sup := waitSupervisor(t, r, tk.ID, 0)
			waitLog(t, r, "about to hang")
			upstreamCommit(t, r, "up.txt")
			crash(t, sup)

			s := r.waitStatus(tk.Slug, "blocked")
			prompt := lastPrompt(t, argvFile)
			want := resumeClean
			if sc.dirty {
				want = resumeDirty
			}
			if !strings.HasPrefix(prompt, want) {
				t.Fatalf("resumed with %q, want the prefix %q", prompt, want)
			}
			// The start prompt was never consumed: re-delivered verbatim.
			if !strings.HasSuffix(prompt, "verbatim:\n\n"+tk.Title+"\n\n"+goal) {
				t.Fatalf("the start prompt was not re-delivered verbatim: %q", prompt)
			}
			_, err := gitErr(r, "merge-base", "--is-ancestor", "main", "lazy/"+tk.Slug)
			if merged := err == nil; merged == sc.dirty {
				t.Fatalf("upstream merged=%v on a dirty=%v worktree", merged, sc.dirty)
			}
			ar := autoResumeTurns(s)
			if len(ar) != 1 || ar[0].Actor != "system" || !strings.HasPrefix(ar[0].Content, "[system] Session interrupted and auto-resumed") {
				t.Fatalf("auto-resume turns %+v", ar)
			}
			// The launching shell recorded how the supervisor died.
			var killed *turnJSON
			for i := range s.TurnList {
				if strings.Contains(s.TurnList[i].Content, "exited without writing a response") {
					killed = &s.TurnList[i]
				}
			}
			if killed == nil || killed.ExitCode == nil || *killed.ExitCode != 137 || !strings.Contains(killed.Content, "SIGKILL (exit code 137)") {
				t.Fatalf("the crash turn does not carry the SIGKILL exit: %+v", killed)
			}
			var sawInterrupt, sawResume bool
			for _, h := range s.History {
				sawInterrupt = sawInterrupt || (h.From == "working" && h.To == "interrupted" && h.Actor == "system")
				sawResume = sawResume || (h.Op == "auto-resume" && h.From == "interrupted" && h.To == "working" && h.Actor == "system")
			}
			if !sawInterrupt || !sawResume {
				t.Fatalf("history lacks the interrupt or the auto-resume: %+v", s.History)
			}
			if s.Session.ConsecutiveInterruptions != 0 || s.TurnList[0].FeedbackDelivery != "consumed" {
				t.Fatalf("after the completed resume: counter %d, start turn %+v", s.Session.ConsecutiveInterruptions, s.TurnList[0])
			}
			if sc.check != nil {
				sc.check(t, r, s)
			}
		})
	}
}

func TestCircuitBreakerStopsAfterThreeAndManualResumeResetsIt(t *testing.T) {
	r := crashRepo(t)
	counter := filepath.Join(t.TempDir(), "runs")
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	r = r.with(script(t, "attempt "+counter,
		"when 4 argv "+argvFile, "when 4 print fixed by hand", "when 4 exit 0",
		"print going", "hang"))
	tk := r.create("keeps crashing")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	sup := 0
	for run := 1; run <= 3; run++ {
		sup = waitSupervisor(t, r, tk.ID, sup)
		waitRun(t, counter, string(rune('0'+run)))
		crash(t, sup)
	}
	var s showFull
	deadline := time.Now().Add(30 * time.Second)
	for {
		s = r.showFull(tk.Slug)
		if s.Status == "interrupted" && s.Session.ConsecutiveInterruptions == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the breaker never held the task: %s, counter %d", s.Status, s.Session.ConsecutiveInterruptions)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Another reconcile pass leaves it alone: no fourth run.
	r.ok("list")
	if s2 := r.showFull(tk.Slug); s2.Status != "interrupted" || len(autoResumeTurns(s2)) != 2 {
		t.Fatalf("after the breaker: %s with %d auto-resumes", s2.Status, len(autoResumeTurns(s2)))
	}
	if b, _ := os.ReadFile(counter); string(b) != "3" {
		t.Fatalf("the agent ran %s times, want 3", b)
	}
	r.ok("resume", tk.Slug)
	s = r.waitStatus(tk.Slug, "blocked")
	if s.Session.ConsecutiveInterruptions != 0 {
		t.Fatalf("counter %d after a human resume and a completed turn", s.Session.ConsecutiveInterruptions)
	}
	if !strings.HasPrefix(lastPrompt(t, argvFile), resumeClean) {
		t.Fatalf("manual resume prompt %q", lastPrompt(t, argvFile))
	}
}

func TestFeedbackSurvivesCrashesVerbatim(t *testing.T) {
	r := crashRepo(t)
	counter := filepath.Join(t.TempDir(), "runs")
	argv3 := filepath.Join(t.TempDir(), "argv3.json")
	argv4 := filepath.Join(t.TempDir(), "argv4.json")
	r = r.with(script(t, "attempt "+counter,
		"when 1 print first turn done", "when 1 exit 0",
		"when 3 argv "+argv3, "when 4 argv "+argv4, "when 4 print acted on the feedback", "when 4 exit 0",
		"print working", "hang"))
	tk := r.create("needs feedback")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")

	feedback := "Rename it to `frob`.\n\nDo NOT touch \"main.go\"; $HOME stays.\ttabbed"
	r.ok("unblock", tk.Slug, "-m", feedback)
	sup := waitSupervisor(t, r, tk.ID, 0)
	waitRun(t, counter, "2")
	crash(t, sup) // feedback recorded, never consumed

	sup = waitSupervisor(t, r, tk.ID, sup)
	waitFile(t, argv3) // the resumed agent got its prompt (atomic write)
	crash(t, sup)      // a crash during the resume itself

	s := r.waitStatus(tk.Slug, "blocked")
	for _, p := range []string{argv3, argv4} {
		prompt := lastPrompt(t, p)
		if !strings.HasSuffix(prompt, "verbatim:\n\n"+feedback) {
			t.Fatalf("%s: the feedback was not re-delivered verbatim: %q", filepath.Base(p), prompt)
		}
	}
	for _, tn := range s.TurnList {
		if tn.Kind == "unblock" && tn.FeedbackDelivery != "consumed" {
			t.Fatalf("feedback still %q after a completed turn", tn.FeedbackDelivery)
		}
	}
	if n := len(autoResumeTurns(s)); n != 2 {
		t.Fatalf("%d auto-resumes, want 2", n)
	}
}

func TestLateResponseAfterInterruptIsRecorded(t *testing.T) {
	r := manualResume(crashRepo(t))
	r = r.with(script(t, "print started", "hang"))
	tk := r.create("slow supervisor")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	sup := waitSupervisor(t, r, tk.ID, 0)
	// A frozen supervisor still holds its lock: it is alive, and the task
	// is never interrupted under it.
	if err := syscall.Kill(sup, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if st := r.showFull(tk.Slug).Status; st != "working" {
			_ = syscall.Kill(sup, syscall.SIGCONT)
			t.Fatalf("a frozen (live) supervisor's task became %s", st)
		}
	}
	statusPath := filepath.Join(r.dir, ".git", "lazy", "proto", tk.ID, "status.json")
	var st struct {
		Session string `json:"session"`
		Seq     int    `json:"turn"`
	}
	if b, err := os.ReadFile(statusPath); err != nil || json.Unmarshal(b, &st) != nil {
		t.Fatalf("status.json: %v", err)
	}
	crash(t, sup)
	r.waitStatus(tk.Slug, "interrupted")
	// The turn's answer lands after the interrupt (a writer the crash
	// delayed): it is recorded through working, never lost.
	resp := fmt.Sprintf(`{"task_id":%q,"session":%q,"turn":%d,"status":"completed","phase":"agent","result":"the late answer","commits":[],"changed_files":[],"exit_code":0}`, tk.ID, st.Session, st.Seq)
	if err := os.WriteFile(filepath.Join(r.dir, ".git", "lazy", "proto", tk.ID, "response.json"), []byte(resp), 0o644); err != nil {
		t.Fatal(err)
	}
	s := r.waitStatus(tk.Slug, "blocked")
	if last := s.TurnList[len(s.TurnList)-1]; !strings.Contains(last.Content, "the late answer") {
		t.Fatalf("last turn %+v", last)
	}
	n := len(s.History)
	h1, h2 := s.History[n-2], s.History[n-1]
	if h1.From != "interrupted" || h1.To != "working" || h2.From != "working" || h2.To != "blocked" || h1.Actor != "system" {
		t.Fatalf("the late response did not route through working: %+v %+v", h1, h2)
	}
}

func TestDaemonAloneRecoversAfterDaemonAndSupervisorAreKilled(t *testing.T) {
	r := withDaemon(t, crashRepo(t))
	counter := filepath.Join(t.TempDir(), "runs")
	r = r.with(script(t, "attempt "+counter, "when 2 print recovered by the daemon", "when 2 exit 0", "print working", "hang"))
	tk := r.create("everything dies")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	info := r.daemonInfo()
	sup := waitSupervisor(t, r, tk.ID, 0)
	waitRun(t, counter, "1")
	if err := syscall.Kill(info.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	crash(t, sup)
	r.ok("daemon", "--ensure")
	// Nothing but the new daemon reconciles: plain git reads only.
	deadline := time.Now().Add(30 * time.Second)
	for r.refStatus(tk.ID) != "blocked" {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not recover the task (status %s)", r.refStatus(tk.ID))
		}
		time.Sleep(50 * time.Millisecond)
	}
	s := r.showFull(tk.Slug)
	if last := s.TurnList[len(s.TurnList)-1]; !strings.Contains(last.Content, "recovered by the daemon") || len(autoResumeTurns(s)) != 1 {
		t.Fatalf("turns %+v", s.TurnList)
	}
}

// A crash whose auto-resume merges a conflicting upstream hands the
// conflict to the resumed agent, instead of interrupting the task for a
// human before the agent ever sees it.
func TestAutoResumeHandsAnUpstreamConflictToTheAgent(t *testing.T) {
	r := crashRepo(t)
	counter, argvFile := filepath.Join(t.TempDir(), "runs"), filepath.Join(t.TempDir(), "argv.json")
	r = r.with(script(t, "attempt "+counter, "argv "+argvFile,
		"when 1 write shared.txt the agent's version", "when 1 commit agent: shared.txt", "when 1 print about to hang", "when 1 hang",
		"write shared.txt both versions, merged", "commit agent: resolve the merge", "print resolved"))
	tk := r.create("merge trouble")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	sup := waitSupervisor(t, r, tk.ID, 0)
	waitLog(t, r, "about to hang")
	if err := os.WriteFile(filepath.Join(r.dir, "shared.txt"), []byte("upstream's version\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("add", "shared.txt")
	r.git("commit", "-q", "-m", "upstream: conflicting shared.txt")
	crash(t, sup)

	// The crash auto-resumes (clean worktree: upstream merged first), the
	// merge conflicts, and the resumed agent resolves it.
	s := r.waitUntil(tk.Slug, "the resumed turn to end", func(s showFull) bool { return s.Status != "working" && s.Status != "interrupted" })
	if s.Status != "blocked" || len(autoResumeTurns(s)) != 1 {
		t.Fatalf("after the conflicting auto-resume: %s with %d auto-resumes", s.Status, len(autoResumeTurns(s)))
	}
	if b, _ := os.ReadFile(counter); string(b) != "2" {
		t.Fatalf("the agent ran %s times, want 2", b)
	}
	if p := readArgv(t, argvFile); !strings.Contains(p[len(p)-1], "conflicted in 1 file: shared.txt") || !strings.Contains(p[len(p)-1], "resumed after a crash") {
		t.Fatalf("the resumed agent was told %q", p[len(p)-1])
	}
	if parents := strings.Fields(r.git("log", "-1", "--format=%P", "lazy/"+tk.Slug)); len(parents) != 2 {
		t.Fatalf("the merge was not concluded: parents %v", parents)
	}
}

func TestNoAutoResumeWithPendingViolations(t *testing.T) {
	r := crashRepo(t)
	counter := filepath.Join(t.TempDir(), "runs")
	r = r.with(script(t, "attempt "+counter, "write outside.txt not allowed", "print about to hang", "hang"))
	tk := r.create("fenced crash", "--allow", "src/**")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	sup := waitSupervisor(t, r, tk.ID, 0)
	waitLog(t, r, "about to hang")
	crash(t, sup)
	r.waitStatus(tk.Slug, "interrupted")
	r.ok("list")
	v := r.violations(tk.Slug)
	if v.Status != "interrupted" || v.Violations == nil || len(v.Violations.Pending) != 1 || v.Violations.Pending[0] != "outside.txt" {
		t.Fatalf("after the crash: %+v", v)
	}
	if b, _ := os.ReadFile(counter); string(b) != "1" {
		t.Fatalf("auto-resumed over a pending violation: the agent ran %s times", b)
	}
	rep := r.doctor(1, "--dry-run", tk.Slug)
	found := false
	for _, f := range rep.Findings {
		found = found || f.Kind == "interrupted" && strings.Contains(f.Detail, "violations are pending")
	}
	if !found {
		t.Fatalf("doctor: %+v", rep.Findings)
	}
}

// A turn killed while its git held the worktree's index.lock (an agent's
// commit) leaves the lock behind; the interrupt removes it, since no
// process holds it open, so the next turn can commit again.
func TestAnInterruptClearsTheIndexLockAKilledGitLeft(t *testing.T) {
	r := manualResume(crashRepo(t))
	counter := filepath.Join(t.TempDir(), "runs")
	tk := r.create("killed mid-commit")
	lock := filepath.Join(r.dir, ".git", "worktrees", tk.Slug, "index.lock")
	r = r.with(script(t, "attempt "+counter, "when 1 exit 0", "when 2 write "+lock+" killed git", "when 2 hang",
		"write after.txt after", "commit agent: after the crash", "print done"))
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	r.ok("unblock", tk.Slug, "-m", "go on")
	waitFile(t, lock)
	crash(t, waitSupervisor(t, r, tk.ID, 0))
	s := r.waitUntil(tk.Slug, "interrupted", func(s showFull) bool { return s.Status == "interrupted" })
	if !strings.Contains(s.Session.InterruptReason, "index.lock") {
		t.Fatalf("interrupt reason %q", s.Session.InterruptReason)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("the killed git's index.lock is still there: %v", err)
	}
	r.ok("resume", tk.Slug)
	s = r.waitStatus(tk.Slug, "blocked")
	if last := s.TurnList[len(s.TurnList)-1]; len(last.Commits) != 1 {
		t.Fatalf("the turn after the crash could not commit: %+v", last)
	}
}
