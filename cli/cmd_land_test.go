package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestAcceptSeveralLandsThemInOrder: lazy accept A B is a merge queue
// into main: A lands, then B on top of it, each its own commit; lazy
// queue then says both landed, as what recently left; accept --json is
// the landed commit, its target and the task.
func TestAcceptSeveralLandsThemInOrder(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	a := l.worked("Third change", "c.txt", "c\n")
	b := l.worked("Fourth change", "d.txt", "d\n")
	base := testrepo.Git(t, l.dir, "rev-parse", "main")
	out := l.ok("accept", a.Slug, b.Slug)
	ls := lines(out)
	if len(ls) != 2 || !strings.HasPrefix(ls[0], "Accepted third-change: squash-merged into main as ") || !strings.HasPrefix(ls[1], "Accepted fourth-change: squash-merged into main as ") {
		t.Fatalf("accept of two:\n%s", out)
	}
	subjects := testrepo.Git(t, l.dir, "log", "--format=%s", base+"..main")
	if got := strings.Split(subjects, "\n"); len(got) != 2 || !strings.Contains(got[0], "Fourth change") || !strings.Contains(got[1], "Third change") {
		t.Errorf("main's new commits, newest first: %q", got)
	}
	q := l.ok("queue")
	has(t, "lazy queue after the accept", q, "Queue into main: 0 waiting or running", "Recently left:", "third-change", "fourth-change", "landed")
	var queues []struct {
		Target string `json:"target"`
		Left   []struct {
			Slug    string `json:"slug"`
			Outcome string `json:"outcome"`
			Commit  string `json:"commit"`
		} `json:"left"`
	}
	l.json(&queues, "queue", "--json")
	if len(queues) != 1 || queues[0].Target != "main" || len(queues[0].Left) != 2 || queues[0].Left[0].Outcome != "landed" ||
		queues[0].Left[1].Commit != testrepo.Git(t, l.dir, "rev-parse", "main") {
		t.Errorf("queue --json: %+v", queues)
	}

	c := l.worked("Fifth change", "e.txt", "e\n")
	var res struct {
		Commit   string   `json:"commit"`
		Into     string   `json:"into"`
		Task     taskJSON `json:"task"`
		Warnings []string `json:"warnings"`
	}
	r := l.run("accept", c.Slug, "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.out), &res) != nil {
		t.Fatalf("accept --json: %+v", r)
	}
	if res.Into != "main" || res.Commit != testrepo.Git(t, l.dir, "rev-parse", "main") || res.Task.Status != "complete" || res.Task.Slug != c.Slug || res.Warnings == nil {
		t.Errorf("accept --json: %+v", res)
	}
}

// TestAcceptThatConflictsLandsNothing: two tasks changed the same file;
// once the first lands, the second's accept stops at the merge, says
// which file conflicts and what to do, leaves main and the checkout as
// they were and the task blocked with a comment; show then says what
// landed under it.
func TestAcceptThatConflictsLandsNothing(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	a := l.worked("First change", "shared.txt", "from a\n")
	b := l.worked("Second change", "shared.txt", "from b\n")
	l.ok("accept", a.Slug)
	landed := testrepo.Git(t, l.dir, "rev-parse", "main")
	l.fails(1, []string{"accept", b.Slug}, "accept second-change: the squash merge into main conflicts in shared.txt", "lazy sync the task (or unblock it)")
	if got := testrepo.Git(t, l.dir, "rev-parse", "main"); got != landed {
		t.Errorf("a conflicting accept moved main: %s -> %s", landed, got)
	}
	if st := testrepo.Git(t, l.dir, "status", "--porcelain"); st != "" {
		t.Errorf("a conflicting accept left the checkout dirty:\n%s", st)
	}
	if b, _ := os.ReadFile(filepath.Join(l.dir, "shared.txt")); string(b) != "from a\n" {
		t.Errorf("the checkout's shared.txt: %q", b)
	}
	got := l.show(b.Slug)
	if got.Status != "blocked" || len(got.CommentList) != 1 || !strings.HasPrefix(got.CommentList[0].Text, "accept aborted: ") {
		t.Errorf("the task after the aborted accept: %+v", got)
	}
	has(t, "show after the aborted accept", l.ok("show", b.Slug),
		"landed on main since the branch forked (1 file; lazy sync second-change merges it in now):", "shared.txt")
	// Its work is all still there.
	if got := testrepo.Git(t, l.dir, "show", "lazy/second-change:shared.txt"); got != "from b" {
		t.Errorf("the branch's work after the aborted accept: %q", got)
	}
}

