package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// oneSentence fails unless msg, progress lines aside, is a single
// "lazy: ..." line that holds want and none of the leaks.
func oneSentence(t *testing.T, what, msg, want string, leaks ...string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		if !strings.HasPrefix(l, "· ") { // progress, by convention never an error
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "lazy: ") || !strings.Contains(msg, want) {
		t.Fatalf("%s: want one line with %q, got:\n%s", what, want, msg)
	}
	for _, l := range leaks {
		if strings.Contains(msg, l) {
			t.Fatalf("%s leaks %q: %s", what, l, msg)
		}
	}
}

// noClaude is a PATH with git but no agent CLI on it.
func noClaude(t *testing.T, r *runner) *runner {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(gitPath, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	return r.with("PATH=" + bin)
}

func TestErrorsSayWhatIsWrongAndWhatToDo(t *testing.T) {
	t.Parallel() // a repository and worktrees of its own
	r := newRepo(t)
	t.Run("start on an unknown task names the task before the agent binary", func(t *testing.T) {
		msg := noClaude(t, r).fails(1, nil, "start", "nosuch", "--agent", "claude")
		oneSentence(t, "start nosuch", msg, `no task named "nosuch"`, "claude")
	})
	t.Run("start on a finished task says to reopen it", func(t *testing.T) {
		r.create("Done already")
		r.ok("close", "done-already", "-m", "duplicate")
		msg := noClaude(t, r).fails(1, nil, "start", "done-already", "--agent", "claude")
		oneSentence(t, "start on abandoned", msg, "start done-already: the task is abandoned; lazy start is for backlog tasks; lazy reopen done-already first", "claude", "cannot move")
	})
	t.Run("accept on a backlog task", func(t *testing.T) {
		r.create("Backlog one")
		msg := r.fails(1, nil, "accept", "backlog-one")
		oneSentence(t, "accept backlog", msg, "the task is in backlog and has no work yet; lazy start backlog-one first", "merging")
	})
	t.Run("pull from a remote that does not exist", func(t *testing.T) {
		msg := r.fails(1, nil, "pull", "nosuchremote")
		oneSentence(t, "pull nosuchremote", msg, `there is no remote named "nosuchremote"`, "fatal:")
		r.git("remote", "add", "gone", filepath.Join(t.TempDir(), "gone.git"))
		msg = r.fails(1, nil, "pull", "gone")
		oneSentence(t, "pull from a missing repository", msg, "could not fetch from gone (", "fatal:", "exit status")
		msg = r.fails(1, nil, "push", "gone")
		oneSentence(t, "push to a missing repository", msg, "could not push to gone (", "fatal:", "exit status")
	})
	t.Run("daemon --status without a daemon", func(t *testing.T) {
		msg := r.fails(1, nil, "daemon", "--status")
		oneSentence(t, "daemon --status", msg, "no daemon is running for this repository; it starts with the next turn", "dial", "sock")
	})
	t.Run("a task name with a typo gets did you mean", func(t *testing.T) {
		r.create("Fix the login race", "--slug", "fix-login")
		for _, args := range [][]string{{"show", "fix-logn"}, {"start", "fixlogin", "--command", fakeAgentBin}, {"logs", "Fix_Login"}, {"diff", "fix-lgoin"}} {
			msg := r.fails(1, nil, args...)
			oneSentence(t, strings.Join(args, " "), msg, "did you mean fix-login?", "no such task")
		}
		msg := r.fails(1, nil, "show", "qqqqqq")
		oneSentence(t, "show qqqqqq", msg, `no task named "qqqqqq"; lazy list shows the tasks`)
	})
	t.Run("create without a title says how to give one", func(t *testing.T) {
		for _, args := range [][]string{{"create", ""}, {"create", "   "}, {"create"}} {
			msg := r.fails(2, nil, args...)
			oneSentence(t, fmt.Sprintf("%q", args), msg, `a task needs a title: lazy create "TITLE" [-m GOAL]`, "description given")
		}
	})
	t.Run("progress lines do not read like errors", func(t *testing.T) {
		fresh := newRepo(t)
		res := fresh.run(nil, "create", "First task")
		if res.Code != 0 || !strings.HasPrefix(res.Stderr, "· set up this repository for lazy") || strings.Contains(res.Stderr, "lazy: ") {
			t.Fatalf("create in a fresh repository: %s", res)
		}
	})
}

func TestStartInAnEmptyRepositoryAsksForAFirstCommit(t *testing.T) {
	dir := t.TempDir()
	testrepo.Git(t, dir, "init", "-q", "-b", "main")
	r := &runner{t: t, dir: dir}
	r.create("Too early")
	msg := r.fails(1, nil, "start", "too-early", "--command", fakeAgentBin)
	oneSentence(t, "start in an empty repository", msg, "this repository has no commits yet, so there is nothing to branch from; make a first commit", `base branch "main"`)
}

func TestRelativeWorktreeDirAndStrayWorktrees(t *testing.T) {
	r := newRepo(t)
	r.git("config", "lazy.worktreeDir", "../wts")
	sub := filepath.Join(r.dir, "deep", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	r = r.with(script(t, "write a.txt a", "commit agent: a"))
	r.create("From a subdir")
	inSub := *r
	inSub.dir = sub
	inSub.ok("start", "from-a-subdir", "--command", fakeAgentBin)
	s := r.waitStatus("from-a-subdir", "blocked")
	if want := filepath.Join(filepath.Dir(r.dir), "wts", "from-a-subdir"); s.Session.Worktree != want {
		t.Fatalf("worktree at %s, want %s (relative to the repository root)", s.Session.Worktree, want)
	}

	// A worktree no session owns (a start that failed after creating it).
	stray := r.create("Stray")
	strayDir := filepath.Join(t.TempDir(), "stray")
	r.git("worktree", "add", "-q", "-b", "lazy/stray", strayDir)
	rep := r.doctor(1)
	found := false
	for _, f := range rep.Findings {
		if f.Slug == stray.Slug && f.Kind == "orphaned-worktree" && strings.Contains(f.Detail, strayDir) && strings.Contains(f.Detail, "stray is in backlog") {
			found = true
		}
	}
	if !found {
		t.Fatalf("doctor did not report the stray worktree: %+v", rep.Findings)
	}
	if _, err := os.Stat(strayDir); err != nil {
		t.Fatalf("doctor removed a worktree that may hold work: %v", err)
	}
}

func TestExecChatSaysItIsWritable(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "shell chat", "s.txt s")
	chat := r.with("SHELL="+fakeAgentBin, script(t, "print talked"))
	cmd, _, out := ptyRun(t, chat, &pty.Winsize{Rows: 24, Cols: 120}, "chat", tk.Slug)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out(), "this is a writable shell (the exec agent has no read-only mode; set lazy.sandbox on to enforce one)") {
		t.Fatalf("an exec chat did not say it is writable: %q", out())
	}
}
