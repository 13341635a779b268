package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lazyorch/lazy/landing"
)

// workedTask creates a task whose first turn commits the files given as
// "path content" pairs, and waits until it is parked.
func workedTask(t *testing.T, r *runner, title string, files ...string) task {
	t.Helper()
	var lines []string
	for _, f := range files {
		lines = append(lines, "write "+f)
	}
	lines = append(lines, "commit agent: "+title, "print did "+title)
	rr := r.with(script(t, lines...))
	tk := rr.create(title, "-m", "Goal of "+title+".")
	rr.ok("start", tk.Slug, "--command", fakeAgentBin)
	rr.waitStatus(tk.Slug, "blocked")
	return tk
}

func TestAcceptSquashMergesAndCleansUp(t *testing.T) {
	r := newRepo(t)
	r = r.with(script(t, "write a.txt alpha", "commit agent: a", "write b.txt beta", "commit agent: b", "print two commits"))
	tk := r.create("Two commits", "-m", "Add a and b.")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	s := r.waitStatus(tk.Slug, "blocked")
	before := strings.TrimSpace(r.git("rev-parse", "main"))

	res := r.run(nil, "accept", tk.Slug)
	if res.Code != 0 || !strings.Contains(res.Stdout, "squash-merged into main") {
		t.Fatalf("accept: %s", res)
	}
	// Plain narration off a terminal, from the phase table.
	for _, want := range []string{"pre-flight checks", "plan: record the accept (merging); squash-merge", "step 1 of 4: record the accept", "step 4 of 4: remove the task's worktree and branch"} {
		if !strings.Contains(res.Stderr, want) {
			t.Fatalf("narration lacks %q:\n%s", want, res.Stderr)
		}
	}
	if parent := strings.TrimSpace(r.git("rev-parse", "main^")); parent != before {
		t.Fatalf("main^ is %s, want the old main %s: not one squash commit", parent, before)
	}
	if n := strings.TrimSpace(r.git("rev-list", "--count", before+"..main")); n != "1" {
		t.Fatalf("%s commits landed, want 1", n)
	}
	msg := r.git("log", "-1", "--format=%B", "main")
	if !strings.HasPrefix(msg, "Two commits\n\nAdd a and b.\n\nLazy-Task: "+tk.ID+"\nLazy-Branch: lazy/two-commits") {
		t.Fatalf("squash message %q", msg)
	}
	for f, want := range map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n"} {
		if got := r.git("show", "main:"+f); got != strings.TrimSpace(want) {
			t.Fatalf("main:%s = %q", f, got)
		}
	}
	got := r.showFull(tk.Slug)
	if got.Status != "complete" || got.Outcome != "accepted" {
		t.Fatalf("after accept: %s %q", got.Status, got.Outcome)
	}
	n := len(got.History)
	if h1, h2 := got.History[n-2], got.History[n-1]; h1.From != "blocked" || h1.To != "merging" || h2.From != "merging" || h2.To != "complete" {
		t.Fatalf("history %+v %+v", h1, h2)
	}
	if _, err := os.Stat(s.Session.Worktree); !os.IsNotExist(err) {
		t.Fatalf("worktree kept: %v", err)
	}
	if _, err := gitErr(r, "rev-parse", "--verify", "lazy/two-commits"); err == nil {
		t.Fatal("branch kept after the recorded merge")
	}
	if msg := r.fails(1, nil, "accept", tk.Slug); !strings.Contains(msg, "already accepted") {
		t.Fatalf("second accept: %s", msg)
	}
}

