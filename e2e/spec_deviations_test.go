package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/flock"
)

// Spec points issue 14 found deviations from.

// spec: "If the agent crashes mid-ask the task lands in interrupted like
// any other turn", it is auto-resumed, and its question re-delivered. lazy
// resumes it as the read-only ask it was, and parks it back.
func TestACrashedAskIsResumedAsAnAskWithItsQuestion(t *testing.T) {
	for _, auto := range []bool{true, false} {
		t.Run(map[bool]string{true: "auto-resume", false: "lazy resume"}[auto], func(t *testing.T) {
			r := crashRepo(t)
			if !auto {
				r = manualResume(r)
			}
			dir := t.TempDir()
			counter, log := filepath.Join(dir, "runs"), filepath.Join(dir, "prompts")
			t.Cleanup(func() { killTurns(r) })
			r = r.with(script(t, "attempt "+counter, "log-prompt "+log, "when 1 print first turn done", "when 1 exit 0", "when 2 hang", "print the answer is 42"))
			tk := r.create("asked then crashed")
			r.ok("start", tk.Slug, "--command", fakeAgentBin)
			r.waitStatus(tk.Slug, "blocked")
			startLazy(t, r, "ask", tk.Slug, "-m", "What is the secret question?")
			waitRun(t, counter, "2")
			crash(t, waitSupervisor(t, r, tk.ID, 0))
			if !auto {
				s := r.waitUntil(tk.Slug, "interrupted", func(s showFull) bool { return s.Status == "interrupted" })
				if !strings.Contains(s.Session.InterruptReason, "ask ended") {
					t.Fatalf("interrupt reason %q", s.Session.InterruptReason)
				}
				r.ok("resume", tk.Slug)
			}
			s := r.waitUntil(tk.Slug, "parked back after the resumed ask", func(s showFull) bool { return s.Status == "blocked" })
			got := promptLog(t, log)
			if len(got) != 3 {
				t.Fatalf("want 3 runs (start, ask, resumed ask), got %+v", got)
			}
			resumed := got[2]
			if resumed.Kind != "ask" || resumed.ReadOnly != "1" || !strings.Contains(resumed.Prompt, "read-only") || !strings.HasSuffix(resumed.Prompt, "verbatim:\n\nWhat is the secret question?") {
				t.Fatalf("the resumed turn is not the ask with its question: %+v", resumed)
			}
			if d := feedbackTurn(t, s, "What is the secret question?").FeedbackDelivery; d != "consumed" {
				t.Fatalf("the answered question is %s", d)
			}
			last := s.TurnList[len(s.TurnList)-1]
			if last.Role != "agent" || last.Content != "the answer is 42" {
				t.Fatalf("the answer was not recorded: %+v", last)
			}
		})
	}
}

// Deliberately stricter than the spec's "a normal completion consumes
// every pending turn": an ask delivers the questions only, so work
// feedback still pending waits for the next work turn instead of being
// consumed by a read-only turn that never saw it.
func TestAnAskLeavesWorkFeedbackPendingForTheNextWorkTurn(t *testing.T) {
	r := newRepo(t)
	dir := t.TempDir()
	counter, log := filepath.Join(dir, "runs"), filepath.Join(dir, "prompts")
	t.Cleanup(func() { killTurns(r) })
	r = r.with(script(t, "attempt "+counter, "log-prompt "+log, "when 2 hang", "print ok"))
	tk := r.create("ask beside pending feedback")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	r.ok("unblock", tk.Slug, "-m", "FB-A: rename the thing")
	waitPrompts(t, r, log, 2)
	r.ok("stop", tk.Slug)
	r.ok("ask", tk.Slug, "-m", "Q: why?")
	s := r.waitStatus(tk.Slug, "blocked")
	if got := promptLog(t, log); got[2].Kind != "ask" || strings.Contains(got[2].Prompt, "FB-A") {
		t.Fatalf("the ask was given work feedback: %+v", got[2])
	}
	if feedbackTurn(t, s, "Q: why?").FeedbackDelivery != "consumed" || feedbackTurn(t, s, "FB-A: rename the thing").FeedbackDelivery != "pending" {
		t.Fatalf("after the ask: %+v", s.TurnList)
	}
	r.ok("unblock", tk.Slug, "-m", "FB-B")
	s = r.waitStatus(tk.Slug, "blocked")
	if got := promptLog(t, log); !strings.Contains(got[3].Prompt, "FB-A: rename the thing") {
		t.Fatalf("the next work turn did not get the pending feedback: %q", got[3].Prompt)
	}
	if feedbackTurn(t, s, "FB-A: rename the thing").FeedbackDelivery != "consumed" {
		t.Fatalf("delivered feedback still pending")
	}
}

