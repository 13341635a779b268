package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// Spec points issue 14 found deviations from.

func TestCrashedAskIsInterruptedAndItsQuestionIsNotWorkFeedback(t *testing.T) {
	r := manualResume(crashRepo(t))
	counter := filepath.Join(t.TempDir(), "runs")
	argv := filepath.Join(t.TempDir(), "argv")
	r = r.with(script(t, "attempt "+counter, "argv "+argv, "when 1 print first turn done", "when 1 exit 0", "when 2 hang", "print later turn"))
	tk := r.create("asked then crashed")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	startLazy(t, r, "ask", tk.Slug, "-m", "What is the secret question?")
	waitRun(t, counter, "2")
	sup := waitSupervisor(t, r, tk.ID, 0)
	crash(t, sup)
	s := r.waitStatus(tk.Slug, "interrupted") // spec: like any other turn
	if !strings.Contains(s.Session.InterruptReason, "ask ended") {
		t.Fatalf("interrupt reason %q", s.Session.InterruptReason)
	}
	// A human resumes: a work turn, whose prompt does not pass the
	// unanswered question off as feedback, and which does not mark it
	// answered.
	r.ok("resume", tk.Slug)
	s = r.waitStatus(tk.Slug, "blocked")
	if p := lastPrompt(t, argv); strings.Contains(p, "secret question") {
		t.Fatalf("the resumed work turn got the ask's question as feedback: %q", p)
	}
	for _, tn := range s.TurnList {
		if tn.Kind == "ask" && tn.FeedbackDelivery == "consumed" {
			t.Fatalf("an unrelated turn marked the unanswered question consumed: %+v", tn)
		}
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
			r.editTaskJSON(tk.ID, func(m map[string]any) {
				m["status"] = "merging"
				m["accept"] = map[string]any{"accept_in_flight_from": "blocked", "into": "main", "into_sha": tip, "started_at": "2026-01-01T00:00:00Z", "host": ""}
			})
			r.ok(verb, tk.Slug, "--reason", "not needed")
			if st := r.refStatus(tk.ID); st != "abandoned" {
				t.Fatalf("%s of a stranded merge: %s", verb, st)
			}
		})
	}
}
