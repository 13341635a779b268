package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

func TestListPutsWhatNeedsAHumanFirstAndFiltersSortsLimits(t *testing.T) {
	r := newRepo(t)
	r.create("Alpha backlog task")
	// Records keep whole seconds, so "last updated" can only tell alpha
	// and gamma apart once the clock has left alpha's second.
	alphaSecond := time.Now().UTC().Truncate(time.Second)
	tk := workedTask(t, r, "beta needs review", "b.txt b")
	for !time.Now().UTC().Truncate(time.Second).After(alphaSecond) {
		time.Sleep(10 * time.Millisecond)
	}
	r.create("Gamma backlog task with a title long enough to be cut at sixty columns for sure")
	lines := strings.Split(strings.TrimSpace(r.ok("list")), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[1], tk.Slug) || !strings.Contains(lines[1], "just now") {
		t.Fatalf("list does not lead with the blocked task:\n%s", strings.Join(lines, "\n"))
	}
	// Among equals, the last updated comes first.
	if !strings.Contains(lines[2], "gamma") || !strings.Contains(lines[3], "alpha") {
		t.Fatalf("backlog tasks not by last update:\n%s", strings.Join(lines, "\n"))
	}
	if out := r.ok("list", "--search", "GAMMA"); strings.Count(out, "\n") != 2 || !strings.Contains(out, "gamma") {
		t.Fatalf("list --search: %s", out)
	}
	if got := r.list("--limit", "1"); len(got) != 1 || got[0].Slug != tk.Slug {
		t.Fatalf("list --json --limit 1: %+v", got)
	}
	if got := r.list("--sort", "title"); len(got) != 3 || got[0].Slug != "alpha-backlog-task" || got[1].Slug != tk.Slug {
		t.Fatalf("list --json --sort title: %+v", got)
	}
	if msg := r.fails(2, nil, "list", "--sort", "bogus"); !strings.Contains(msg, "--sort") {
		t.Fatalf("list --sort bogus: %s", msg)
	}
	for _, w := range []string{"60", "100"} {
		out := r.with("COLUMNS=" + w).ok("list")
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if n := len([]rune(l)); (w == "60" && n > 60) || (w == "100" && n > 100) {
				t.Fatalf("COLUMNS=%s: a line of %d columns: %q", w, n, l)
			}
		}
		if !strings.Contains(out, "…") {
			t.Fatalf("COLUMNS=%s: the long title was not cut:\n%s", w, out)
		}
	}
	if out := r.ok("list"); strings.Contains(out, "…") || strings.Contains(out, "\x1b[") {
		t.Fatalf("a pipe gets full titles and no colour:\n%s", out)
	}
}

func TestColourOnlyOnATerminalAndNeverWithNoColor(t *testing.T) {
	r := newRepo(t)
	workedTask(t, r, "coloured", "c.txt c")
	cases := []struct {
		name   string
		r      *runner
		args   []string
		colour bool
	}{
		{"terminal", r, []string{"list"}, true},
		{"NO_COLOR", r.with("NO_COLOR=1"), []string{"list"}, false},
		{"--no-color", r, []string{"--no-color", "list"}, false},
		{"TERM=dumb", r.with("TERM=dumb"), []string{"list"}, false},
	}
	for _, c := range cases {
		cmd, _, out := ptyRun(t, c.r, &pty.Winsize{Rows: 24, Cols: 100}, c.args...)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		eventually(t, "the list on the terminal", func() bool { return strings.Contains(out(), "coloured") })
		if got := strings.Contains(out(), "\x1b[1;33mblocked"); got != c.colour {
			t.Fatalf("%s: colour %v, want %v: %q", c.name, got, c.colour, out())
		}
	}
}

// A command on a terminal writes text and colour, nothing else. Bubble Tea
// v1's package init asked the terminal for its background colour (OSC 11,
// then a cursor position report) in every lazy process, and waited up to
// five seconds for an answer: one round trip per command over ssh, a
// five-second hang on a terminal that does not answer (this pty does
// not), and typed-ahead keys read as the answer.
func TestCommandsNeverQueryTheTerminal(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "quiet", "q.txt q")
	xterm := r.with("TERM=xterm-256color", "COLORTERM=truecolor")
	for _, args := range [][]string{{"--version"}, {"list"}, {"show", tk.Slug}, {"create", "another"}, {"no-such-command"}} {
		cmd, _, out := ptyRun(t, xterm, &pty.Winsize{Rows: 24, Cols: 100}, args...)
		_ = cmd.Wait() // the unknown command fails; its output is what matters
		eventually(t, "output on the terminal", func() bool { return strings.TrimSpace(out()) != "" })
		text := out()
		for i := strings.IndexByte(text, 0x1b); i >= 0; i = strings.IndexByte(text, 0x1b) {
			text = text[i:]
			end := strings.IndexFunc(text[1:], func(r rune) bool { return r >= 0x40 && r <= 0x7e && r != '[' })
			if !strings.HasPrefix(text, "\x1b[") || end < 0 || text[1+end] != 'm' {
				t.Fatalf("lazy %s wrote a terminal control sequence that is not a colour: %q in %q", strings.Join(args, " "), text, out())
			}
			text = text[2+end:]
		}
	}
}

