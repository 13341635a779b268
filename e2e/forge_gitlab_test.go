package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/fakeglab/glstate"
)

// The fake's own state types: the tests edit the file it reads.
type glState = glstate.State
type glMR = glstate.MR
type glPipeline = glstate.Pipeline

// newFakeGitLab is newFakeForge on a fake GitLab served by
// internal/testfakes/fakeglab, project acme/app on gitlab.com.
func newFakeGitLab(t *testing.T) *fakeForge {
	t.Helper()
	f := newForgeRepo(t, "gitlab", "FAKEGLAB_STATE")
	saveState(f, &glState{Host: "gitlab.com", Project: "acme/app", RemoteDir: f.remote, MRs: []*glMR{}})
	return f
}

func glLoad(f *fakeForge) *glState              { return loadState[glState](f) }
func glEdit(f *fakeForge, fn func(st *glState)) { editState(f, fn) }

// glCalls counts the fake glab's invocations whose argv has all of
// words.
func glCalls(f *fakeForge, words ...string) int {
	b, _ := os.ReadFile(f.state + ".log")
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		var argv []string
		if json.Unmarshal([]byte(line), &argv) != nil {
			continue
		}
		all := " " + strings.Join(argv, " ") + " "
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(all, " "+w+" ")
		}
		if ok {
			n++
		}
	}
	return n
}

