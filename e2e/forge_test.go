package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/fakegh/ghstate"
)

// The fake's own state types: the tests edit the file it reads.
type ghState = ghstate.State
type ghPR = ghstate.PR

// fakeForge is a repository with an origin remote (a bare repository)
// on a fake GitHub served by internal/testfakes/fakegh.
type fakeForge struct {
	t      *testing.T
	r      *runner
	state  string
	remote string
}

func newFakeForge(t *testing.T) *fakeForge {
	t.Helper()
	f := newForgeRepo(t, "github", "FAKEGH_STATE")
	saveState(f, &ghState{Repo: "acme/app", RemoteDir: f.remote, PRs: []*ghPR{}})
	return f
}

// newForgeRepo makes the repository with its bare origin, set up for the
// forge kind (lazy.forge) as project acme/app, with the fake CLIs first
// on PATH and their state file in envVar.
func newForgeRepo(t *testing.T, kind, envVar string) *fakeForge {
	t.Helper()
	r := newRepo(t)
	dir := t.TempDir()
	f := &fakeForge{t: t, state: filepath.Join(dir, kind+".json"), remote: filepath.Join(dir, "origin.git")}
	r.git("init", "--quiet", "--bare", f.remote)
	r.git("remote", "add", "origin", f.remote)
	r.git("push", "--quiet", "origin", "main")
	r.git("config", "lazy.forge", kind)
	r.git("config", "lazy.forge.repo", "acme/app")
	r.git("config", "lazy.forge.syncInterval", "50ms")
	f.r = r.with("PATH="+fakeGHDir+string(os.PathListSeparator)+os.Getenv("PATH"), envVar+"="+f.state)
	return f
}

func (f *fakeForge) load() *ghState { return loadState[ghState](f) }

// edit changes the fake forge under its lock, as the forge itself would.
func (f *fakeForge) edit(fn func(st *ghState)) { editState(f, fn) }

// loadState reads the fake forge's state file as a T.
func loadState[T any](f *fakeForge) *T {
	f.t.Helper()
	b, err := os.ReadFile(f.state)
	if err != nil {
		f.t.Fatal(err)
	}
	var st T
	if err := json.Unmarshal(b, &st); err != nil {
		f.t.Fatal(err)
	}
	return &st
}

// editState changes the state file under the fake's lock, as the forge
// itself would.
func editState[T any](f *fakeForge, fn func(st *T)) {
	f.t.Helper()
	lock, err := os.OpenFile(f.state+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		f.t.Fatal(err)
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		f.t.Fatal(err)
	}
	st := loadState[T](f)
	fn(st)
	saveState(f, st)
}

func saveState[T any](f *fakeForge, st *T) {
	f.t.Helper()
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(f.state+".tmp", b, 0o600); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Rename(f.state+".tmp", f.state); err != nil {
		f.t.Fatal(err)
	}
}

// calls counts the fake gh's invocations of cmd ("pr view").
func (f *fakeForge) calls(cmd string) int {
	b, _ := os.ReadFile(f.state + ".log")
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		var argv []string
		if json.Unmarshal([]byte(line), &argv) == nil && len(argv) >= 2 && argv[0]+" "+argv[1] == cmd {
			n++
		}
	}
	return n
}