func TestAcceptRefusals(t *testing.T) {
	r := newRepo(t)
	dirty := workedTask(t, r, "dirty worktree", "d.txt d")
	wt := r.showFull(dirty.Slug).Session.Worktree
	if err := os.WriteFile(filepath.Join(wt, "uncommitted.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg := r.fails(1, nil, "accept", dirty.Slug); !strings.Contains(msg, "uncommitted changes") {
		t.Fatalf("dirty task worktree: %s", msg)
	}
	if r.show(dirty.Slug).Status != "blocked" {
		t.Fatal("a refused accept changed the status")
	}

	empty := r.with(script(t, "print nothing to do"))
	e := empty.create("no changes")
	empty.ok("start", e.Slug, "--command", fakeAgentBin)
	empty.waitStatus(e.Slug, "blocked")
	if msg := r.fails(1, nil, "accept", e.Slug); !strings.Contains(msg, "nothing to merge") {
		t.Fatalf("empty branch: %s", msg)
	}

	fenced := r.with(script(t, "write outside.txt o", "commit agent: o", "print done"))
	f := fenced.create("fenced", "--allow", "src/**")
	fenced.ok("start", f.Slug, "--command", fakeAgentBin)
	fenced.waitStatus(f.Slug, "conflict")
	if msg := r.fails(1, nil, "accept", f.Slug); !strings.Contains(msg, "violation") {
		t.Fatalf("pending violations: %s", msg)
	}
	if msg := r.fails(1, nil, "accept", "backlog-one-that-does-not-exist"); !strings.Contains(msg, "no task") {
		t.Fatalf("unknown task: %s", msg)
	}
	b := r.create("never started")
	if msg := r.fails(1, nil, "accept", b.Slug); !strings.Contains(msg, "backlog") {
		t.Fatalf("backlog task: %s", msg)
	}
}

func TestAcceptStashesAndRestoresADirtyDestination(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "feature", "feature.txt new feature")
	if err := os.WriteFile(filepath.Join(r.dir, "README.md"), []byte("# test\nmy local edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "notes.txt"), []byte("untracked notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := r.run(nil, "accept", tk.Slug)
	if res.Code != 0 || !strings.Contains(res.Stderr, "stash uncommitted changes") || !strings.Contains(res.Stderr, "restore the stashed changes") {
		t.Fatalf("accept into a dirty checkout: %s", res)
	}
	for f, want := range map[string]string{"README.md": "# test\nmy local edit\n", "notes.txt": "untracked notes\n", "feature.txt": "new feature\n"} {
		if b, err := os.ReadFile(filepath.Join(r.dir, f)); err != nil || string(b) != want {
			t.Fatalf("%s after accept: %q %v", f, b, err)
		}
	}
	if st := r.git("stash", "list"); st != "" {
		t.Fatalf("stash left behind: %q", st)
	}
	if !strings.Contains(r.git("show", "--stat", "--format=", "main"), "feature.txt") || strings.Contains(r.git("show", "--stat", "--format=", "main"), "README.md") {
		t.Fatal("the local edit leaked into the squash commit, or the feature is missing")
	}
}

// A stash that conflicts with the merge is not applied (no conflict
// markers in the user's files), the accept still lands, and the command
// fails saying where the changes are and what to run; doctor lists the
// stash until it is restored.
func TestAcceptReportsAStashThatCannotBeRestored(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "rewrite readme", "README.md the agent's readme")
	if err := os.WriteFile(filepath.Join(r.dir, "README.md"), []byte("my conflicting edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := r.run(nil, "accept", tk.Slug)
	if res.Code == 0 {
		t.Fatalf("accept with conflicting local changes exited 0: %s", res)
	}
	stash := strings.TrimSpace(r.git("rev-parse", "refs/stash"))
	if !strings.Contains(res.Stderr, "stash apply "+stash) || !strings.Contains(res.Stderr, "were not put back") {
		t.Fatalf("the error does not name stash %s and how to recover: %s", stash, res.Stderr)
	}
	if st := strings.TrimSpace(r.git("status", "--porcelain")); st != "" {
		t.Fatalf("the conflicting stash was applied: %q", st)
	}
	if b, _ := os.ReadFile(filepath.Join(r.dir, "README.md")); strings.Contains(string(b), "<<<<<<<") {
		t.Fatalf("conflict markers in the user's file: %q", b)
	}
	if got := r.git("show", "main:README.md"); got != "the agent's readme" {
		t.Fatalf("the merge was not kept: %q", got)
	}
	if got := r.git("show", stash+":README.md"); got != "my conflicting edit" {
		t.Fatalf("the stash does not hold the edit: %q", got)
	}
	if s := r.showFull(tk.Slug); s.Status != "complete" {
		t.Fatalf("after accept: %s", s.Status)
	}
	doc := r.run(nil, "doctor")
	if doc.Code == 0 || !strings.Contains(doc.Stdout, "owed-stash") || !strings.Contains(doc.Stdout, "stash apply "+stash) {
		t.Fatalf("doctor does not report the owed stash: %s", doc)
	}
}

func TestTwoRacingAcceptsMergeOnce(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "raced", "raced.txt once")
	before := strings.TrimSpace(r.git("rev-parse", "main"))
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = r.run(nil, "accept", tk.Slug)
		}(i)
	}
	wg.Wait()
	won, lost := 0, 0
	for _, res := range results {
		switch {
		case res.Code == 0:
			won++
		case res.Code == 1 && strings.Contains(res.Stderr, "already accepted"):
			lost++
		default:
			t.Fatalf("unexpected: %s", res)
		}
	}
	if won != 1 || lost != 1 {
		t.Fatalf("won %d, lost %d", won, lost)
	}
	if n := strings.TrimSpace(r.git("rev-list", "--count", before+"..main")); n != "1" {
		t.Fatalf("%s commits landed", n)
	}
}