func TestGitLabSubmitUpdatesOneMergeRequestAndAcceptMergesThroughGlab(t *testing.T) {
	f := newFakeGitLab(t)
	r := f.r

	// Logged out: one sentence, and nothing was pushed.
	glEdit(f, func(st *glState) { st.LoggedOut = true })
	tk := workedTask(t, r, "Forge work", "a.txt alpha")
	if msg := r.fails(1, nil, "submit", tk.Slug); !strings.Contains(msg, "glab is not logged in to gitlab.com; run glab auth login --hostname gitlab.com") {
		t.Fatalf("logged-out submit said: %s", msg)
	}
	if f.remoteHead("lazy/forge-work") != "" || r.show(tk.Slug).Status != "blocked" {
		t.Fatal("a submit that could not reach GitLab pushed or changed the task")
	}
	glEdit(f, func(st *glState) { st.LoggedOut = false })

	const mrURL = "https://gitlab.com/acme/app/-/merge_requests/1"
	out := r.ok("submit", tk.Slug, "--draft")
	if !strings.Contains(out, "opened pull request #1 "+mrURL) {
		t.Fatalf("submit: %s", out)
	}
	tip := strings.TrimSpace(r.git("rev-parse", "lazy/forge-work"))
	if f.remoteHead("lazy/forge-work") != tip {
		t.Fatal("the task branch was not pushed")
	}
	s := f.pr(tk.Slug)
	if s.Status != "submitted" || s.PR == nil || s.PR.Forge != "gitlab" || s.PR.Number != 1 || s.PR.URL != mrURL || s.PR.State != "open" {
		t.Fatalf("after submit: %+v %+v", s, s.PR)
	}
	st := glLoad(f)
	if len(st.MRs) != 1 || st.MRs[0].Title != "Draft: Forge work" || st.MRs[0].TargetBranch != "main" || st.MRs[0].SourceBranch != "lazy/forge-work" ||
		st.MRs[0].SHA != tip || !strings.Contains(st.MRs[0].Description, "Goal of Forge work.") || !strings.Contains(st.MRs[0].Description, "Lazy-Task: "+tk.ID) {
		t.Fatalf("merge request: %+v", st.MRs[0])
	}
	if show := r.ok("show", tk.Slug); !strings.Contains(show, "PR #1 open "+mrURL) {
		t.Fatalf("show does not show the merge request:\n%s", show)
	}

	// A re-submit after another turn updates the same merge request, and
	// without --draft marks it ready.
	rr := r.with(script(t, "write b.txt beta", "commit agent: b", "print revised"))
	rr.ok("unblock", tk.Slug, "-m", "also add b")
	rr.waitStatus(tk.Slug, "blocked")
	if out := r.ok("submit", tk.Slug); !strings.Contains(out, "updated pull request #1") {
		t.Fatalf("re-submit: %s", out)
	}
	tip = strings.TrimSpace(r.git("rev-parse", "lazy/forge-work"))
	st = glLoad(f)
	if len(st.MRs) != 1 || st.MRs[0].SHA != tip || st.MRs[0].Title != "Forge work" || !strings.Contains(st.MRs[0].Description, "also add b") ||
		glCalls(f, "api", "POST") != 1 || glCalls(f, "api", "PUT") != 1 {
		t.Fatalf("re-submit did not update the one merge request: %+v", st.MRs)
	}

	// A failed job: nothing merges, the task is submitted again.
	glEdit(f, func(st *glState) {
		st.MRs[0].Pipeline = &glPipeline{ID: 77, Status: "failed"}
		st.MRs[0].Jobs = []map[string]any{
			{"id": 701, "name": "unit", "stage": "test", "status": "failed", "allow_failure": false, "web_url": "https://gitlab.com/acme/app/-/jobs/701", "failure_reason": "script_failure"},
			{"id": 702, "name": "lint", "stage": "test", "status": "failed", "allow_failure": true, "web_url": "https://gitlab.com/acme/app/-/jobs/702"},
		}
	})
	if msg := r.fails(1, nil, "accept", tk.Slug); !strings.Contains(msg, "the forge refused to merge pull request #1; the task is submitted again") ||
		!strings.Contains(msg, "this merge request requires a passing pipeline before merging") {
		t.Fatalf("accept with a failed job: %s", msg)
	}
	if s := f.pr(tk.Slug); s.Status != "submitted" || glLoad(f).MRs[0].State != "opened" {
		t.Fatalf("after a failed accept: %+v %+v", s, s.PR)
	}

	// The pipeline runs again and an approval is missing; the project
	// never squashes: glab sets auto-merge with a plain merge and the
	// task stays merging.
	glEdit(f, func(st *glState) {
		st.SquashOption = "never"
		st.MRs[0].Pipeline.Status = "running"
		st.MRs[0].Jobs[0]["status"] = "running"
		st.MRs[0].ApprovalsLeft = 1
	})
	res := r.run(nil, "accept", tk.Slug)
	if res.Code != 0 || !strings.Contains(res.Stdout, "not merged yet (1 check pending, approval required)") {
		t.Fatalf("pending accept: %s", res)
	}
	if s := f.pr(tk.Slug); s.Status != "merging" || s.PR.Review != "review_required" {
		t.Fatalf("a pending GitLab merge: %+v %+v", s, s.PR)
	}
	if mr := glLoad(f).MRs[0]; !mr.AutoMerge || mr.Squash || glCalls(f, "mr", "merge", "--yes") != 2 || glCalls(f, "mr", "merge", "--squash") != 1 /* only the refused one */ {
		t.Fatalf("auto-merge was not requested as a plain merge: %+v", mr)
	}
	r.ok("list")
	if got := r.show(tk.Slug).Status; got != "merging" {
		t.Fatalf("a read moved the forge-pending merge to %s", got)
	}

	// GitLab merges; a later accept re-enters and finishes.
	glEdit(f, func(st *glState) {
		st.MRs[0].State, st.MRs[0].MergeCommitSHA = "merged", strings.Repeat("c", 40)
	})
	res = r.run(nil, "accept", tk.Slug)
	if res.Code != 0 || !strings.Contains(res.Stdout, "pull request #1 merged into main as cccccccccccc") {
		t.Fatalf("re-entry accept: %s", res)
	}
	if s := f.pr(tk.Slug); s.Status != "complete" || s.Outcome != "accepted" {
		t.Fatalf("after the GitLab merge: %+v", s)
	}
	if out := r.git("branch", "--list", "lazy/forge-work"); strings.TrimSpace(out) != "" {
		t.Fatalf("the merged task's branch was kept: %q", out)
	}
}