// remoteHead is the task branch's commit on origin, or "".
func (f *fakeForge) remoteHead(branch string) string {
	out, err := exec.Command("git", "--git-dir", f.remote, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// prShow is the pull-request part of show --json.
type prShow struct {
	Status  string `json:"status"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
	PR      *struct {
		Forge    string `json:"forge"`
		Number   int    `json:"number"`
		URL      string `json:"url"`
		State    string `json:"state"`
		Checks   string `json:"checks"`
		Review   string `json:"review"`
		Revising bool   `json:"revising"`
	} `json:"pr"`
}

func (f *fakeForge) pr(slug string) prShow {
	f.t.Helper()
	var s prShow
	if err := json.Unmarshal([]byte(f.r.ok("show", "--json", slug)), &s); err != nil {
		f.t.Fatal(err)
	}
	return s
}

// startDaemon runs the repository's daemon with a short tick until the
// test ends.
func (f *fakeForge) startDaemon() { startDaemon(f.t, f.r) }

// startDaemon runs r's daemon with a short tick and no idle exit, stops
// it (SIGTERM, then SIGKILL after 10s) when the test ends, and returns
// the path of its log.
func startDaemon(t *testing.T, r *runner) string {
	t.Helper()
	cmd := exec.Command(lazyBin, "daemon", "--tick", "100ms", "--idle", "0")
	cmd.Dir = r.dir
	cmd.Env = r.with("LAZY_NO_DAEMON=").environ()
	path := filepath.Join(t.TempDir(), "daemon.log")
	logf, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logf.Close()
	})
	return path
}

// eventually polls cond until it holds or 30s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSubmitOpensThenUpdatesOnePullRequestAndAcceptMergesThroughTheForge(t *testing.T) {
	f := newFakeForge(t)
	r := f.r

	// Logged out: one sentence, and nothing was pushed.
	f.edit(func(st *ghState) { st.LoggedOut = true })
	tk := workedTask(t, r, "Forge work", "a.txt alpha")
	if msg := r.fails(1, nil, "submit", tk.Slug); !strings.Contains(msg, "gh is not logged in to github.com; run gh auth login") {
		t.Fatalf("logged-out submit said: %s", msg)
	}
	if f.remoteHead("lazy/forge-work") != "" || r.show(tk.Slug).Status != "blocked" {
		t.Fatal("a submit that could not reach the forge pushed or changed the task")
	}
	f.edit(func(st *ghState) { st.LoggedOut = false })

	out := r.ok("submit", tk.Slug, "--draft")
	if !strings.Contains(out, "opened pull request #1 https://github.com/acme/app/pull/1") {
		t.Fatalf("submit: %s", out)
	}
	tip := strings.TrimSpace(r.git("rev-parse", "lazy/forge-work"))
	if f.remoteHead("lazy/forge-work") != tip {
		t.Fatal("the task branch was not pushed")
	}
	s := f.pr(tk.Slug)
	if s.Status != "submitted" || s.PR == nil || s.PR.Number != 1 || s.PR.URL != "https://github.com/acme/app/pull/1" || s.PR.State != "open" {
		t.Fatalf("after submit: %+v %+v", s, s.PR)
	}
	st := f.load()
	if len(st.PRs) != 1 || st.PRs[0].Title != "Forge work" || st.PRs[0].Base != "main" || !st.PRs[0].IsDraft ||
		!strings.Contains(st.PRs[0].Body, "Goal of Forge work.") || !strings.Contains(st.PRs[0].Body, "Lazy-Task: "+tk.ID) || !strings.Contains(st.PRs[0].Body, "1. **human** (start)") {
		t.Fatalf("pull request: %+v", st.PRs[0])
	}
	if list := r.ok("list"); !strings.Contains(list, "submitted [PR #1 open]") {
		t.Fatalf("list does not show the pull request:\n%s", list)
	}
	if status := r.ok("status"); !regexp.MustCompile(`forge-work +PR #1 open +https://github.com/acme/app/pull/1`).MatchString(status) {
		t.Fatalf("status does not show the pull request:\n%s", status)
	}
	if show := r.ok("show", tk.Slug); !strings.Contains(show, "PR:       PR #1 open https://github.com/acme/app/pull/1") {
		t.Fatalf("show does not show the pull request:\n%s", show)
	}

	// Unblock keeps the pull request and records the revision; a
	// re-submit updates the same pull request.
	rr := r.with(script(t, "write b.txt beta", "commit agent: b", "print revised"))
	rr.ok("unblock", tk.Slug, "-m", "also add b")
	rr.waitStatus(tk.Slug, "blocked")
	if s := f.pr(tk.Slug); !s.PR.Revising || s.PR.Number != 1 {
		t.Fatalf("after unblock: %+v", s.PR)
	}
	out = r.ok("submit", tk.Slug)
	if !strings.Contains(out, "updated pull request #1") {
		t.Fatalf("re-submit: %s", out)
	}
	tip = strings.TrimSpace(r.git("rev-parse", "lazy/forge-work"))
	st = f.load()
	if len(st.PRs) != 1 || st.PRs[0].HeadOid != tip || !strings.Contains(st.PRs[0].Body, "also add b") || f.calls("pr create") != 1 {
		t.Fatalf("re-submit did not update the one pull request: %d PRs, head %s want %s", len(st.PRs), st.PRs[0].HeadOid, tip)
	}

	// Failing checks: nothing merges, the task is submitted again.
	f.edit(func(st *ghState) {
		st.PRs[0].StatusCheckRollup = []map[string]any{{"__typename": "CheckRun", "name": "build", "status": "COMPLETED", "conclusion": "FAILURE", "detailsUrl": "https://ci.example/1"}}
	})
	if msg := r.fails(1, nil, "accept", tk.Slug); !strings.Contains(msg, "checks failed on pull request #1: build") {
		t.Fatalf("accept with failing checks: %s", msg)
	}
	if s := f.pr(tk.Slug); s.Status != "submitted" || s.PR.Checks != "failing" {
		t.Fatalf("after a failed accept: %+v %+v", s, s.PR)
	}

	// Checks pass but approval is required: the task stays merging.
	f.edit(func(st *ghState) {
		st.PRs[0].StatusCheckRollup[0]["conclusion"] = "SUCCESS"
		st.PRs[0].ReviewDecision = "REVIEW_REQUIRED"
		st.Disallowed = []string{"squash"}
	})
	res := r.run(nil, "accept", tk.Slug)
	if res.Code != 0 || !strings.Contains(res.Stdout, "not merged yet (approval required)") || !strings.Contains(res.Stderr, "plan: record the accept (merging); request the forge merge; check remote state; record the task complete") {
		t.Fatalf("pending accept: %s", res)
	}
	if s := f.pr(tk.Slug); s.Status != "merging" {
		t.Fatalf("a pending forge merge is %s, want merging", s.Status)
	}
	if st := f.load(); st.PRs[0].AutoMerge != "merge" {
		t.Fatalf("auto-merge was requested as %q, want merge (squash is not allowed)", st.PRs[0].AutoMerge)
	}
	// Reads and doctor leave a forge-pending merge alone.
	r.ok("list")
	if got := r.show(tk.Slug).Status; got != "merging" {
		t.Fatalf("a read moved the forge-pending merge to %s", got)
	}

	// The forge merges; a later accept re-enters and finishes.
	f.edit(func(st *ghState) { st.PRs[0].State, st.PRs[0].MergeCommit = "MERGED", strings.Repeat("c", 40) })
	res = r.run(nil, "accept", tk.Slug)
	if res.Code != 0 || !strings.Contains(res.Stdout, "pull request #1 merged into main as cccccccccccc") || !strings.Contains(res.Stderr, "plan: check remote state; record the task complete; remove the task's worktree and branch") {
		t.Fatalf("re-entry accept: %s", res)
	}
	s = f.pr(tk.Slug)
	if s.Status != "complete" || s.Outcome != "accepted" {
		t.Fatalf("after the forge merge: %+v", s)
	}
	if out := r.git("branch", "--list", "lazy/forge-work"); strings.TrimSpace(out) != "" {
		t.Fatalf("the merged task's branch was kept: %q", out)
	}
}

func TestRejectClosesThePullRequestWithTheReason(t *testing.T) {
	f := newFakeForge(t)
	tk := workedTask(t, f.r, "Unwanted", "u.txt x")
	f.r.ok("submit", tk.Slug)
	f.r.ok("reject", tk.Slug, "--reason", "wrong approach")
	st := f.load()
	if st.PRs[0].State != "CLOSED" || len(st.PRs[0].Comments) != 1 || !strings.Contains(st.PRs[0].Comments[0]["body"].(string), "reject: wrong approach") {
		t.Fatalf("the pull request after reject: %+v", st.PRs[0])
	}
}

func TestForgeSyncDeliversFeedbackOnceAndFollowsMergesAndCloses(t *testing.T) {
	f := newFakeForge(t)
	r := f.r
	a := workedTask(t, r, "Reviewed", "r.txt one")
	b := workedTask(t, r, "Merged", "m.txt two")
	r.ok("submit", a.Slug)
	r.ok("submit", b.Slug)
	f.edit(func(st *ghState) {
		st.PRs[0].StatusCheckRollup = []map[string]any{{"__typename": "CheckRun", "name": "unit-tests", "status": "COMPLETED", "conclusion": "FAILURE", "detailsUrl": "https://github.com/acme/app/actions/runs/7/job/42", "title": "3 tests failed\x1b[31m"}}
		st.Logs = map[string]string{"42": strings.Repeat("noise line\n", 1000) + "FAIL TestRename: r.txt still exists\n"}
		st.PRs[0].Reviews = []map[string]any{{"id": "PRR_9", "author": map[string]any{"login": "carol"}, "body": "Please rename r.txt", "state": "CHANGES_REQUESTED", "submittedAt": "2026-01-01T00:00:00Z"}}
		st.PRs[0].ReviewDecision = "CHANGES_REQUESTED"
		st.PRs[1].ReviewDecision = "REVIEW_REQUIRED"
	})
	res := r.run(nil, "accept", b.Slug)
	if res.Code != 0 || !strings.Contains(res.Stdout, "approval required") {
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
	eventually(t, "the review and the failing check delivered", func() bool { return len(feedback()) > 0 })
	fb := feedback()[0]
	if strings.Count(fb.Content, "noise line") > 400 || !strings.Contains(fb.Content, "earlier bytes cut by lazy") {
		t.Fatalf("the CI log excerpt is not bounded:\n%s", fb.Content)
	}
	for _, want := range []string{"pull request #1 (https://github.com/acme/app/pull/1)", `CI check "unit-tests" failed: 3 tests failed`, "https://github.com/acme/app/actions/runs/7/job/42", "| FAIL TestRename: r.txt still exists", "Review (changes requested) by @carol", "> Please rename r.txt"} {
		if !strings.Contains(fb.Content, want) {
			t.Fatalf("feedback lacks %q:\n%s", want, fb.Content)
		}
	}
	if fb.Actor != "system" || fb.FeedbackDelivery != "pending" || strings.Contains(fb.Content, "\x1b") {
		t.Fatalf("feedback turn: %+v", fb)
	}
	// Several more syncs deliver nothing twice.
	views := f.calls("pr view")
	eventually(t, "more forge syncs", func() bool { return f.calls("pr view") >= views+6 })
	if n := len(feedback()); n != 1 {
		t.Fatalf("the feedback was delivered %d times", n)
	}
	if s := f.pr(a.Slug); s.Status != "submitted" || s.PR.Checks != "failing" || s.PR.Review != "changes_requested" {
		t.Fatalf("a after the sync: %+v %+v", s, s.PR)
	}
	// The web view links the pull request with its state.
	var w struct{ URL string }
	eventually(t, "the web view", func() bool {
		res := f.r.with("LAZY_NO_DAEMON=").run(nil, "web", "--json")
		return res.Code == 0 && json.Unmarshal([]byte(res.Stdout), &w) == nil
	})
	base, token, _ := strings.Cut(w.URL, "/?token=")
	for _, page := range []string{base + "/?token=" + token, base + "/task/" + a.ID + "?token=" + token} {
		resp, err := http.Get(page)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if !strings.Contains(string(body), `<a class="pr" href="https://github.com/acme/app/pull/1">PR #1</a> open, checks failing, changes_requested`) {
			t.Fatalf("%s does not show the pull request:\n%s", page, body)
		}
	}

	// The forge merges b (auto-merge) and closes a.
	f.edit(func(st *ghState) {
		st.PRs[1].State, st.PRs[1].MergeCommit = "MERGED", strings.Repeat("d", 40)
		st.PRs[0].State = "CLOSED"
	})
	eventually(t, "b complete", func() bool { return r.show(b.Slug).Status == "complete" })
	eventually(t, "a blocked", func() bool { return r.show(a.Slug).Status == "blocked" })
	if s := f.pr(a.Slug); !strings.Contains(s.Reason, "closed on the forge without merging") {
		t.Fatalf("a's reason: %q", s.Reason)
	}
	if s := r.show(b.Slug); s.Outcome != "accepted" || !strings.Contains(s.CommentList[len(s.CommentList)-1].Text, strings.Repeat("d", 40)) {
		t.Fatalf("b: %+v", s)
	}

	// Feedback recorded without autoFix reaches the agent with the next
	// unblock, after the human's words, and is then consumed.
	argv := filepath.Join(t.TempDir(), "argv")
	rr := r.with(script(t, "argv "+argv, "print ok"))
	rr.ok("unblock", a.Slug, "-m", "address the review")
	rr.waitStatus(a.Slug, "blocked")
	prompt, err := os.ReadFile(argv)
	if err != nil {
		t.Fatal(err)
	}
	if p := string(prompt); !strings.Contains(p, "address the review") || !strings.Contains(p, "Please rename r.txt") || strings.Index(p, "address the review") > strings.Index(p, "Please rename r.txt") {
		t.Fatalf("the unblock prompt lacks the pending forge feedback:\n%s", p)
	}
	if fb := feedback(); len(fb) != 1 || fb[0].FeedbackDelivery != "consumed" {
		t.Fatalf("forge feedback after the turn: %+v", fb)
	}
}

func TestForgeSyncAutoFixUnblocksTheAgent(t *testing.T) {
	f := newFakeForge(t)
	r := f.r
	r.git("config", "lazy.forge.autoFix", "true")
	a := workedTask(t, r, "Autofixed", "x.txt one")
	r.ok("submit", a.Slug)
	r = r.with(script(t, "write x.txt fixed", "commit agent: fix", "print fixed it"))
	f.r = r
	f.edit(func(st *ghState) {
		st.PRs[0].Comments = []map[string]any{{"id": "IC_7", "author": map[string]any{"login": "dan"}, "body": "x.txt should say fixed", "createdAt": "2026-01-01T00:00:00Z", "url": "https://github.com/acme/app/pull/1#issuecomment-7"}}
	})
	f.startDaemon()
	eventually(t, "the agent's fix turn", func() bool {
		for _, tr := range r.showFull(a.Slug).TurnList {
			if tr.Role == "agent" && strings.Contains(tr.Content, "fixed it") {
				return true
			}
		}
		return false
	})
	r.waitStatus(a.Slug, "blocked")
	if s := f.pr(a.Slug); !s.PR.Revising {
		t.Fatalf("after the fix: %+v", s.PR)
	}
	out := r.ok("submit", a.Slug)
	if !strings.Contains(out, "updated pull request #1") || len(f.load().PRs) != 1 {
		t.Fatalf("re-submit after the fix: %s", out)
	}
}

// killWhileHung runs lazy args until the fake gh (or glab) hangs in the
// named command, then kills lazy and the fake with SIGKILL.
func (f *fakeForge) killWhileHung(args ...string) {
	f.t.Helper()
	_ = os.Remove(f.state + ".hang")
	cmd := exec.Command(lazyBin, args...)
	cmd.Dir = f.r.dir
	cmd.Env = f.r.environ()
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	var pid int
	eventually(f.t, "the fake forge CLI to hang", func() bool {
		b, err := os.ReadFile(f.state + ".hang")
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	_ = syscall.Kill(pid, syscall.SIGKILL)
	editState(f, func(st *map[string]any) { delete(*st, "hang_before"); delete(*st, "hang_after") })
}

func TestKilledSubmitAndForgeAcceptRecoverWithoutASecondPullRequest(t *testing.T) {
	f := newFakeForge(t)
	r := f.r
	tk := workedTask(t, r, "Crashy", "c.txt one")

	// Killed after the forge opened the pull request, before lazy
	// recorded it: the task rests in submitted and the next submit finds
	// the pull request by its branch.
	f.edit(func(st *ghState) { st.HangAfter = "pr create" })
	f.killWhileHung("submit", tk.Slug)
	if got := r.show(tk.Slug).Status; got != "submitted" {
		t.Fatalf("after a killed submit the task is %s", got)
	}
	out := r.ok("submit", tk.Slug)
	if !strings.Contains(out, "pull request #1") || len(f.load().PRs) != 1 || f.calls("pr create") != 1 {
		t.Fatalf("the retried submit: %s; %d pull requests", out, len(f.load().PRs))
	}

	// Killed while asking the forge to merge: a read returns it to
	// submitted, and accept works again.
	f.edit(func(st *ghState) { st.HangBefore = "pr merge" })
	f.killWhileHung("accept", tk.Slug)
	if got := r.refStatus(tk.ID); got != "merging" {
		t.Fatalf("a killed forge accept left %s, want merging", got)
	}
	r.ok("list")
	if got := r.show(tk.Slug).Status; got != "submitted" {
		t.Fatalf("after recovery the task is %s, want submitted", got)
	}
	out = r.ok("accept", tk.Slug)
	if !strings.Contains(out, "pull request #1 merged into main") || len(f.load().PRs) != 1 {
		t.Fatalf("accept after recovery: %s", out)
	}
}

func TestBuilderSubmitsOverMCP(t *testing.T) {
	f := newFakeForge(t)
	tk := workedTask(t, f.r, "Mcp submit", "s.txt one")
	s, _ := mcpClient(t, f.r, nil, "mcp")
	if !toolNames(t, s)["lazy_submit"] {
		t.Fatal("the builder server lacks lazy_submit")
	}
	var out struct {
		Task     struct{ Status string } `json:"task"`
		PRNumber int                     `json:"pr_number"`
		PRURL    string                  `json:"pr_url"`
	}
	decodeInto(t, call(t, s, "lazy_submit", map[string]any{"task": tk.Slug}, false), &out)
	if out.Task.Status != "submitted" || out.PRNumber != 1 || out.PRURL != "https://github.com/acme/app/pull/1" {
		t.Fatalf("lazy_submit: %+v", out)
	}
	if msg := call(t, s, "lazy_submit", map[string]any{"task": "no-such-task"}, true); msg == "" {
		t.Fatal("lazy_submit of a missing task failed silently")
	}
	// The builder's submit is attributed to the builder.
	hist := f.r.show(tk.Slug).History
	if last := hist[len(hist)-1]; last.Op != "submit" || last.Actor != "builder" {
		t.Fatalf("last operation %+v", last)
	}
}

func TestSubmitOfASubtaskStacksOnItsParentsBranch(t *testing.T) {
	f := newFakeForge(t)
	r := f.r
	parent := workedTask(t, r, "Parent work", "p.txt one")
	rr := r.with(script(t, "write c.txt two", "commit agent: child", "print child done"))
	child := rr.create("Child work", "--parent", parent.Slug)
	rr.ok("start", child.Slug, "--command", fakeAgentBin)
	rr.waitStatus(child.Slug, "blocked")

	if msg := r.fails(1, nil, "submit", parent.Slug); !strings.Contains(msg, "subtasks child-work are not finished") {
		t.Fatalf("submit of a parent with an open subtask: %s", msg)
	}
	if msg := r.fails(1, nil, "submit", child.Slug); !strings.Contains(msg, "submit the parent task first") {
		t.Fatalf("submit of a subtask before its parent's branch is on the forge: %s", msg)
	}
	r.git("push", "--quiet", "origin", "lazy/parent-work")
	r.ok("submit", child.Slug)
	if pr := f.load().PRs[0]; pr.Head != "lazy/child-work" || pr.Base != "lazy/parent-work" {
		t.Fatalf("the subtask's pull request: %+v", pr)
	}
}

func TestSubmitEscapesAStrandedMergeAndUntrustedForgeRecordsAreRefused(t *testing.T) {
	f := newFakeForge(t)
	r := f.r
	tk := workedTask(t, r, "Stranded", "s.txt one")
	r.strandAccept(tk.ID, map[string]any{"accept_in_flight_from": "blocked", "into": "main", "into_sha": strings.TrimSpace(r.git("rev-parse", "main"))})
	out := r.ok("submit", tk.Slug)
	if !strings.Contains(out, "opened pull request #1") || r.refStatus(tk.ID) != "submitted" {
		t.Fatalf("submit of a stranded merge: %s (status %s)", out, r.refStatus(tk.ID))
	}
	hist := r.show(tk.Slug).History
	var ops []string
	for _, h := range hist {
		ops = append(ops, h.Op+":"+h.From+"->"+h.To)
	}
	if !strings.Contains(strings.Join(ops, " "), "accept-abort:merging->blocked submit:blocked->submitted") {
		t.Fatalf("history %v", ops)
	}

	// A forge record from an untrusted remote whose link is not http(s)
	// makes the record unreadable rather than printable.
	r.editTaskJSON(tk.ID, func(m map[string]any) {
		m["forge"].(map[string]any)["url"] = "javascript:alert(1)"
	})
	if msg := r.fails(1, nil, "show", tk.Slug); !strings.Contains(msg, "is not an http(s) link") {
		t.Fatalf("show of a forged record: %s", msg)
	}
}

func TestAcceptOfABlockedTaskGoesThroughTheForgeWhenConfigured(t *testing.T) {
	f := newFakeForge(t)
	r := f.r
	r.git("config", "lazy.accept.viaForge", "true")
	tk := workedTask(t, r, "Via forge", "v.txt one")
	before := strings.TrimSpace(r.git("rev-parse", "main"))
	res := r.run(nil, "accept", tk.Slug)
	if res.Code != 0 || !strings.Contains(res.Stdout, "pull request #1 merged into main") || !strings.Contains(res.Stderr, "submitting first") {
		t.Fatalf("accept via the forge: %s", res)
	}
	if st := f.load(); len(st.PRs) != 1 || st.PRs[0].State != "MERGED" {
		t.Fatalf("the forge: %+v", st.PRs)
	}
	if after := strings.TrimSpace(r.git("rev-parse", "main")); after != before {
		t.Fatal("a forge accept merged locally too")
	}
	if s := f.pr(tk.Slug); s.Status != "complete" || s.Outcome != "accepted" {
		t.Fatalf("after: %+v", s)
	}
}

func TestWithoutAutoMergeAReadyPullRequestIsMergedByTheNextAcceptOrTheSync(t *testing.T) {
	f := newFakeForge(t)
	r := f.r
	a := workedTask(t, r, "Reentered", "a.txt one")
	b := workedTask(t, r, "Synced", "b.txt two")
	r.ok("submit", a.Slug)
	r.ok("submit", b.Slug)
	pending := []map[string]any{{"__typename": "CheckRun", "name": "ci", "status": "IN_PROGRESS", "conclusion": ""}}
	f.edit(func(st *ghState) {
		st.NoAutoMerge = true
		st.PRs[0].StatusCheckRollup = pending
		st.PRs[1].StatusCheckRollup = pending
	})
	for _, tk := range []task{a, b} {
		res := r.run(nil, "accept", tk.Slug)
		if res.Code != 0 || !strings.Contains(res.Stdout, "not merged yet (1 check pending)") {
			t.Fatalf("accept with a check running: %s", res)
		}
	}
	r.ok("list") // the requested merges are not stranded
	if r.show(a.Slug).Status != "merging" || r.show(b.Slug).Status != "merging" {
		t.Fatal("a forge merge waiting on checks did not stay merging")
	}
	f.edit(func(st *ghState) {
		for _, p := range st.PRs {
			p.StatusCheckRollup[0]["status"], p.StatusCheckRollup[0]["conclusion"] = "COMPLETED", "SUCCESS"
		}
	})
	if out := r.ok("accept", a.Slug); !strings.Contains(out, "pull request #1 merged into main") {
		t.Fatalf("re-entry accept of a ready pull request: %s", out)
	}
	f.startDaemon()
	eventually(t, "the sync to merge the ready pull request", func() bool { return r.show(b.Slug).Status == "complete" })
	if st := f.load(); st.PRs[1].State != "MERGED" {
		t.Fatalf("the forge: %+v", st.PRs[1])
	}
}