func TestCreateValidatesTheTargetBranchAndCanStart(t *testing.T) {
	r := newRepo(t)
	msg := r.fails(1, nil, "create", "Port it", "--target-branch", "nosuch")
	oneSentence(t, "create --target-branch nosuch", msg, `target branch "nosuch" does not exist in this repository; create it first (git branch nosuch)`)
	if got := r.list(); len(got) != 0 {
		t.Fatalf("a refused create left a task: %+v", got)
	}
	r.git("branch", "release-2")
	r = r.with(script(t, "write r.txt r", "commit agent: r"))
	res := r.run(nil, "create", "Port it", "--target-branch", "release-2", "--start", "--command", fakeAgentBin, "--wait")
	if res.Code != 0 || !strings.Contains(res.Stdout, "Created port-it") || !strings.Contains(res.Stdout, "port-it: blocked") {
		t.Fatalf("create --start --wait: %s", res)
	}
	if out := r.ok("accept", "port-it", "--dry-run"); !strings.Contains(out, "into release-2") {
		t.Fatalf("the task does not target release-2:\n%s", out)
	}
	if msg := r.fails(2, nil, "create", "x", "--agent", "codex"); !strings.Contains(msg, "go with --start") {
		t.Fatalf("create --agent without --start: %s", msg)
	}
}

// TestRenderedOutputsHaveNoGoSyntax runs the core flows as a person
// does (no --json) and reads everything lazy printed, stdout and stderr:
// no Go value leaks into a message (a slice's "[]" or "[a b]", a map, a
// struct pointer, a bad verb) and no count says "(s)".
func TestRenderedOutputsHaveNoGoSyntax(t *testing.T) {
	f := newFakeForge(t)
	r := manualResume(f.r)
	t.Cleanup(func() { killTurns(r) })
	r.git("config", "--add", "lazy.gate", "true")
	r.git("config", "--add", "lazy.notify", "cmd:true")
	var said strings.Builder
	doWant := func(code int, rr *runner, args ...string) {
		t.Helper()
		res := rr.run(nil, args...)
		if res.Code != code {
			t.Fatalf("lazy %s: want exit %d, got %s", strings.Join(args, " "), code, res)
		}
		fmt.Fprintf(&said, "$ lazy %s\n%s%s", strings.Join(args, " "), res.Stdout, res.Stderr)
	}
	do := func(rr *runner, args ...string) { t.Helper(); doWant(0, rr, args...) }
	do(r, "init")
	do(r, "config")
	do(r, "config", "lazy.watch.bell", "false")
	do(r, "notify")
	do(r, "notify", "test")
	worker := r.with(script(t, "write shared.txt one", "write a.txt a", "commit agent: work", "print did the work"))
	do(worker, "create", "Worked task", "-m", "Do the work.", "--slug", "worked")
	do(r, "comment", "worked", "-m", "a comment")
	do(r, "allow", "worked", "*.txt")
	do(worker, "start", "worked", "--command", fakeAgentBin, "--wait")
	other := r.with(script(t, "write shared.txt two", "commit agent: other", "print did other"))
	do(other, "create", "Overlapping task", "--slug", "other")
	do(other, "start", "other", "--command", fakeAgentBin, "--wait")
	do(r.with(script(t, "write g.txt g", "commit agent: g", "print g")), "create", "Tried two ways", "--slug", "group")
	do(r.with(script(t, "write g.txt g", "commit agent: g", "print g")), "start", "group", "--attempts", "2", "--command", fakeAgentBin)
	r.waitStatus("group-a1", "blocked")
	r.waitStatus("group-a2", "blocked")
	for _, args := range [][]string{
		{"list"}, {"blocked"}, {"active"}, {"status"}, {"cost"}, {"cost", "--by", "agent"}, {"queue"}, {"doctor", "--dry-run"},
		{"show", "worked"}, {"show", "group"}, {"diff", "worked"}, {"diff", "group", "--attempts"}, {"logs", "worked"},
		{"accept", "worked", "--dry-run"}, {"handoff", "worked", "--print"}, {"gate", "worked"}, {"version"}, {"pool"},
	} {
		do(r, args...)
	}
	do(r.with(script(t, "print The answer is 42.")), "ask", "worked", "-m", "What is it?")
	do(r.with(script(t, "write b.txt b", "commit agent: more", "print more")), "unblock", "worked", "-m", "More.", "--wait")
	do(r.with(script(t, "print something broke", "exit 3")), "create", "Crashes", "--slug", "crashes")
	doWant(3, r.with(script(t, "print something broke", "exit 3")), "start", "crashes", "--command", fakeAgentBin, "--wait")
	do(r.with(script(t, "print recovered")), "resume", "crashes")
	do(r, "wait", "crashes")
	do(r, "reject", "crashes", "-m", "not this way")
	do(r, "accept", "other")
	do(r, "accept", "group", "--attempt", "1")
	do(r, "submit", "worked")
	do(r, "push")
	do(r, "pull")
	do(r, "list")
	do(r, "cost")
	out := said.String()
	if os.Getenv("LAZY_SHOW_OUTPUT") != "" {
		t.Log(out)
	}
	for _, leak := range []string{"[]", "map[", "&{", "%!", "(s)", "[ ", " ]"} {
		if i := strings.Index(out, leak); i >= 0 {
			from := max(0, strings.LastIndex(out[:i], "\n$ lazy"))
			t.Errorf("lazy printed %q:\n%s", leak, out[from:min(len(out), i+200)])
		}
	}
}