func TestGitLabAcceptSquashMergesAReadyMergeRequestAndRejectClosesWithANote(t *testing.T) {
	f := newFakeGitLab(t)
	r := f.r
	r.git("config", "lazy.accept.viaForge", "true")
	a := workedTask(t, r, "Ready one", "a.txt one")
	res := r.run(nil, "accept", a.Slug)
	if res.Code != 0 || !strings.Contains(res.Stdout, "pull request #1 merged into main") {
		t.Fatalf("accept through GitLab: %s", res)
	}
	if mr := glLoad(f).MRs[0]; mr.State != "merged" || !mr.Squash || mr.SquashCommitSHA == "" || glCalls(f, "mr", "merge", "--squash") != 1 {
		t.Fatalf("the merge request: %+v", mr)
	}
	if s := f.pr(a.Slug); s.Status != "complete" {
		t.Fatalf("after: %+v", s)
	}

	b := workedTask(t, r, "Unwanted", "u.txt x")
	r.ok("submit", b.Slug)
	r.ok("reject", b.Slug, "--reason", "wrong approach")
	mr := glLoad(f).MRs[1]
	if mr.State != "closed" || len(mr.Notes) != 1 || !strings.Contains(mr.Notes[0]["body"].(string), "reject: wrong approach") {
		t.Fatalf("the merge request after reject: %+v", mr)
	}
}

func TestGitLabSyncDeliversJobLogsAndNotesOnceAndFollowsMergesAndCloses(t *testing.T) {
	f := newFakeGitLab(t)
	r := f.r
	a := workedTask(t, r, "Reviewed", "r.txt one")
	b := workedTask(t, r, "Merged", "m.txt two")
	r.ok("submit", a.Slug)
	r.ok("submit", b.Slug)
	glEdit(f, func(st *glState) {
		st.MRs[0].Pipeline = &glPipeline{ID: 90, Status: "failed"}
		st.MRs[0].Jobs = []map[string]any{{"id": 42, "name": "unit-tests", "stage": "test", "status": "failed", "web_url": "https://gitlab.com/acme/app/-/jobs/42", "failure_reason": "script_failure"}}
		st.Traces = map[string]string{"42": strings.Repeat("noise line\n", 1000) + "FAIL TestRename: r.txt still exists\n"}
		st.MRs[0].ChangesRequested = true
		st.MRs[0].Notes = []map[string]any{
			{"id": 501, "body": "added 1 commit", "system": true, "author": map[string]any{"username": "carol"}, "created_at": "2026-01-01T00:00:00Z"},
			{"id": 502, "body": "Please rename r.txt\x1b[31m", "type": "DiffNote", "system": false, "author": map[string]any{"username": "carol"}, "created_at": "2026-01-01T00:00:01Z",
				"position": map[string]any{"new_path": "r.txt", "new_line": 1}},
			{"id": 503, "body": "and add a test", "type": nil, "system": false, "author": map[string]any{"username": "dan"}, "created_at": "2026-01-01T00:00:02Z"},
		}
		st.MRs[1].ApprovalsLeft = 1
	})
	// No pipeline and an approval missing: glab refuses, lazy asks
	// GitLab for auto-merge itself.
	res := r.run(nil, "accept", b.Slug)
	if res.Code != 0 || !strings.Contains(res.Stdout, "approval required") || !glLoad(f).MRs[1].AutoMerge {
		t.Fatalf("accept of b: %s", res)
	}
	f.startDaemon()

	feedback := func() []turnJSON {
		var out []turnJSON
		for _, tr := range r.showFull(a.Slug).TurnList {
			if tr.Kind == "forge-feedback" {
				out = append(out, tr)
			}
		}
		return out
	}
	eventually(t, "the notes and the failed job delivered", func() bool { return len(feedback()) > 0 })
	fb := feedback()[0]
	if strings.Count(fb.Content, "noise line") > 400 || !strings.Contains(fb.Content, "earlier bytes cut by lazy") {
		t.Fatalf("the job log excerpt is not bounded:\n%s", fb.Content)
	}
	for _, want := range []string{"pull request #1 (https://gitlab.com/acme/app/-/merge_requests/1)", `CI check "test: unit-tests" failed: job failed (script failure)`,
		"https://gitlab.com/acme/app/-/jobs/42", "| FAIL TestRename: r.txt still exists", "@carol", "On r.txt line 1: Please rename r.txt",
		"https://gitlab.com/acme/app/-/merge_requests/1#note_502", "@dan", "and add a test"} {
		if !strings.Contains(fb.Content, want) {
			t.Fatalf("feedback lacks %q:\n%s", want, fb.Content)
		}
	}
	if fb.Actor != "system" || strings.Contains(fb.Content, "\x1b") || strings.Contains(fb.Content, "added 1 commit") {
		t.Fatalf("feedback turn: %+v", fb)
	}
	views := glCalls(f, "mr", "view")
	eventually(t, "more GitLab syncs", func() bool { return glCalls(f, "mr", "view") >= views+6 })
	if n := len(feedback()); n != 1 {
		t.Fatalf("the feedback was delivered %d times", n)
	}
	if s := f.pr(a.Slug); s.Status != "submitted" || s.PR.Checks != "failing" || s.PR.Review != "changes_requested" {
		t.Fatalf("a after the sync: %+v %+v", s, s.PR)
	}

	// GitLab merges b (auto-merge) and a is closed in the web UI.
	glEdit(f, func(st *glState) {
		st.MRs[1].State, st.MRs[1].MergeCommitSHA = "merged", strings.Repeat("d", 40)
		st.MRs[0].State = "closed"
	})
	eventually(t, "b complete", func() bool { return r.show(b.Slug).Status == "complete" })
	eventually(t, "a blocked", func() bool { return r.show(a.Slug).Status == "blocked" })
	if s := f.pr(a.Slug); !strings.Contains(s.Reason, "closed on the forge without merging") {
		t.Fatalf("a's reason: %q", s.Reason)
	}
	if s := r.show(b.Slug); s.Outcome != "accepted" || !strings.Contains(s.CommentList[len(s.CommentList)-1].Text, strings.Repeat("d", 40)) {
		t.Fatalf("b: %+v", s)
	}
}

