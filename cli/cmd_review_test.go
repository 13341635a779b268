package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestDiffShowsTheBranchAndTheWorktree: lazy diff is the branch's work
// against the merge base with its target (patch, --stat, --name-only,
// --json), then what the worktree has not committed; --committed leaves
// that out, and a path that changed nothing says so.
func TestDiffShowsTheBranchAndTheWorktree(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	tk := l.worked("Fix the login", "auth/login.go", "package auth\n")
	out := l.ok("diff", tk.Slug)
	has(t, "lazy diff", out, "diff --git a/auth/login.go b/auth/login.go", "new file mode", "+package auth")
	hasNot(t, "lazy diff", out, "Uncommitted")
	if out := l.ok("diff", tk.Slug, "--stat"); !strings.Contains(out, "auth/login.go | 1 +") || strings.Contains(out, "+package") {
		t.Errorf("diff --stat:\n%s", out)
	}
	if out := l.ok("diff", tk.Slug, "--name-only"); strings.TrimSpace(out) != "auth/login.go" {
		t.Errorf("diff --name-only: %q", out)
	}
	var d struct {
		Slug        string   `json:"slug"`
		Branch      string   `json:"branch"`
		Into        string   `json:"into"`
		MergeBase   string   `json:"merge_base"`
		BranchSHA   string   `json:"branch_sha"`
		Files       []string `json:"files"`
		Patch       string   `json:"patch"`
		Truncated   bool     `json:"truncated"`
		Uncommitted []string `json:"uncommitted"`
	}
	l.json(&d, "diff", tk.Slug, "--json")
	if d.Branch != "lazy/fix-the-login" || d.Into != "main" || strings.Join(d.Files, " ") != "auth/login.go" ||
		d.MergeBase != testrepo.Git(t, l.dir, "rev-parse", "main") || d.BranchSHA != testrepo.Git(t, l.dir, "rev-parse", "lazy/fix-the-login") ||
		!strings.Contains(d.Patch, "+package auth") || d.Truncated || d.Uncommitted == nil || len(d.Uncommitted) != 0 {
		t.Errorf("diff --json: %+v", d)
	}

	// Work the agent left uncommitted in the worktree.
	wt := filepath.Join(testrepo.Git(t, l.dir, "config", "lazy.worktreeDir"), tk.Slug)
	if err := os.WriteFile(filepath.Join(wt, "wip.txt"), []byte("half done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, wt, "add", "-N", "wip.txt")
	out = l.ok("diff", tk.Slug)
	has(t, "lazy diff with uncommitted work", out, "+package auth", "# Uncommitted in the worktree", "+half done")
	if out := l.ok("diff", tk.Slug, "--committed"); strings.Contains(out, "half done") || !strings.Contains(out, "+package auth") {
		t.Errorf("diff --committed:\n%s", out)
	}
	l.json(&d, "diff", tk.Slug, "--json")
	if strings.Join(d.Uncommitted, " ") != "wip.txt" {
		t.Errorf("diff --json uncommitted: %q", d.Uncommitted)
	}
	if out := l.ok("diff", tk.Slug, "--committed", "--", "README.md"); out != "No committed changes on lazy/fix-the-login against main in README.md.\n" {
		t.Errorf("a path that changed nothing: %q", out)
	}
	l.fails(2, []string{"diff", tk.Slug, "--stat", "--json"}, "--stat")
}

// TestAcceptLandsTheWorkAndCleansUp: accept squash-merges the branch
// into main as one commit that names the task, records the task
// complete (accepted) with a comment that says how to recreate the
// branch, removes the worktree and the branch, and says each step on
// stderr; --dry-run beforehand changes nothing.
func TestAcceptLandsTheWorkAndCleansUp(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	tk := l.worked("Fix the login", "auth/login.go", "package auth\n")
	wt := filepath.Join(testrepo.Git(t, l.dir, "config", "lazy.worktreeDir"), tk.Slug)
	before := testrepo.Git(t, l.dir, "rev-parse", "main")

	dry := l.ok("accept", tk.Slug, "--dry-run")
	has(t, "accept --dry-run", dry, "auth/login.go")
	if testrepo.Git(t, l.dir, "rev-parse", "main") != before || l.show(tk.Slug).Status != "blocked" {
		t.Fatal("accept --dry-run changed something")
	}

	r := l.run("accept", tk.Slug)
	if r.code != 0 {
		t.Fatalf("accept: %+v", r)
	}
	if !strings.HasPrefix(r.out, "Accepted fix-the-login: squash-merged into main as ") {
		t.Errorf("accept says %q", r.out)
	}
	has(t, "accept's progress", r.err, "· accept fix-the-login: pre-flight checks", "step 2 of 4: squash-merge the task branch", "step 4 of 4: remove the task's worktree and branch")
	after := testrepo.Git(t, l.dir, "rev-parse", "main")
	if after == before || testrepo.Git(t, l.dir, "rev-parse", "main^") != before {
		t.Fatalf("main did not gain one commit: %s -> %s", before, after)
	}
	if b, err := os.ReadFile(filepath.Join(l.dir, "auth", "login.go")); err != nil || string(b) != "package auth\n" {
		t.Errorf("the checkout lacks the landed file: %q %v", b, err)
	}
	msg := testrepo.Git(t, l.dir, "log", "-1", "--format=%B", "main")
	has(t, "the landed commit's message", msg, "Fix the login", tk.ID)
	got := l.show(tk.Slug)
	if got.Status != "complete" || got.Outcome != "accepted" || len(got.CommentList) != 1 || !strings.Contains(got.CommentList[0].Text, "git branch lazy/fix-the-login ") {
		t.Errorf("the record after accept: %+v", got)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there: %v", err)
	}
	if _, err := testrepo.GitErr(l.dir, "rev-parse", "--verify", "refs/heads/lazy/fix-the-login"); err == nil {
		t.Error("the task branch is still there")
	}
	l.fails(1, []string{"accept", tk.Slug}, "accept fix-the-login")
	if out := l.ok("doctor"); !strings.HasPrefix(out, "No problems found.") {
		t.Errorf("doctor after an accept:\n%s", out)
	}
}

// TestAcceptRunsTheGate: with lazy.gate set, lazy gate runs it on the
// tree an accept would land and says how it went (a failure names its
// log and exits 1); accept refuses while it fails and lands nothing;
// --skip-gate needs a reason, and with one lands and records it.
func TestAcceptRunsTheGate(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	tk := l.worked("Fix the login", "auth/login.go", "package auth\n")
	if out := l.ok("gate", tk.Slug); !strings.HasPrefix(out, "No gate: neither git config lazy.gate nor .lazy/gate") {
		t.Errorf("gate without one: %q", out)
	}
	testrepo.Git(t, l.dir, "config", "lazy.gate", "test -f auth/login.go")
	out := l.ok("gate", tk.Slug)
	has(t, "a passing gate", out, "Gate passed (run ", "1 command", "on main", "lazy accept fix-the-login lands this tree")
	var g struct {
		Into   string `json:"into"`
		NoGate bool   `json:"no_gate"`
		Passed bool   `json:"passed"`
		Reused string `json:"reused"`
	}
	l.json(&g, "gate", tk.Slug, "--json")
	if g.Into != "main" || g.NoGate || !g.Passed || g.Reused == "" {
		t.Errorf("gate --json after a pass: %+v", g)
	}

	testrepo.Git(t, l.dir, "config", "lazy.gate", "echo the tests failed; false")
	before := testrepo.Git(t, l.dir, "rev-parse", "main")
	r := l.run("gate", tk.Slug)
	if r.code != 1 || !strings.Contains(r.out, "Gate failed (run ") || !strings.Contains(r.out, "echo the tests failed; false") || !strings.Contains(r.out, "the whole log is ") {
		t.Fatalf("a failing gate: %+v", r)
	}
	logPath := strings.TrimSpace(r.out[strings.LastIndex(r.out, "the whole log is ")+len("the whole log is "):])
	if b, err := os.ReadFile(logPath); err != nil || !strings.Contains(string(b), "the tests failed") {
		t.Errorf("the gate's log %s: %q %v", logPath, b, err)
	}
	r = l.run("accept", tk.Slug)
	if r.code == 0 || testrepo.Git(t, l.dir, "rev-parse", "main") != before || l.show(tk.Slug).Status != "blocked" {
		t.Fatalf("accept with a failing gate landed: %+v", r)
	}
	has(t, "accept with a failing gate", r.out+r.err, "gate")
	l.fails(2, []string{"accept", tk.Slug, "--skip-gate"}, "--skip-gate needs --reason")
	l.ok("accept", tk.Slug, "--skip-gate", "--reason", "the failure is the CI's, not this change's")
	if got := l.show(tk.Slug); got.Status != "complete" {
		t.Fatalf("accept --skip-gate: %+v", got)
	}
	has(t, "the commit of a skipped gate", testrepo.Git(t, l.dir, "log", "-1", "--format=%B", "main"), "the failure is the CI's, not this change's")
}

// TestAcceptKeepsYourUncommittedChanges: an accept into the branch you
// have checked out with changes of yours in it gives them back after the
// merge; lazy stash then keeps nothing.
func TestAcceptKeepsYourUncommittedChanges(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	tk := l.worked("Add notes", "notes.txt", "notes\n")
	if err := os.WriteFile(filepath.Join(l.dir, "README.md"), []byte("# test\nmy own edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l.ok("accept", tk.Slug)
	if b, _ := os.ReadFile(filepath.Join(l.dir, "README.md")); string(b) != "# test\nmy own edit\n" {
		t.Errorf("your change after the accept: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(l.dir, "notes.txt")); string(b) != "notes\n" {
		t.Errorf("the landed file: %q", b)
	}
	if out := l.ok("stash"); out != "lazy keeps none of your uncommitted changes: every accept gave them back.\n" {
		t.Errorf("lazy stash: %q", out)
	}
	var s struct {
		Owed []any `json:"owed"`
	}
	l.json(&s, "stash", "--json")
	if s.Owed == nil || len(s.Owed) != 0 {
		t.Errorf("stash --json: %+v", s)
	}
}

// TestRejectKeepsUnmergedWork: reject records the reason and the
// outcome, removes the clean worktree and keeps the branch with work in
// it, saying where and how to delete it; --delete-branch drops it after
// recording its tip.
func TestRejectKeepsUnmergedWork(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	kept := l.worked("Try one way", "a.txt", "a\n")
	out := l.ok("reject", kept.Slug, "-m", "wrong approach")
	has(t, "reject", out, "Rejected try-one-way: now abandoned", "removed the clean worktree", "kept the branch lazy/try-one-way at ", "git branch -D lazy/try-one-way")
	got := l.show(kept.Slug)
	if got.Status != "abandoned" || got.Outcome != "rejected" || got.Reason != "wrong approach" {
		t.Errorf("after reject: %+v", got)
	}
	tip := testrepo.Git(t, l.dir, "rev-parse", "lazy/try-one-way")
	if len(got.CommentList) != 1 || !strings.Contains(got.CommentList[0].Text, tip) {
		t.Errorf("the comment does not record the branch's tip %s: %+v", tip, got.CommentList)
	}

	dropped := l.worked("Try another", "b.txt", "b\n")
	tip = testrepo.Git(t, l.dir, "rev-parse", "lazy/try-another")
	l.ok("reject", dropped.Slug, "-m", "no", "--delete-branch")
	if _, err := testrepo.GitErr(l.dir, "rev-parse", "--verify", "refs/heads/lazy/try-another"); err == nil {
		t.Error("--delete-branch kept the branch")
	}
	if got := l.show(dropped.Slug); len(got.CommentList) == 0 || !strings.Contains(got.CommentList[0].Text, tip) {
		t.Errorf("the deleted branch's tip is not recorded first: %+v", got.CommentList)
	}
}

// TestLogsRendersTheAgentLog: lazy logs renders what the agent printed
// under a rule for each launch and lazy's notes between them; --raw is
// JSON Lines; --turn picks one turn's launches, and one that never ran is
// an error.
func TestLogsRendersTheAgentLog(t *testing.T) {
	l := newLazy(t)
	tk := l.worked("Fix the login", "auth/login.go", "package auth\n")
	l.fails(1, []string{"logs", tk.Slug}, "no agent output was kept on this machine")
	dir := filepath.Join(l.dir, ".git", "lazy", "logs", tk.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log := `{"lazy":"turn","turn":1,"kind":"start","agent":"exec","run":1,"at":"2026-01-02T03:04:05Z"}` + "\n" +
		"hello from the agent\n\x1b[31mred text\x1b[0m\n" +
		`{"lazy":"note","turn":1,"kind":"gate","text":"the merge gate failed","next":"lazy accept fix-the-login --skip-gate","at":"2026-01-02T03:05:00Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "agent.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	// The index says where each launch begins (what --turn reads).
	if err := os.WriteFile(filepath.Join(dir, "agent.log.idx"), []byte("1 start 0 2026-01-02T03:04:05Z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := l.ok("logs", tk.Slug)
	has(t, "lazy logs", out, "── turn 1 (start) · exec · 2026-01-02 03:04:05 UTC ──", "hello from the agent", "the merge gate failed", "lazy accept fix-the-login --skip-gate")
	hasNot(t, "lazy logs", out, "\x1b[31m")
	raw := l.ok("logs", tk.Slug, "--raw")
	for _, line := range lines(raw) {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil || v["lazy"] == nil {
			t.Errorf("logs --raw line %q is not one of lazy's JSON lines (%v)", line, err)
		}
	}
	has(t, "logs --raw", raw, `{"lazy":"out","text":"hello from the agent"}`)
	if out := l.ok("logs", tk.Slug, "--turn", "1"); !strings.Contains(out, "hello from the agent") {
		t.Errorf("logs --turn 1:\n%s", out)
	}
	l.fails(1, []string{"logs", tk.Slug, "--turn", "7"}, "7")
}

// TestHandoffPrintsTheRecord: handoff --print is the record a human or
// an agent taking over reads (goal, commits, files, gate), changes
// nothing, and --json puts it under "record".
func TestHandoffPrintsTheRecord(t *testing.T) {
	l := newLazy(t)
	tk := l.worked("Fix the login", "auth/login.go", "package auth\n")
	out := l.ok("handoff", tk.Slug, "--print")
	has(t, "handoff --print", out, "# Handoff: Fix the login", "on branch lazy/fix-the-login", "## Goal", "## Where the work stands",
		"agent: Fix the login", "Files the commits touched: auth/login.go", "## Next step")
	var rec struct {
		Record string `json:"record"`
	}
	l.json(&rec, "handoff", tk.Slug, "--print", "--json")
	if rec.Record != out && rec.Record+"\n" != out {
		t.Errorf("handoff --print --json's record differs from the text:\n%q\n%q", rec.Record, out)
	}
	if got := l.show(tk.Slug); got.Status != "blocked" || len(got.History) != 3 {
		t.Errorf("handoff --print changed the task: %+v", got)
	}
	l.fails(1, []string{"handoff", tk.Slug, "--to", "nobody"}, `agent "nobody" is not supported (available: claude, codex, exec)`)
}

// TestQueueWithNothingQueued: lazy queue says there is no queue and how
// one forms; --json is an empty list; removing a task that is not queued
// says so.
func TestQueueWithNothingQueued(t *testing.T) {
	l := newLazy(t)
	tk := l.create("Fix the login")
	if out := l.ok("queue"); out != "No merge queue on this machine: lazy accept TASK... forms one per target branch.\n" {
		t.Errorf("lazy queue: %q", out)
	}
	if out := l.ok("queue", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("queue --json: %q", out)
	}
	l.fails(1, []string{"queue", "--remove", tk.Slug}, tk.Slug)
}

// TestSubmitNeedsARemote: submitting a blocked task in a repository with
// no remote says what to add, and the task stays blocked.
func TestSubmitNeedsARemote(t *testing.T) {
	l := newLazy(t)
	tk := l.worked("Fix the login", "auth/login.go", "package auth\n")
	l.fails(1, []string{"submit", tk.Slug}, "remote")
	if got := l.show(tk.Slug); got.Status != "blocked" {
		t.Errorf("a failed submit left %s", got.Status)
	}
}