func TestRenamingAnApprovedFileIsAccepted(t *testing.T) {
	r := newRepo(t)
	counter := filepath.Join(t.TempDir(), "runs")
	r = r.with(script(t, "attempt "+counter, "when 1 write keep.txt keep me", "when 1 commit agent: outside", "print done"))
	tk := r.create("fenced", "--allow", "src/**")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "conflict")
	r.ok("unblock", tk.Slug, "-m", "keep it", "--approve-file", "keep.txt")
	r.waitStatus(tk.Slug, "blocked")
	// Naming the decided file again is accepted, and the feedback recorded.
	r.ok("unblock", tk.Slug, "-m", "second feedback", "--approve-file", "keep.txt")
	s := r.waitStatus(tk.Slug, "blocked")
	found := false
	for _, tn := range s.TurnList {
		found = found || (tn.Kind == "unblock" && strings.Contains(tn.Content, "second feedback"))
	}
	if !found {
		t.Fatalf("the feedback of the re-naming unblock was not recorded: %+v", s.TurnList)
	}
	if v := r.violations(tk.Slug); v.Violations.Decided["keep.txt"] != "approved" || len(v.Violations.Pending) != 0 {
		t.Fatalf("decisions %+v", v.Violations)
	}
}

func TestReopenSticksAfterAHandMerge(t *testing.T) {
	r := newRepo(t)
	r = r.with(script(t, "write feature.txt the feature", "commit agent: feature", "print done"))
	tk := r.create("merged by hand then reopened")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	r.git("merge", "-q", "--no-ff", "-m", "merge by hand", "lazy/"+tk.Slug)
	r.ok("list")
	if st := r.showFull(tk.Slug).Status; st != "complete" {
		t.Fatalf("hand-merged task: %s", st)
	}
	r.ok("reopen", tk.Slug, "--reason", "the merged work needs more")
	for i := 0; i < 3; i++ {
		r.ok("list")
		if st := r.showFull(tk.Slug).Status; st != "blocked" {
			t.Fatalf("the reopen did not stick: %s", st)
		}
	}
}

func TestCloseAndRejectRecoverAStrandedMergeWithoutADaemon(t *testing.T) {
	for _, verb := range []string{"close", "reject"} {
		t.Run(verb, func(t *testing.T) {
			r := newRepo(t)
			r = r.with(script(t, "write x.txt work", "commit agent: x", "print done"))
			tk := r.create("stranded " + verb)
			r.ok("start", tk.Slug, "--command", fakeAgentBin)
			r.waitStatus(tk.Slug, "blocked")
			tip := strings.TrimSpace(r.git("rev-parse", "main"))
			r.strandAccept(tk.ID, map[string]any{"accept_in_flight_from": "blocked", "into": "main", "into_sha": tip, "started_at": "2026-01-01T00:00:00Z"})
			r.ok(verb, tk.Slug, "--reason", "not needed")
			if st := r.refStatus(tk.ID); st != "abandoned" {
				t.Fatalf("%s of a stranded merge: %s", verb, st)
			}
		})
	}
}

// An unblock of a submitted task that is refused (here: its worktree is
// gone) changes nothing: the task stays submitted, the pull request is
// not marked as being revised.
func TestARefusedUnblockLeavesASubmittedTaskSubmitted(t *testing.T) {
	f := newFakeForge(t)
	r := f.r
	tk := workedTask(t, r, "Submitted work", "s.txt sub")
	r.ok("submit", tk.Slug)
	wt := r.showFull(tk.Slug).Session.Worktree
	aside := wt + ".aside"
	if err := os.Rename(wt, aside); err != nil {
		t.Fatal(err)
	}
	msg := r.fails(1, nil, "unblock", tk.Slug, "-m", "revise it")
	if !strings.Contains(msg, "is missing") || !strings.Contains(msg, "stays submitted") {
		t.Fatalf("refused unblock said: %s", msg)
	}
	if s := f.pr(tk.Slug); s.Status != "submitted" || s.PR == nil || s.PR.Revising {
		t.Fatalf("after a refused unblock: %+v %+v", s, s.PR)
	}
	if err := os.Rename(aside, wt); err != nil {
		t.Fatal(err)
	}
	r.ok("unblock", tk.Slug, "-m", "revise it")
	if s := r.waitStatus(tk.Slug, "blocked"); s.Status != "blocked" {
		t.Fatalf("after the unblock: %s", s.Status)
	}
}