func TestGitLabKilledSubmitAndAcceptRecoverWithOneMergeRequest(t *testing.T) {
	f := newFakeGitLab(t)
	r := f.r
	tk := workedTask(t, r, "Crashy", "c.txt one")
	glEdit(f, func(st *glState) { st.HangAfter = "mr create" })
	f.killWhileHung("submit", tk.Slug)
	if got := r.show(tk.Slug).Status; got != "submitted" {
		t.Fatalf("after a killed submit the task is %s", got)
	}
	out := r.ok("submit", tk.Slug)
	if !strings.Contains(out, "pull request #1") || len(glLoad(f).MRs) != 1 || glCalls(f, "api", "POST") != 1 {
		t.Fatalf("the retried submit: %s; %d merge requests", out, len(glLoad(f).MRs))
	}

	// Killed while glab asks GitLab to merge: a read returns the task to
	// submitted, and accept works again.
	glEdit(f, func(st *glState) { st.HangBefore = "mr merge" })
	f.killWhileHung("accept", tk.Slug)
	if got := r.refStatus(tk.ID); got != "merging" {
		t.Fatalf("a killed forge accept left %s, want merging", got)
	}
	r.ok("list")
	if got := r.show(tk.Slug).Status; got != "submitted" {
		t.Fatalf("after recovery the task is %s, want submitted", got)
	}
	if out := r.ok("accept", tk.Slug); !strings.Contains(out, "pull request #1 merged into main") || len(glLoad(f).MRs) != 1 {
		t.Fatalf("accept after recovery: %s", out)
	}
}