// TestOverlapsShowWhereAPersonLooks: two tasks changing the same file
// are flagged in lazy list (an OVERLAPS column, counted), lazy status
// (--json, in brief) and lazy show (the file named); tasks that overlap
// nothing get no mark.
func TestOverlapsShowWhereAPersonLooks(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	a := l.worked("First change", "shared.txt", "from a\n")
	l.worked("Second change", "shared.txt", "from b\n")
	alone := l.worked("Alone", "alone.txt", "x\n")
	out := l.ok("list")
	has(t, "lazy list", out, "OVERLAPS", "1 file with 1 task")
	for _, line := range lines(out) {
		if strings.Contains(line, alone.Slug) && strings.Contains(line, "file") {
			t.Errorf("a task that overlaps nothing is marked: %q", line)
		}
	}
	var st struct {
		Overlaps map[string]string `json:"overlaps"`
	}
	l.json(&st, "status", "--json")
	if st.Overlaps["first-change"] != "second-change (1 file)" || st.Overlaps["second-change"] != "first-change (1 file)" || len(st.Overlaps) != 2 {
		t.Errorf("status --json overlaps: %+v", st.Overlaps)
	}
	has(t, "show of an overlapping task", l.ok("show", a.Slug), "Overlaps (files changed here and elsewhere", "with second-change, also merging into main (1 file):", "shared.txt")
	hasNot(t, "show of a task alone", l.ok("show", alone.Slug), "Overlaps (")
}

// TestReopenAnAcceptedTaskNeedsAReason: an accepted task reopens only
// with a reason, which is recorded; it comes back blocked.
func TestReopenAnAcceptedTaskNeedsAReason(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	tk := l.worked("First change", "a.txt", "a\n")
	l.ok("accept", tk.Slug)
	l.fails(1, []string{"reopen", tk.Slug}, `an accepted task needs a reason (--reason "...")`)
	if out := l.ok("reopen", tk.Slug, "--reason", "it regressed"); out != "Reopened first-change: now blocked\n" {
		t.Errorf("reopen says %q", out)
	}
	got := l.show(tk.Slug)
	if got.Status != "blocked" || got.History[len(got.History)-1].Op != "reopen" {
		t.Errorf("after reopen: %+v", got)
	}
	has(t, "show after reopen", l.ok("show", tk.Slug), "it regressed")
}

// TestStartRefusesWhatItCannotStart: start is for backlog tasks (a
// blocked one is pointed at unblock), an agent lazy does not know is
// named with the ones it does, and nothing runs or changes either way.
func TestStartRefusesWhatItCannotStart(t *testing.T) {
	l := newLazy(t)
	blocked := l.worked("First change", "a.txt", "a\n")
	fresh := l.create("Not started")
	l.fails(1, []string{"start", blocked.Slug}, "the task is blocked; lazy start is for backlog tasks; give it feedback with lazy unblock first-change -m TEXT")
	l.fails(1, []string{"start", fresh.Slug, "--agent", "nope"}, `agent "nope" is not supported (available: claude, codex, exec)`)
	l.fails(1, []string{"start", "nope"}, `no task named "nope"`)
	if got := l.show(fresh.Slug); got.Status != "backlog" || len(got.History) != 1 {
		t.Errorf("a refused start changed the task: %+v", got)
	}
	if _, err := testrepo.GitErr(l.dir, "rev-parse", "--verify", "refs/heads/lazy/not-started"); err == nil {
		t.Error("a refused start made a branch")
	}
}

// TestEditTargetBranch: a top-level task in backlog can be pointed at
// another existing branch, which its diff and accept then use; a branch
// that does not exist is refused with how to make it.
func TestEditTargetBranch(t *testing.T) {
	l := newLazy(t)
	tk := l.create("Release fix")
	testrepo.Git(t, l.dir, "branch", "release")
	if out := l.ok("edit", tk.Slug, "--target-branch", "release"); out != "Edited release-fix: target branch\n" {
		t.Errorf("edit --target-branch says %q", out)
	}
	if got := l.show(tk.Slug); got.TargetBranch != "release" {
		t.Errorf("the target branch: %q", got.TargetBranch)
	}
	l.fails(1, []string{"edit", tk.Slug, "--target-branch", "nope"}, `target branch "nope" does not exist in this repository; create it first (git branch nope)`)
	l.ok("edit", tk.Slug, "--target-branch", "")
	if got := l.show(tk.Slug); got.TargetBranch != "" {
		t.Errorf("--target-branch \"\" left %q", got.TargetBranch)
	}
}

// TestStashRestoreWithNothingKept: restoring when lazy keeps nothing for
// the checkout says so and where to look.
func TestStashRestoreWithNothingKept(t *testing.T) {
	l := newLazy(t)
	l.create("Anything")
	l.fails(1, []string{"stash", "restore"}, "lazy stash restore main: lazy keeps none of your uncommitted changes there; lazy stash lists what it keeps")
	l.fails(2, []string{"stash", "drop"}, "drop")
}

// TestWaitAnyReturnsWhatSettled: wait --any on several settled tasks
// prints each with its status.
func TestWaitAnyReturnsWhatSettled(t *testing.T) {
	l := newLazy(t)
	a := l.worked("First change", "a.txt", "a\n")
	b := l.create("Second")
	out := l.ok("wait", a.Slug, b.Slug, "--any")
	has(t, "wait --any", out, "first-change: blocked", "second: backlog")
}
