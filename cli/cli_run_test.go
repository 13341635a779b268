package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestExitStatusContract: 0 for success, 1 for an error, 2 for bad
// usage (an unknown flag, a missing argument, a bad enum), each error a
// "lazy: " line with the help to run for usage errors.
func TestExitStatusContract(t *testing.T) {
	l := newLazy(t)
	l.create("Fix the login")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"list"}, 0, ""},
		{[]string{"show", "nope"}, 1, `no task named "nope"`},
		{[]string{"list", "--bogus"}, 2, "unknown flag --bogus"},
		{[]string{"comment"}, 2, `expected "<task>"`},
		{[]string{"stash", "sideways"}, 2, "sideways"},
		{[]string{"list", "-n", "many"}, 2, "many"},
	} {
		r := l.run(c.args...)
		if r.code != c.code {
			t.Errorf("lazy %s: exit %d, want %d (%s)", strings.Join(c.args, " "), r.code, c.code, r.err)
			continue
		}
		if c.want == "" {
			continue
		}
		if !strings.Contains(r.err, "lazy: ") || !strings.Contains(r.err, c.want) {
			t.Errorf("lazy %s: stderr %q lacks %q", strings.Join(c.args, " "), r.err, c.want)
		}
		if c.code == 2 && !strings.Contains(r.err, "for usage.") {
			t.Errorf("lazy %s: a usage error without the help to run: %q", strings.Join(c.args, " "), r.err)
		}
	}
}

// TestRunsFromAnywhereInTheRepository: -C (or --directory) a
// subdirectory, a linked worktree or the git directory itself reaches
// the same tasks; a global flag may come after the command.
func TestRunsFromAnywhereInTheRepository(t *testing.T) {
	l := newLazy(t)
	tk := l.create("Fix the login")
	sub := filepath.Join(l.dir, "src", "deep")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(t.TempDir(), "linked")
	testrepo.Git(t, l.dir, "worktree", "add", "-q", "-b", "other", linked)
	for _, dir := range []string{sub, linked, filepath.Join(l.dir, ".git")} {
		if got := l.in(dir).show(tk.Slug); got.ID != tk.ID {
			t.Errorf("from %s: %+v", dir, got)
		}
	}
	// A task made from the linked worktree is the repository's.
	made := l.in(linked).create("Made in a worktree")
	if got := l.show(made.Slug); got.ID != made.ID {
		t.Errorf("from the main checkout: %+v", got)
	}
	out := l.ok("--no-color", "list")
	if got := l.ok("list", "--no-color"); got != out {
		t.Errorf("--no-color after the command:\n%s", got)
	}
	// From outside the repository, --directory (given last) takes it there.
	r := l.in(t.TempDir()).runIn("", "--directory", sub, "show", tk.Slug)
	if r.code != 0 || !strings.Contains(r.out, tk.ID) {
		t.Errorf("--directory: %+v", r)
	}
}

// TestTextsWithoutATerminal: with no -m, nothing piped and no terminal
// for $EDITOR, a command that needs a text says how to give one (usage,
// status 2) and changes nothing.
func TestTextsWithoutATerminal(t *testing.T) {
	l := newLazy(t)
	tk := l.create("Fix the login")
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = devnull.Close() }()
	var out, errb strings.Builder
	code := run("dev", []string{"-C", l.dir, "comment", tk.Slug}, runIO{stdin: devnull, stdout: &out, stderr: &errb, noSpawn: true,
		getenv: func(k string) string { return l.env[k] }})
	if code != 2 || errb.String() != "lazy: no comment given: pass -m TEXT, pipe it on stdin, or run in a terminal to use $EDITOR\n" {
		t.Errorf("comment with no text: exit %d, %q", code, errb.String())
	}
	if got := l.show(tk.Slug); got.Comments != 0 {
		t.Errorf("a comment was added: %+v", got)
	}
}

// TestShowCutsHugeTextsUnlessFull: a goal over 64 KiB is cut in lazy
// show, which says how to see it whole; --full prints it all.
func TestShowCutsHugeTextsUnlessFull(t *testing.T) {
	l := newLazy(t)
	tk := l.create("Big", "-m", strings.Repeat("word ", 20000)+"THE END")
	cut := l.ok("show", tk.Slug)
	has(t, "show of a huge goal", cut, "lazy show big --full shows it whole")
	hasNot(t, "show of a huge goal", cut, "THE END")
	if len(cut) > 80<<10 {
		t.Errorf("show printed %d bytes of a 100 KB goal", len(cut))
	}
	full := l.ok("show", tk.Slug, "--full")
	has(t, "show --full", full, "THE END")
	hasNot(t, "show --full", full, "--full shows it whole")
}

// TestAFailedGateShowsEverywhere: once the gate failed on a task, lazy
// status names it with the failed command (text and --json), lazy show
// has a Gate section with the command's exit and its output's tail and
// where the whole log is, and lazy logs -f on the parked task ends at
// once with the failure and the commands that carry it on.
func TestAFailedGateShowsEverywhere(t *testing.T) {
	l := newLazy(t)
	tk := l.worked("First change", "a.txt", "a\n")
	testrepo.Git(t, l.dir, "config", "lazy.gate", "echo boom >&2; exit 3")
	if r := l.run("gate", tk.Slug); r.code != 1 {
		t.Fatalf("a failing gate: %+v", r)
	}
	has(t, "lazy status", l.ok("status"), "gate failed: first-change at ", "echo boom >&2; exit 3 (lazy show first-change)")
	var st struct {
		GateFailed []struct{ Slug, Failed, At string } `json:"gate_failed"`
	}
	l.json(&st, "status", "--json")
	if len(st.GateFailed) != 1 || st.GateFailed[0].Slug != tk.Slug || st.GateFailed[0].Failed != "echo boom >&2; exit 3" || st.GateFailed[0].At == "" {
		t.Errorf("status --json gate_failed: %+v", st.GateFailed)
	}
	show := l.ok("show", tk.Slug)
	has(t, "show after a failed gate", show, "Gate\n", "failed", "commands from git config lazy.gate:", "$ echo boom >&2; exit 3  -> exit 3", "output (tail):\n      boom", "whole log: ")
	r := l.run("logs", tk.Slug, "-f")
	if r.code != 0 {
		t.Fatalf("logs -f of a parked task: %+v", r)
	}
	has(t, "logs -f", r.out, `✗ the merge gate failed: "echo boom >&2; exit 3" exited 3 on main`, "lazy accept first-change --skip-gate --reason")
	has(t, "logs -f's last word", r.err, "· first-change is blocked; the merge gate failed")
}

// TestCommandsKeepTheirOutputApart: a command's
// own words go to stdout and its progress to stderr, so a script piping
// stdout gets the answer alone.
func TestCommandsKeepTheirOutputApart(t *testing.T) {
	l := newLazy(t)
	tk := l.worked("First change", "a.txt", "a\n")
	r := l.run("accept", tk.Slug)
	if r.code != 0 || strings.Contains(r.out, "·") || !strings.Contains(r.err, "· accept first-change: ") || strings.Count(r.out, "\n") != 1 {
		t.Errorf("accept's streams: %+v", r)
	}
}