// Every paused status is re-derived: a reopened task whose violations are
// still pending is conflict, and list --status conflict finds it.
func TestReopenParksAsConflictWhileViolationsArePending(t *testing.T) {
	r := newRepo(t)
	r = r.with(script(t, "write outside.txt out", "commit agent: outside", "print done"))
	tk := r.create("fenced then reopened", "--allow", "src/**")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "conflict")
	r.ok("reject", tk.Slug, "-m", "not like this")
	r.ok("reopen", tk.Slug, "--reason", "look again")
	if s := r.showFull(tk.Slug); s.Status != "conflict" {
		t.Fatalf("reopened with a pending violation: %s", s.Status)
	}
	if got := r.list("--status", "conflict"); len(got) != 1 || got[0].ID != tk.ID {
		t.Fatalf("list --status conflict: %+v", got)
	}
}

// A parent is not abandoned under unfinished subtasks, and a subtask is
// neither reopened nor started under an abandoned parent.
func TestNoSubtaskIsLeftUnderAnAbandonedParent(t *testing.T) {
	r := newRepo(t)
	parent := workedTask(t, r, "the parent", "p.txt p")
	child := r.create("the child", "--parent", parent.Slug)
	for _, verb := range []string{"reject", "close"} {
		msg := r.fails(1, nil, verb, parent.Slug, "-m", "no")
		if !strings.Contains(msg, "subtasks "+child.Slug+" are not finished") {
			t.Fatalf("%s of a parent with a backlog subtask said: %s", verb, msg)
		}
	}
	if st := r.showFull(parent.Slug).Status; st != "blocked" {
		t.Fatalf("a refused reject changed the parent: %s", st)
	}
	r.ok("close", child.Slug, "-m", "not needed")
	r.ok("reject", parent.Slug, "-m", "no")
	msg := r.fails(1, nil, "reopen", child.Slug)
	if !strings.Contains(msg, "its parent "+parent.Slug+" is abandoned") {
		t.Fatalf("reopen under an abandoned parent said: %s", msg)
	}
	// A record that says otherwise (pulled, or edited by hand) still
	// cannot start the subtask.
	orphan := r.create("an orphan", "--parent", r.create("another parent").Slug)
	r.editTaskJSON(r.showFull("another-parent").ID, func(m map[string]any) { m["status"] = "abandoned" })
	msg = r.fails(1, nil, "start", orphan.Slug, "--command", fakeAgentBin)
	if !strings.Contains(msg, "is abandoned; reopen the parent first") {
		t.Fatalf("start under an abandoned parent said: %s", msg)
	}
}

// A reject's reason, and a reopen's, are feedback: the first turn after
// the reopen delivers them to the agent, and consumes them.
func TestARejectsReasonReachesTheAgentAfterReopen(t *testing.T) {
	r := newRepo(t)
	log := filepath.Join(t.TempDir(), "prompts")
	r = r.with(script(t, "log-prompt "+log, "append w.txt w", "commit agent: w", "print done"))
	tk := r.create("rejected then reopened")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	r.ok("reject", tk.Slug, "-m", "wrong approach: use the cache")
	r.ok("reopen", tk.Slug, "--reason", "second try")
	r.ok("unblock", tk.Slug, "-m", "go")
	s := r.waitStatus(tk.Slug, "blocked")
	got := promptLog(t, log)
	last := got[len(got)-1].Prompt
	if !strings.HasPrefix(last, "go\n\n---") || !strings.Contains(last, "\nwrong approach: use the cache\n") || !strings.HasSuffix(last, "\nsecond try") {
		t.Fatalf("the turn after the reopen got: %q", last)
	}
	for _, text := range []string{"wrong approach: use the cache", "second try"} {
		if d := feedbackTurn(t, s, text).FeedbackDelivery; d != "consumed" {
			t.Fatalf("%q is %s", text, d)
		}
	}
}

