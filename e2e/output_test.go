package e2e

import (
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