// hook installs a git hook in the repository (shared by its worktrees).
func hook(t *testing.T, r *runner, name, body string) {
	t.Helper()
	p := filepath.Join(r.dir, ".git", "hooks", name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// startLazy starts lazy in its own process group, so the test can
// SIGKILL it together with the git and hook processes it runs.
func startLazy(t *testing.T, r *runner, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(lazyBin, args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LAZY_ACTOR=", "GORACE=atexit_sleep_ms=0 halt_on_error=1", "LAZY_NO_DAEMON=1")
	cmd.Env = append(cmd.Env, r.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return cmd
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

func TestAcceptKilledMidMergeIsRecovered(t *testing.T) {
	for _, tc := range []struct {
		name, hook string
		dirty      bool
		// applied re-applies lazy's stash by hand before the recovery
		// without dropping it: an accept killed between the two.
		applied bool
		want    string
	}{
		{name: "killed before the squash commit", hook: "pre-commit", want: "blocked"},
		{name: "killed before the commit with a stashed destination", hook: "pre-commit", dirty: true, want: "blocked"},
		{name: "killed after the squash commit", hook: "post-commit", want: "complete"},
		{name: "killed after the squash commit with a stashed destination", hook: "post-commit", dirty: true, want: "complete"},
		{name: "killed between re-applying the stash and dropping it", hook: "post-commit", dirty: true, applied: true, want: "complete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t)
			tk := workedTask(t, r, "killed accept", "k.txt work")
			before := strings.TrimSpace(r.git("rev-parse", "main"))
			if tc.dirty {
				if err := os.WriteFile(filepath.Join(r.dir, "local.txt"), []byte("mine\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			marker := filepath.Join(t.TempDir(), "in-hook")
			hook(t, r, tc.hook, "touch "+marker+"\nsleep 600")
			cmd := startLazy(t, r, "accept", tk.Slug)
			waitFile(t, marker)
			if r.refStatus(tk.ID) != "merging" {
				t.Fatalf("status during the merge: %s", r.refStatus(tk.ID))
			}
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			if err := os.Remove(filepath.Join(r.dir, ".git", "hooks", tc.hook)); err != nil {
				t.Fatal(err)
			}
			if tc.applied {
				r.git("stash", "apply", "--quiet", "stash@{0}")
			}

			if tc.want == "blocked" {
				// Doctor names what the dead accept left in the checkout.
				res := r.run(nil, "doctor", "--dry-run")
				if !strings.Contains(res.Stdout, "half-done squash merge") || (tc.dirty && !strings.Contains(res.Stdout, "stash")) {
					t.Fatalf("doctor --dry-run on a half-merged destination: %s", res)
				}
			}
			r.ok("list") // the reconciler finds the stranded merge
			s := r.showFull(tk.Slug)
			if s.Status != tc.want {
				t.Fatalf("recovered to %s, want %s", s.Status, tc.want)
			}
			// Whatever the crash point, the checkout is the user's again:
			// no half-done squash, their change back, no stash left.
			if tc.dirty {
				if b, err := os.ReadFile(filepath.Join(r.dir, "local.txt")); err != nil || string(b) != "mine\n" {
					t.Fatalf("the user's change was not given back: %q %v", b, err)
				}
			}
			if st := r.git("stash", "list"); st != "" {
				t.Fatalf("a stash was left behind: %q", st)
			}
			wantStatus := ""
			if tc.dirty {
				wantStatus = "?? local.txt"
			}
			if st := strings.TrimSpace(r.git("status", "--porcelain")); st != wantStatus {
				t.Fatalf("the checkout after recovery: %q, want %q", st, wantStatus)
			}
			if tc.want == "complete" {
				if s.Outcome != "accepted" || !strings.Contains(r.git("log", "-1", "--format=%B", "main"), "Lazy-Task: "+tk.ID) {
					t.Fatalf("a landed merge was not finished: %+v", s.task)
				}
				return
			}
			if got := strings.TrimSpace(r.git("rev-parse", "main")); got != before {
				t.Fatalf("main moved to %s although the merge never committed", got)
			}
			last := s.CommentList[len(s.CommentList)-1].Text
			if !strings.Contains(last, "stranded accept never merged") || !strings.Contains(last, "undid the half-done squash merge in "+r.dir) {
				t.Fatalf("recovery note %q", last)
			}
			r.ok("accept", tk.Slug)
			if got := r.show(tk.Slug).Status; got != "complete" {
				t.Fatalf("accept after recovery: %s", got)
			}
			if got := r.git("show", "--stat", "--format=", "main"); strings.Contains(got, "local.txt") {
				t.Fatalf("the user's change leaked into the squash: %s", got)
			}
		})
	}
}

func TestFailingCheckRestoresThePriorStatus(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "checked", "c.txt c")
	hook(t, r, "pre-commit", "echo 'lint failed: c.txt' >&2\nexit 1")
	msg := r.fails(1, nil, "accept", tk.Slug)
	if !strings.Contains(msg, "lint failed") {
		t.Fatalf("accept with a failing check: %s", msg)
	}
	s := r.showFull(tk.Slug)
	last := s.History[len(s.History)-1]
	if s.Status != "blocked" || last.From != "merging" || last.To != "blocked" {
		t.Fatalf("after a failed check: %s, %+v", s.Status, last)
	}
	if st := r.git("status", "--porcelain"); st != "" {
		t.Fatalf("the failed merge left %q in the checkout", st)
	}
}

func TestSubtaskAcceptMergesIntoTheParentBranch(t *testing.T) {
	r := newRepo(t)
	counter := filepath.Join(t.TempDir(), "parent-runs")
	pr := r.with(script(t, "attempt "+counter, "when 1 write p.txt parent work", "when 1 commit agent: parent",
		"when 2 print parent busy", "when 2 hang", "print parent done"))
	parent := pr.create("parent task")
	pr.ok("start", parent.Slug, "--command", fakeAgentBin)
	pr.waitStatus(parent.Slug, "blocked")

	cr := r.with(script(t, "argv "+filepath.Join(t.TempDir(), "child-argv"), "write c.txt child work", "commit agent: child", "print child done"))
	child := cr.create("child task", "--parent", parent.Slug)
	cr.ok("start", child.Slug, "--command", fakeAgentBin)
	cs := cr.waitStatus(child.Slug, "blocked")
	if b, err := os.ReadFile(filepath.Join(cs.Session.Worktree, "p.txt")); err != nil || string(b) != "parent work\n" {
		t.Fatalf("the child did not branch from the parent's branch: %q %v", b, err)
	}
	if out := r.ok("list"); !strings.Contains(out, "  child-task") {
		t.Fatalf("list does not show the child under its parent:\n%s", out)
	}
	if msg := r.fails(1, nil, "accept", parent.Slug); !strings.Contains(msg, "child-task") {
		t.Fatalf("accepting a parent with an open subtask: %s", msg)
	}

	// The parent is active: the child's merge target is in use.
	pr.ok("unblock", parent.Slug, "-m", "keep going")
	waitLog(t, r, "parent busy")
	if msg := r.fails(1, nil, "accept", child.Slug); !strings.Contains(msg, "parent parent-task is working") {
		t.Fatalf("accept under an active parent: %s", msg)
	}
	r.ok("stop", parent.Slug)

	mainBefore := strings.TrimSpace(r.git("rev-parse", "main"))
	r.ok("accept", child.Slug)
	if got := strings.TrimSpace(r.git("rev-parse", "main")); got != mainBefore {
		t.Fatal("a subtask's accept moved main")
	}
	if got := r.git("show", "lazy/parent-task:c.txt"); got != "child work" {
		t.Fatalf("the parent branch lacks the child's work: %q", got)
	}
	ps := r.showFull(parent.Slug)
	if b, err := os.ReadFile(filepath.Join(ps.Session.Worktree, "c.txt")); err != nil || string(b) != "child work\n" {
		t.Fatalf("the parent's worktree was not updated: %q %v", b, err)
	}
	// Now the parent can be accepted, carrying the child's work to main.
	r.ok("accept", parent.Slug)
	if got := r.git("show", "main:c.txt"); got != "child work" {
		t.Fatalf("main:c.txt = %q", got)
	}
}

func TestPreAcceptTurn(t *testing.T) {
	r := newRepo(t)
	counter := filepath.Join(t.TempDir(), "runs")
	argvFile := filepath.Join(t.TempDir(), "pre-argv")
	seen := filepath.Join(t.TempDir(), "substate-seen")
	r = r.with(script(t, "attempt "+counter,
		"when 1 write work.txt work", "when 1 commit agent: work",
		"when 2 argv "+argvFile, "when 2 write fix.txt fixed before merge", "when 2 commit agent: pre-accept fix",
		"when 2 attempt "+seen, // waits below for the test to look
		"when 2 sleep 1500ms",
		"when 3 print checks broke", "when 3 exit 1",
		"print ok"))
	tk := r.create("pre accepted")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	r.git("config", "lazy.accept.preTurn", "Run the test suite and commit any fix.")

	cmd := startLazy(t, r, "accept", tk.Slug)
	waitFile(t, seen)
	var sub struct {
		Status   string `json:"status"`
		Substate string `json:"substate"`
	}
	if err := json.Unmarshal([]byte(r.git("show", "refs/lazy/tasks/"+tk.ID+":task.json")), &sub); err != nil {
		t.Fatal(err)
	}
	if sub.Status != "working" || sub.Substate != "agent:pre-accept" {
		t.Fatalf("during the pre-accept turn: %+v", sub)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("accept with a pre-accept turn: %v", err)
	}
	if p := lastPrompt(t, argvFile); p != "Run the test suite and commit any fix." {
		t.Fatalf("pre-accept prompt %q", p)
	}
	if got := r.git("show", "main:fix.txt"); got != "fixed before merge" {
		t.Fatalf("the pre-accept fix did not land: %q", got)
	}
	if s := r.show(tk.Slug); s.Status != "complete" {
		t.Fatalf("after accept: %s", s.Status)
	}
}

func TestFailedPreAcceptTurnMergesNothing(t *testing.T) {
	r := newRepo(t)
	counter := filepath.Join(t.TempDir(), "runs")
	r = r.with(script(t, "attempt "+counter, "when 1 write w.txt w", "when 1 commit agent: w", "when 1 exit 0",
		"print the checks broke", "exit 1"))
	tk := r.create("pre fails")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	r.git("config", "lazy.accept.preTurn", "Run the checks.")
	before := strings.TrimSpace(r.git("rev-parse", "main"))
	if msg := r.fails(1, nil, "accept", tk.Slug); !strings.Contains(msg, "pre-accept turn failed") {
		t.Fatalf("accept: %s", msg)
	}
	if s := r.show(tk.Slug); s.Status != "blocked" {
		t.Fatalf("after a failed pre-accept turn: %s", s.Status)
	}
	if strings.TrimSpace(r.git("rev-parse", "main")) != before {
		t.Fatal("main moved")
	}
	// --skip-pre-turn goes straight to the merge.
	r.ok("accept", tk.Slug, "--skip-pre-turn")
}

func TestAcceptNarrationReachesDaemonSubscribers(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	tk := workedTask(t, r, "narrated", "n.txt n")
	r.ok("daemon", "--ensure")
	lines := startLines(t, r.dir, append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1"), "daemon", "--events")
	// The daemon greets a subscriber with a heartbeat once it is
	// registered: from then on nothing is missed.
	select {
	case <-lines:
	case <-time.After(20 * time.Second):
		t.Fatal("no greeting on the event stream")
	}
	r.ok("accept", tk.Slug)
	var got []string
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the stream ended: %q", got)
			}
			if strings.Contains(l, `"phase"`) {
				got = append(got, l)
			}
			if strings.Contains(l, `"label":"remove the task's worktree and branch"`) {
				text := strings.Join(got, "\n")
				for _, want := range []string{`"op":"accept"`, `"task_id":"` + tk.ID + `"`, `"step":1,"of":4`, `"plan":["record the accept (merging)"`} {
					if !strings.Contains(text, want) {
						t.Fatalf("event stream lacks %s:\n%s", want, text)
					}
				}
				return
			}
		case <-deadline:
			t.Fatalf("no final accept phase on the daemon stream: %q", got)
		}
	}
}

func TestParentAgentMayAcceptItsSubtaskWhileWorking(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	counter := filepath.Join(t.TempDir(), "parent-runs")
	tokenFile := filepath.Join(t.TempDir(), "token")
	pr := r.with(script(t, "attempt "+counter, "when 1 write p.txt p", "when 1 commit agent: parent", "when 1 exit 0",
		"getenv LAZY_MCP_TOKEN "+tokenFile, "print parent busy", "hang"))
	parent := pr.create("parent agent")
	pr.ok("start", parent.Slug, "--command", fakeAgentBin)
	pr.waitStatus(parent.Slug, "blocked")
	child := workedTask(t, r.with(), "its child", "c.txt c")
	r.ok("reparent", child.Slug, "--parent", parent.Slug)
	pr.ok("unblock", parent.Slug, "-m", "drive your subtask")
	waitLog(t, r, "parent busy")
	waitFile(t, tokenFile)
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}

	// Identity is proven, never claimed: the environment a CLI call sets
	// up labels provenance but cannot take the parent-active exemption,
	// not even naming the parent itself.
	other := r.create("someone else")
	for _, caller := range []string{other.ID, parent.ID} {
		if msg := r.with("LAZY_ACTOR=agent", "LAZY_TASK_ID="+caller).fails(1, nil, "accept", child.Slug); !strings.Contains(msg, "is working") {
			t.Fatalf("a CLI caller claiming to be %s's agent: %s", caller, msg)
		}
	}
	if msg := r.with("LAZY_ACTOR=system").fails(1, nil, "accept", child.Slug); !strings.Contains(msg, "reserved") {
		t.Fatalf("LAZY_ACTOR=system on the CLI: %s", msg)
	}
	// The parent's own agent, proven by its MCP token, may.
	s, _ := mcpClient(t, r, []string{"LAZY_MCP_TOKEN=" + string(token)}, "mcp-proxy")
	call(t, s, "lazy_accept", map[string]any{"task": child.Slug}, false)
	if got := r.git("show", "lazy/parent-agent:c.txt"); got != "c" {
		t.Fatalf("the parent branch lacks the child's work: %q", got)
	}
	sf := r.showFull(child.Slug)
	if last := sf.History[len(sf.History)-1]; sf.Status != "complete" || last.Actor != "agent" {
		t.Fatalf("child %s, last %+v", sf.Status, last)
	}
	r.ok("stop", parent.Slug)
}

// A git killed in the destination leaves its index.lock, and git then
// writes no index there: a stranded accept's stash cannot be given back.
// The recovery must leave the task merging, the stash owed, and say why,
// rather than end the accept with the user's changes in a stash nothing
// would look for again (the chaos test found that). Once the lock is
// stale, doctor removes it and the recovery gives the stash back.
func TestStrandedAcceptOwesTheStashWhileGitCannotWriteTheIndex(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "killed accept", "k.txt work")
	mine := filepath.Join(r.dir, "local.txt")
	if err := os.WriteFile(mine, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "in-hook")
	hook(t, r, "post-commit", "touch "+marker+"\nsleep 600")
	cmd := startLazy(t, r, "accept", tk.Slug)
	waitFile(t, marker)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	if err := os.Remove(filepath.Join(r.dir, ".git", "hooks", "post-commit")); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(r.dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil { // what a git killed mid-write leaves
		t.Fatal(err)
	}

	r.run(nil, "list") // the reconciler tries, and cannot give the stash back
	if got := r.refStatus(tk.ID); got != "merging" {
		t.Fatalf("after a recovery that could not give the stash back: %s, want merging", got)
	}
	if _, err := os.Stat(mine); err == nil {
		t.Fatal("local.txt is back although git could not write the index")
	}
	if st := r.git("stash", "list"); !strings.Contains(st, tk.ID) {
		t.Fatalf("the stash is gone: %q", st)
	}
	msg := r.fails(1, nil, "close", tk.Slug, "--reason", "x")
	if !strings.Contains(msg, "could not give your uncommitted changes") || !strings.Contains(msg, "index.lock") {
		t.Fatalf("close of a task whose stash is owed: %s", msg)
	}
	if res := r.run(nil, "doctor"); strings.Contains(res.Stdout, "stale-index-lock") {
		t.Fatalf("doctor took a fresh index.lock for a leftover: %s", res)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("doctor removed a fresh index.lock: %v", err)
	}

	old := time.Now().Add(-3 * time.Minute)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	res := r.run(nil, "doctor")
	if !strings.Contains(res.Stdout, "stale-index-lock") {
		t.Fatalf("doctor did not report the stale index.lock: %s", res)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Fatal("doctor left the stale index.lock")
	}
	if got := r.show(tk.Slug).Status; got != "complete" {
		t.Fatalf("after doctor: %s, want complete (the squash had landed)", got)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "mine\n" {
		t.Fatalf("the user's change was not given back: %q %v", b, err)
	}
	if st := r.git("stash", "list"); st != "" {
		t.Fatalf("a stash was left behind: %q", st)
	}
}

// Accepting again a task whose accept was killed finishes what that one
// began: a merge that landed completes the task (already accepted), one
// that did not is undone and the accept goes on and lands it. It used to
// refuse with "cannot move a task from merging to merging" until some
// other command happened to recover it.
func TestAcceptAgainAfterAKilledAccept(t *testing.T) {
	r := newRepo(t)
	r.git("config", "--add", "lazy.gate", "true")
	for _, tc := range []struct {
		phase, want string
		code        int
	}{
		{"merge", "squash-merged into main", 0}, // killed before the merge: undone, then landed
		{"finish", "already accepted", 1},       // killed after it: finished
	} {
		tk := workedTask(t, r, "killed at "+tc.phase, tc.phase+".txt work")
		if res := r.with(landing.CrashAtEnv+"="+tc.phase).run(nil, "accept", tk.Slug); res.Code != -1 && res.Code != 137 {
			t.Fatalf("accept with the crash hook at %s was not killed: %s", tc.phase, res)
		}
		if got := r.refStatus(tk.ID); got != "merging" {
			t.Fatalf("after the kill at %s: %s, want merging", tc.phase, got)
		}
		res := r.run(nil, "accept", tk.Slug)
		if res.Code != tc.code || !strings.Contains(res.Stdout+res.Stderr, tc.want) {
			t.Fatalf("accept again after the kill at %s: want exit %d and %q, got %s", tc.phase, tc.code, tc.want, res)
		}
		if got := r.show(tk.Slug); got.Status != "complete" || got.Outcome != "accepted" {
			t.Fatalf("after the kill at %s and another accept: %s/%s", tc.phase, got.Status, got.Outcome)
		}
		if n := strings.Count(r.git("log", "--format=%B", "main"), "Lazy-Task: "+tk.ID); n != 1 {
			t.Fatalf("after the kill at %s: main holds the task %d times", tc.phase, n)
		}
	}
}