// Intake passes CR byte for byte (spec: control characters "except
// tab/LF/CR" are escaped); the terminal output boundary escapes it.
func TestIntakeKeepsCarriageReturnsAndOutputEscapesThem(t *testing.T) {
	r := newRepo(t)
	tk := r.create("cr intake")
	for _, text := range []string{"a\rb\r\nc", "l1\r\nl2"} {
		r.run([]byte(text), "comment", tk.Slug)
	}
	s := r.showFull(tk.Slug)
	if len(s.CommentList) != 2 || s.CommentList[0].Text != "a\rb\r\nc" || s.CommentList[1].Text != "l1\r\nl2" {
		t.Fatalf("stored comments: %q", s.CommentList)
	}
	out := r.ok("show", tk.Slug)
	if strings.Contains(out, "\r") || !strings.Contains(out, `a\u000db`) {
		t.Fatalf("show printed a raw CR or hid it:\n%q", out)
	}
}

// A classified stop (here fatal_auth) parks the task, and records the
// interrupt with every field the spec lists, not the reason alone.
func TestAClassifiedStopRecordsEveryInterruptField(t *testing.T) {
	r := withFakeClaude(t, newRepo(t))
	r = r.with(script(t, "replay "+transcript(t, "claude/nocreds.jsonl"), "exit 1"))
	tk := r.create("no login")
	r.ok("start", tk.Slug)
	r.waitStatus(tk.Slug, "blocked")
	var s struct {
		Session struct {
			Reason   string     `json:"interrupt_reason"`
			Code     *int       `json:"interrupt_exit_code"`
			At       *time.Time `json:"interrupt_at"`
			Logs     string     `json:"interrupt_logs"`
			Counter  int        `json:"consecutive_interruptions"`
			TurnKind string     `json:"turn_kind"`
		} `json:"session"`
	}
	if err := json.Unmarshal([]byte(r.ok("show", "--json", tk.Slug)), &s); err != nil {
		t.Fatal(err)
	}
	ss := s.Session
	if ss.Reason != "fatal_auth: Not logged in · Please run /login" || ss.Code == nil || *ss.Code != 1 || ss.At == nil || time.Since(*ss.At) > time.Hour ||
		!strings.Contains(ss.Logs, "Not logged in") || ss.Counter != 1 {
		t.Fatalf("the classified stop's interrupt record: %+v (exit code %v, at %v)", ss, ss.Code, ss.At)
	}
}

