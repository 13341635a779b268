package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// tamper is an attacker with push access to the remote at bare: in a
// clone of its own it rewrites task id's record with git plumbing (edit
// gets task.json and returns the forged one) as a child of the record it
// fetched, and pushes it.
func tamper(t *testing.T, bare, id, subject string, edit func(taskJSON string) string) {
	t.Helper()
	att := filepath.Join(t.TempDir(), "attacker")
	testrepo.Git(t, t.TempDir(), "clone", "-q", bare, att)
	testrepo.Identity(t, att)
	ref := "refs/lazy/tasks/" + id
	testrepo.Git(t, att, "fetch", "-q", "origin", "+"+ref+":"+ref)
	git := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = att
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	blob := git(edit(testrepo.Git(t, att, "cat-file", "-p", ref+":task.json"))+"\n", "hash-object", "-w", "--stdin")
	var tree []string
	for _, line := range strings.Split(testrepo.Git(t, att, "ls-tree", ref), "\n") {
		if strings.HasSuffix(line, "\ttask.json") {
			line = "100644 blob " + blob + "\ttask.json"
		}
		tree = append(tree, line)
	}
	newTree := git(strings.Join(tree, "\n")+"\n", "mktree")
	commit := testrepo.Git(t, att, "commit-tree", newTree, "-p", ref, "-m", subject+"\n\nLazy-Task: "+id+"\nLazy-Op: accept")
	testrepo.Git(t, att, "push", "-q", "origin", commit+":"+ref)
}

// TestAHostileRemoteDecidesNothingHere: an attacker who can push to the
// remote forges a task's record as accepted, with escape sequences in
// its title. For a task in backlog the pull takes the record (backlog ->
// complete is a move the state machine allows) but says it is unverified
// and that lazy removes nothing on its word, and the title reaches the
// terminal escaped. For a task with work here the pull refuses the move
// (a task completes only through an accept) and keeps the record; its
// worktree, branch and work stay, and doctor removes none of them.
func TestAHostileRemoteDecidesNothingHere(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	testrepo.Git(t, l.dir, "init", "-q", "--bare", bare)
	testrepo.Git(t, l.dir, "remote", "add", "origin", bare)
	testrepo.Git(t, l.dir, "push", "-q", "origin", "main")
	fresh := l.create("Not started")
	l.ok("push")
	tamper(t, bare, fresh.ID, "accept not-started: backlog -> complete", func(js string) string {
		js = strings.Replace(js, `"status": "backlog"`, `"status": "complete", "outcome": "accepted"`, 1)
		js = strings.Replace(js, `"clock": 1`, `"clock": 2`, 1)
		return strings.Replace(js, `"title": "Not started"`, `"title": "owned \u001b]0;pwned\u0007 \u001b[2J"`, 1)
	})
	out := l.ok("pull")
	has(t, "the pull of a forged record", out, "Pulled from origin: 1 updated",
		"unverified not-started: neither the task's branch nor a squash commit of it is on main here", "lazy removes none of its worktrees or branches on this record's word")
	for _, args := range [][]string{{"list"}, {"show", fresh.Slug}} {
		got := l.ok(args...)
		hasNot(t, strings.Join(args, " "), got, "\x1b", "\x07")
		has(t, strings.Join(args, " "), got, `owned \u001b]0;pwned\u0007 \u001b[2J`)
	}

	// A task with work here: the forged accept removes none of it.
	worked := l.worked("Real work", "w.txt", "w\n")
	wt := filepath.Join(testrepo.Git(t, l.dir, "config", "lazy.worktreeDir"), worked.Slug)
	l.ok("push")
	tamper(t, bare, worked.ID, "accept real-work: merging -> complete", func(js string) string {
		return strings.Replace(js, `"status": "blocked"`, `"status": "complete", "outcome": "accepted"`, 1)
	})
	out = l.ok("pull")
	has(t, "the pull of a forged accept", out, "refused real-work: the remote's record moves it blocked -> complete",
		"a task must be merged by lazy accept (through merging) to complete; the local record stays as it was")
	if got := l.show(worked.Slug); got.Status != "blocked" || got.Outcome != "" {
		t.Errorf("the forged accept changed the record: %+v", got)
	}
	l.ok("doctor")
	if _, err := os.Stat(filepath.Join(wt, "w.txt")); err != nil {
		t.Errorf("the worktree's work is gone after the forged record: %v", err)
	}
	if _, err := testrepo.GitErr(l.dir, "rev-parse", "--verify", "refs/heads/lazy/real-work"); err != nil {
		t.Error("the branch is gone after the forged record")
	}
	if got := testrepo.Git(t, l.dir, "show", "lazy/real-work:w.txt"); got != "w" {
		t.Errorf("the branch's work: %q", got)
	}
}