// spec: an ask "never changes the task's state" and runs no permission
// check. The exec agent has no enforced sandbox, so what an ask writes is
// undone (and kept aside, never destroyed), whether the ask ends or its
// supervisor dies; a human's uncommitted work in the worktree survives.
func TestAnAskIsReadOnlyForTheExecAgent(t *testing.T) {
	for _, crashed := range []bool{false, true} {
		t.Run(map[bool]string{false: "ask ends", true: "supervisor dies"}[crashed], func(t *testing.T) {
			r := manualResume(crashRepo(t))
			counter := filepath.Join(t.TempDir(), "runs")
			t.Cleanup(func() { killTurns(r) })
			lines := []string{"attempt " + counter, "when 1 write src/a.txt original", "when 1 commit agent: a", "when 1 exit 0",
				"write src/a.txt changed by the ask", "write outside.txt ask", "commit agent: the ask committed", "write loose.txt ask, uncommitted"}
			if crashed {
				lines = append(lines, "hang")
			}
			r = r.with(script(t, append(lines, "print the answer")...))
			tk := r.create("asked read-only", "--allow", "src/**")
			r.ok("start", tk.Slug, "--command", fakeAgentBin)
			s := r.waitStatus(tk.Slug, "blocked")
			wt := s.Session.Worktree
			tip := strings.TrimSpace(r.git("rev-parse", "lazy/"+tk.Slug))
			if err := os.WriteFile(filepath.Join(wt, "wip.txt"), []byte("the human's\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if crashed {
				startLazy(t, r, "ask", tk.Slug, "-m", "what is in a.txt?")
				waitRun(t, counter, "2")
				eventually(t, "the ask to commit", func() bool { _, err := os.Stat(filepath.Join(wt, "loose.txt")); return err == nil })
				crash(t, waitSupervisor(t, r, tk.ID, 0))
				s = r.waitUntil(tk.Slug, "interrupted", func(s showFull) bool { return s.Status == "interrupted" })
				if !strings.Contains(s.Session.InterruptReason, "This ask was read-only, but the agent") {
					t.Fatalf("interrupt reason %q", s.Session.InterruptReason)
				}
			} else {
				r.ok("ask", tk.Slug, "-m", "what is in a.txt?")
				s = r.waitStatus(tk.Slug, "blocked")
				last := s.TurnList[len(s.TurnList)-1]
				if !strings.HasPrefix(last.Content, "the answer\n\n[lazy] This ask was read-only, but the agent") || len(last.Commits) != 0 || len(last.ChangedFiles) != 0 {
					t.Fatalf("the answer: %+v", last)
				}
			}
			if got := strings.TrimSpace(r.git("rev-parse", "lazy/"+tk.Slug)); got != tip {
				t.Fatal("the ask's commit stayed on the task branch")
			}
			if v := r.violations(tk.Slug); v.Violations != nil {
				t.Fatalf("the ask was permission-checked: %+v", v.Violations)
			}
			for name, want := range map[string]string{"src/a.txt": "original\n", "wip.txt": "the human's\n"} {
				if b, err := os.ReadFile(filepath.Join(wt, name)); err != nil || string(b) != want {
					t.Fatalf("%s after the ask: %q %v", name, b, err)
				}
			}
			for _, name := range []string{"outside.txt", "loose.txt"} {
				if _, err := os.Stat(filepath.Join(wt, name)); !os.IsNotExist(err) {
					t.Fatalf("%s, written by the ask, is still in the worktree", name)
				}
			}
			kept := "refs/lazy-kept/" + tk.ID + "/"
			refs := r.git("for-each-ref", "--format=%(refname)", kept)
			if !strings.HasPrefix(refs, kept) || strings.TrimSpace(r.git("show", refs+":loose.txt")) != "ask, uncommitted" {
				t.Fatalf("what the ask wrote was not kept: %q", refs)
			}
		})
	}
}

// The pre-accept turn keeps the accept's guarantees: the task lock is
// held through it (nothing else acts on the task meanwhile), and a
// submitted task gets the turn too, parking back submitted.
func TestThePreAcceptTurnHoldsTheTaskAndRestoresSubmitted(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		r := newRepo(t)
		dir := t.TempDir()
		seen, goAhead := filepath.Join(dir, "seen"), filepath.Join(dir, "go")
		tk := workedTask(t, r, "held through the turn", "w.txt w")
		r = r.with(script(t, "write fix.txt fixed", "commit agent: pre-accept fix", "write "+seen+" running", "wait-file "+goAhead, "print ok"))
		r.git("config", "lazy.accept.preTurn", "Run the checks.")
		cmd := startLazy(t, r, "accept", tk.Slug)
		waitFile(t, seen)
		l, err := flock.TryLock(filepath.Join(r.dir, ".git", "lazy", "locks", "task-"+tk.ID+".lock"))
		if err == nil {
			_ = l.Release()
			t.Fatal("the task lock is free while the pre-accept turn runs")
		}
		if !errors.Is(err, flock.ErrHeld) {
			t.Fatal(err)
		}
		if err := os.WriteFile(goAhead, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("accept: %v", err)
		}
		if got := r.git("show", "main:fix.txt"); got != "fixed" || r.show(tk.Slug).Status != "complete" {
			t.Fatalf("after the accept: main:fix.txt %q, status %s", got, r.show(tk.Slug).Status)
		}
	})
	t.Run("submitted", func(t *testing.T) {
		f := newFakeForge(t)
		r := f.r
		tk := workedTask(t, r, "submitted then accepted", "s.txt s")
		r.ok("submit", tk.Slug)
		log := filepath.Join(t.TempDir(), "prompts")
		r.git("config", "lazy.accept.preTurn", "Run the checks.")
		failing := r.with(script(t, "print the checks broke", "exit 1"))
		if msg := failing.fails(1, nil, "accept", tk.Slug); !strings.Contains(msg, "pre-accept turn failed") {
			t.Fatalf("accept with a failing pre-accept turn: %s", msg)
		}
		if s := f.pr(tk.Slug); s.Status != "submitted" {
			t.Fatalf("after a failed pre-accept turn of a submitted task: %s", s.Status)
		}
		r = r.with(script(t, "log-prompt "+log, "write fix.txt fixed", "commit agent: pre-accept fix", "print ok"))
		out := r.ok("accept", tk.Slug)
		if !strings.Contains(out, "merged into main") {
			t.Fatalf("accept: %s", out)
		}
		if got := promptLog(t, log); len(got) != 1 || got[0].Kind != "pre-accept" || got[0].Prompt != "Run the checks." {
			t.Fatalf("the pre-accept turns: %+v", got)
		}
		st := f.load()
		if len(st.PRs) != 1 || !strings.Contains(r.git("log", "--format=%s", st.PRs[0].HeadOid), "agent: pre-accept fix") {
			t.Fatalf("the pre-accept fix was not pushed before the merge: %+v", st.PRs)
		}
	})
}
