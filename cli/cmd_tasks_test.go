package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/task"
)

// TestCreateSetsUpAndSaysWhatItMade: the first create in a repository
// nobody ran lazy init in sets it up (and says so on stderr), then says
// what it made in one line; the record holds the title, the goal from
// -m, the policy, the budget and the dependency given; --json prints the
// same task.
func TestCreateSetsUpAndSaysWhatItMade(t *testing.T) {
	l := newLazy(t)
	r := l.run("create", "Fix the login", "-m", "Make the form submit.\n\nKeep the tests.")
	if r.code != 0 || !strings.HasPrefix(r.err, "· set up this repository for lazy (host id ") {
		t.Fatalf("first create: exit %d, stderr %q", r.code, r.err)
	}
	if !strings.HasPrefix(r.out, "Created fix-the-login (") || !strings.HasSuffix(r.out, ") in backlog\n") || len(lines(r.out)) != 1 {
		t.Fatalf("create says %q", r.out)
	}
	if v := testrepo.Git(t, l.dir, "config", "lazy.hostid"); v == "" {
		t.Fatal("no lazy.hostid after the first create")
	}
	first := l.show("fix-the-login")
	if first.Title != "Fix the login" || first.Goal != "Make the form submit.\n\nKeep the tests." || first.Status != "backlog" {
		t.Fatalf("the record: %+v", first)
	}
	if !strings.Contains(r.out, first.ID[:8]) {
		t.Errorf("create names the id %s: %q", first.ID[:8], r.out)
	}

	// A second create sets nothing up; --json is the task.
	r = l.run("create", "Cover logout", "--json", "--parent", "fix-the-login", "--allow", "auth/**", "--allow", "docs/*.md",
		"--budget", "2.50", "--after", first.ID[:6], "--slug", "logout", "-m", "and its test")
	if r.code != 0 || r.err != "" {
		t.Fatalf("create --json: exit %d, stderr %q", r.code, r.err)
	}
	var sub taskJSON
	if err := json.Unmarshal([]byte(r.out), &sub); err != nil {
		t.Fatalf("create --json is not JSON: %v\n%s", err, r.out)
	}
	if sub.Slug != "logout" || sub.Parent != first.ID || sub.BudgetUSD == nil || *sub.BudgetUSD != 2.5 ||
		strings.Join(sub.AllowedPaths, " ") != "auth/** docs/*.md" || len(sub.After) != 1 || sub.After[0] != first.ID {
		t.Fatalf("create --json: %+v", sub)
	}
	if got := l.show("logout"); got.Goal != "and its test" || got.ID != sub.ID {
		t.Errorf("show of the subtask: %+v", got)
	}

	// Without a title, the first line of the description is the title.
	l.runIn("", "create", "-m", "Write the docs\nFor the review loop.")
	if d := l.show("write-the-docs"); d.Title != "Write the docs" || d.Goal != "Write the docs\nFor the review loop." {
		t.Errorf("a title from the description: %+v", d)
	}
	// A goal piped on stdin.
	r = l.runIn("Piped goal\n", "create", "Piped one")
	if r.code != 0 {
		t.Fatalf("create with stdin: %+v", r)
	}
	if d := l.show("piped-one"); d.Goal != "Piped goal" {
		t.Errorf("a piped goal: %q", d.Goal)
	}
}

// TestCreateRefusesBadInputAndCreatesNothing: every bad value is one
// sentence that says what to do, with the usage status for a bad flag,
// and no task is created.
func TestCreateRefusesBadInputAndCreatesNothing(t *testing.T) {
	l := newLazy(t)
	l.create("Fix the login")
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"create", "x", "--slug", "BAD_slug"}, 1, []string{`invalid slug "BAD_slug"`, "lowercase letters"}},
		{[]string{"create", "x", "--slug", "fix-the-login"}, 1, []string{`slug "fix-the-login" is already taken`}},
		{[]string{"create", "x", "--budget", "abc"}, 2, []string{`--budget "abc" is not an amount in US dollars`, "such as 5"}},
		{[]string{"create", "x", "--parent", "nope"}, 1, []string{`parent: no task named "nope"`, "lazy list"}},
		{[]string{"create", "x", "--after", "nope"}, 1, []string{`--after nope: no task named "nope"`}},
		{[]string{"create", "x", "--target-branch", "nope"}, 1, []string{`target branch "nope" does not exist`, "git branch nope", "nothing was created"}},
		{[]string{"create", ""}, 1, []string{"a task needs a title", "nothing was created"}},
		{[]string{"create", "x", "--no-such-flag"}, 2, []string{"unknown flag --no-such-flag"}},
	} {
		l.fails(c.code, c.args, c.want...)
	}
	var all []taskJSON
	l.json(&all, "list", "--json")
	if len(all) != 1 {
		t.Fatalf("bad creates made tasks: %+v", all)
	}
	r := l.run("create", "x", "--no-such-flag")
	has(t, "a usage error", r.err, `Run "lazy create <title> --help" for usage.`)
}

// TestListFiltersSortsAndNests: subtasks sit under their parent, the
// filters (status, search, parent, open, limit) narrow the table and
// its JSON alike, and a bad status names the valid ones.
func TestListFiltersSortsAndNests(t *testing.T) {
	l := newLazy(t)
	parent := l.create("Fix the login")
	l.create("Cover logout", "--parent", parent.Slug)
	l.create("Write docs")
	done := l.create("Old idea")
	l.ok("close", done.Slug, "-m", "superseded")

	out := l.ok("list")
	ls := lines(out)
	if len(ls) != 5 || !strings.HasPrefix(ls[0], "ID") || !strings.Contains(ls[0], "STATUS") || !strings.Contains(ls[0], "TITLE") {
		t.Fatalf("lazy list:\n%s", out)
	}
	var parentRow, childRow int
	for i, line := range ls {
		switch {
		case strings.Contains(line, "  fix-the-login "):
			parentRow = i
		case strings.Contains(line, "    cover-logout "):
			childRow = i
		}
	}
	if parentRow == 0 || childRow != parentRow+1 {
		t.Errorf("the subtask is not indented under its parent:\n%s", out)
	}
	if got := l.ok("ls"); got != out {
		t.Errorf("ls is not list:\n%s", got)
	}

	count := func(args ...string) []string {
		t.Helper()
		var rows []taskJSON
		l.json(&rows, append([]string{"list", "--json"}, args...)...)
		var slugs []string
		for _, r := range rows {
			slugs = append(slugs, r.Slug)
		}
		return slugs
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "fix-the-login cover-logout write-docs old-idea"},
		{[]string{"--open"}, "fix-the-login cover-logout write-docs"},
		{[]string{"-s", "abandoned"}, "old-idea"},
		{[]string{"-s", "backlog,abandoned", "-q", "DOC"}, "write-docs"},
		{[]string{"--parent", parent.Slug}, "cover-logout"},
		// A subtask stays under its parent, whatever the order.
		{[]string{"--sort", "title", "--open"}, "fix-the-login cover-logout write-docs"},
		{[]string{"--sort", "title", "-n", "2"}, "fix-the-login cover-logout"},
		{[]string{"--sort", "created", "--open", "-s", "backlog", "-q", "write"}, "write-docs"},
	} {
		got := strings.Join(count(c.args...), " ")
		if c.args == nil || len(c.args) == 1 && c.args[0] == "--open" {
			// attention order: among equals, the newest update first.
			for _, s := range strings.Fields(c.want) {
				if !strings.Contains(got, s) {
					t.Errorf("list --json lacks %s: %s", s, got)
				}
			}
			continue
		}
		if got != c.want {
			t.Errorf("list %v: %s, want %s", c.args, got, c.want)
		}
	}
	if out := l.ok("list", "-s", "blocked"); out != "No tasks.\n" {
		t.Errorf("an empty list says %q", out)
	}
	if out := l.ok("list", "-s", "blocked", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("an empty list --json is %q, want []", out)
	}
	l.fails(2, []string{"list", "-s", "nope"}, `unknown status "nope"`, "valid: backlog, working, blocked")
	l.fails(2, []string{"list", "--sort", "nope"}, "--sort")
	l.fails(1, []string{"list", "--parent", "nope"}, `no task named "nope"`)
}

// TestBlockedActiveAndStatusReadTheRecords: blocked lists what waits for
// a human with the commands that carry each on; active what has a live
// worktree; status counts them and says the daemon is not running.
func TestBlockedActiveAndStatusReadTheRecords(t *testing.T) {
	l := newLazy(t)
	l.create("Not started")
	if out := l.ok("blocked"); out != "No tasks.\n" {
		t.Fatalf("blocked with none: %q", out)
	}
	waiting := l.worked("Needs review", "r.txt", "r\n")

	out := l.ok("blocked")
	has(t, "lazy blocked", out, waiting.Slug, "blocked", "Next", "lazy diff needs-review  |  lazy accept needs-review")
	hasNot(t, "lazy blocked", out, "not-started")
	var rows []taskJSON
	l.json(&rows, "blocked", "--json")
	if len(rows) != 1 || rows[0].Slug != waiting.Slug || rows[0].Status != "blocked" {
		t.Errorf("blocked --json: %+v", rows)
	}
	if out := l.ok("active"); out != "No tasks.\n" {
		t.Errorf("active: %q", out)
	}

	out = l.ok("status")
	has(t, "lazy status", out, "1 backlog", "1 blocked", "daemon: not running")
	var st struct {
		Counts map[string]int `json:"counts"`
		Active []any          `json:"active"`
		Daemon any            `json:"daemon"`
		Owed   []any          `json:"owed_stashes"`
		Queues []any          `json:"queues"`
	}
	l.json(&st, "status", "--json")
	if st.Counts["backlog"] != 1 || st.Counts["blocked"] != 1 || len(st.Active) != 0 || st.Daemon != nil || st.Owed == nil || st.Queues == nil {
		t.Errorf("status --json: %+v", st)
	}
}

// TestShowSaysWhatTheTaskIs: show's sections (details, goal, comments,
// history) in text, the same facts in --json, and a name that matches
// nothing or too little is one sentence.
func TestShowSaysWhatTheTaskIs(t *testing.T) {
	l := newLazy(t)
	tk := l.create("Fix the login", "-m", "Make the form submit.", "--allow", "auth/**")
	l.ok("comment", tk.Slug, "-m", "Mind the cookie path.")
	out := l.ok("show", tk.Slug)
	has(t, "lazy show", out,
		tk.Slug+"  ("+tk.ID+")", "Title:    Fix the login", "Status:   backlog",
		"Goal:\n  Make the form submit.", "Mind the cookie path.", "History", "create", "-> backlog", "comment")
	got := l.show(tk.ID[:6])
	if got.Slug != tk.Slug || got.Comments != 1 || len(got.CommentList) != 1 || got.CommentList[0].Text != "Mind the cookie path." || got.CommentList[0].Actor != "human" {
		t.Errorf("show --json by id prefix: %+v", got)
	}
	if len(got.History) < 2 || got.History[0].Op != "create" || got.History[0].To != "backlog" {
		t.Errorf("show --json history: %+v", got.History)
	}
	l.fails(1, []string{"show", "nope"}, `no task named "nope"`, "lazy list shows the tasks")
	l.fails(1, []string{"show", "e"}, "an id prefix needs at least 4 characters")
	l.fails(2, []string{"show"}, "expected \"<task>\"")
}

// TestCommentTakesTextFromFlagOrStdin: -m, "-m -" and a pipe each give
// the comment's text; an empty one is refused and nothing is added.
func TestCommentTakesTextFromFlagOrStdin(t *testing.T) {
	l := newLazy(t)
	tk := l.create("Fix the login")
	if out := l.ok("comment", tk.Slug, "-m", "first"); out != "Commented on fix-the-login (#1)\n" {
		t.Errorf("comment says %q", out)
	}
	if r := l.runIn("from a pipe\n", "comment", tk.Slug, "-m", "-"); r.code != 0 {
		t.Fatalf("comment -m -: %+v", r)
	}
	var c struct {
		Text  string `json:"text"`
		Actor string `json:"actor"`
	}
	r := l.runIn("piped\nover two lines\n", "comment", tk.Slug, "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.out), &c) != nil || c.Text != "piped\nover two lines" || c.Actor != "human" {
		t.Fatalf("comment --json from stdin: %+v (%+v)", r, c)
	}
	l.fails(1, []string{"comment", tk.Slug, "-m", ""}, "a comment needs text")
	l.fails(1, []string{"comment", "nope", "-m", "x"}, `no task named "nope"`)
	got := l.show(tk.Slug)
	var bodies []string
	for _, c := range got.CommentList {
		bodies = append(bodies, c.Text)
	}
	if strings.Join(bodies, "|") != "first|from a pipe|piped\nover two lines" {
		t.Errorf("the comments are %q", bodies)
	}
}

// TestEditAllowAndReparentChangeTheRecord: each change is recorded and
// said; a change that changes nothing, a bad budget, an absolute glob
// and a task made its own parent are refused.
func TestEditAllowAndReparentChangeTheRecord(t *testing.T) {
	l := newLazy(t)
	a := l.create("Fix the login")
	b := l.create("Cover logout")

	if out := l.ok("edit", a.Slug, "--title", "Fix login now"); out != "Edited fix-the-login: title\n" {
		t.Errorf("edit --title says %q", out)
	}
	var edited taskJSON
	l.json(&edited, "edit", a.Slug, "--budget", "7", "--goal", "new goal", "--json")
	if edited.Title != "Fix login now" || edited.BudgetUSD == nil || *edited.BudgetUSD != 7 {
		t.Errorf("edit --json: %+v", edited)
	}
	if got := l.show(a.Slug); got.Goal != "new goal" {
		t.Errorf("the goal after edit: %q", got.Goal)
	}
	l.ok("edit", a.Slug, "--budget", "none")
	if got := l.show(a.Slug); got.BudgetUSD != nil {
		t.Errorf("--budget none left %v", *got.BudgetUSD)
	}
	l.fails(1, []string{"edit", a.Slug}, "nothing to edit: give a new title, goal, target branch or budget")
	l.fails(1, []string{"edit", a.Slug, "--budget", "none"}, "nothing changed; the task already says that")
	l.fails(2, []string{"edit", a.Slug, "--budget", "abc"}, `--budget "abc" is not an amount`)

	if out := l.ok("allow", a.Slug, "src/**", "go.mod"); out != "fix-the-login: allowed paths src/**, go.mod\n" {
		t.Errorf("allow says %q", out)
	}
	l.ok("allow", a.Slug, "--add", "docs/**")
	l.ok("allow", a.Slug, "--remove", "go.mod")
	if got := l.show(a.Slug); strings.Join(got.AllowedPaths, " ") != "src/** docs/**" {
		t.Errorf("after add and remove: %q", got.AllowedPaths)
	}
	if out := l.ok("allow", a.Slug, "--clear"); !strings.Contains(out, "every file is allowed") {
		t.Errorf("allow --clear says %q", out)
	}
	if got := l.show(a.Slug); len(got.AllowedPaths) != 0 {
		t.Errorf("after --clear: %q", got.AllowedPaths)
	}
	l.fails(1, []string{"allow", a.Slug, "/etc/passwd"}, `allowed path "/etc/passwd" is absolute`)
	l.fails(2, []string{"allow", a.Slug}, "needs globs, or --clear")

	if out := l.ok("reparent", b.Slug, "--parent", a.Slug); out != "Reparented cover-logout: now a subtask of fix-the-login\n" {
		t.Errorf("reparent says %q", out)
	}
	if got := l.show(b.Slug); got.Parent != a.ID {
		t.Errorf("the parent after reparent: %q", got.Parent)
	}
	l.fails(1, []string{"reparent", a.Slug, "--parent", b.Slug}, "reparent fix-the-login")
	l.fails(1, []string{"reparent", b.Slug, "--parent", b.Slug}, "a task cannot be its own parent")
	l.fails(2, []string{"reparent", b.Slug}, "needs --parent TASK")
	l.ok("reparent", b.Slug, "--root")
	if got := l.show(b.Slug); got.Parent != "" {
		t.Errorf("--root left parent %q", got.Parent)
	}
}

// TestCloseRejectAndReopen: close abandons a backlog task with its
// reason, reopen brings it back; reject refuses a task that never ran
// (there is no work to reject) and points at close.
func TestCloseRejectAndReopen(t *testing.T) {
	l := newLazy(t)
	tk := l.create("Old idea")
	l.fails(1, []string{"reject", tk.Slug, "-m", "no"}, "the task never started, so there is no work to reject; use lazy close")
	l.fails(1, []string{"reopen", tk.Slug}, "only complete or abandoned tasks can be reopened")
	if out := l.ok("close", tk.Slug, "-m", "superseded"); out != "Closed old-idea: now abandoned\n" {
		t.Errorf("close says %q", out)
	}
	got := l.show(tk.Slug)
	if got.Status != "abandoned" || got.Outcome != "closed" || got.Reason != "superseded" {
		t.Errorf("after close: %+v", got)
	}
	l.fails(1, []string{"close", tk.Slug, "-m", "again"}, "close old-idea")
	var re taskJSON
	l.json(&re, "reopen", tk.Slug, "--json")
	if re.Status != "backlog" {
		t.Errorf("reopen --json: %+v", re)
	}
	// A reason from stdin.
	if r := l.runIn("from stdin\n", "close", tk.Slug); r.code != 0 {
		t.Fatalf("close with a piped reason: %+v", r)
	}
	if got := l.show(tk.Slug); got.Reason != "from stdin" {
		t.Errorf("the piped reason: %q", got.Reason)
	}
	l.fails(1, []string{"close", "nope"}, `no task named "nope"`)
}

// TestTurnCommandsSayWhyATaskCannotTakeThem: on a task in backlog, every
// command of the turn loop refuses in one sentence that names the
// statuses it works on, and the task is unchanged.
func TestTurnCommandsSayWhyATaskCannotTakeThem(t *testing.T) {
	l := newLazy(t)
	tk := l.create("Fix the login")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"unblock", tk.Slug, "-m", "x"}, 1, "the task is backlog; unblock works on blocked, conflict, interrupted tasks"},
		{[]string{"resume", tk.Slug}, 1, "resume works on interrupted tasks"},
		{[]string{"stop", tk.Slug}, 1, "only a working task has a turn to stop"},
		{[]string{"ask", tk.Slug, "-m", "why?"}, 1, "ask works on blocked, conflict tasks"},
		{[]string{"sync", tk.Slug}, 1, "sync works on blocked, conflict tasks"},
		{[]string{"submit", tk.Slug}, 1, "submit works on blocked tasks"},
		{[]string{"diff", tk.Slug}, 1, "has not started, so it has no work to review; lazy start fix-the-login first"},
		{[]string{"logs", tk.Slug}, 1, "has not started, so there is no agent output yet"},
		{[]string{"gate", tk.Slug}, 1, "no branch to gate"},
		{[]string{"accept", tk.Slug}, 1, "the task is in backlog and has no work yet; lazy start fix-the-login first"},
		{[]string{"handoff", tk.Slug}, 2, "say who takes over with --to claude, codex or exec"},
	} {
		l.fails(c.code, c.args, c.want)
	}
	if got := l.show(tk.Slug); got.Status != "backlog" || len(got.History) != 1 {
		t.Errorf("refused commands changed the task: %+v", got)
	}
}

// TestWaitReturnsForSettledTasks: wait on a task that needs nothing to
// happen returns at once with it, in text and JSON; an unknown task is
// an error.
func TestWaitReturnsForSettledTasks(t *testing.T) {
	l := newLazy(t)
	tk := l.create("Fix the login")
	if out := l.ok("wait", tk.Slug); out != "fix-the-login: backlog\n" {
		t.Errorf("wait says %q", out)
	}
	var rows []taskJSON
	l.json(&rows, "wait", tk.Slug, "--json", "--timeout", "5s")
	if len(rows) != 1 || rows[0].Slug != tk.Slug {
		t.Errorf("wait --json: %+v", rows)
	}
	l.fails(1, []string{"wait", "nope"}, `no task named "nope"`)
}

// TestOutsideARepository: a command run outside any repository says so
// and how to get one, with status 1.
func TestOutsideARepository(t *testing.T) {
	l := newLazy(t).in(t.TempDir())
	l.fails(1, []string{"list"}, "not inside a git repository", "git init")
	l.fails(1, []string{"create", "x"}, "not inside a git repository")
}

// TestColourAndWidthFollowTheTerminal: on a terminal (the test's, of a
// given width) the table is painted and fits the width; NO_COLOR and
// --no-color take the colour away, TERM=dumb too; COLUMNS wins over the
// terminal's width; in a pipe nothing is painted or cut.
func TestColourAndWidthFollowTheTerminal(t *testing.T) {
	l := newLazy(t)
	l.worked("A title long enough to be cut on a narrow terminal, as this one is", "t.txt", "t\n")
	l.now = time.Now().Add(3 * time.Hour)

	piped := l.ok("list")
	hasNot(t, "list in a pipe", piped, "\x1b[", "…")
	has(t, "list in a pipe", piped, "3h ago")

	l.term = &terminal{width: 60}
	painted := l.ok("list")
	has(t, "list on a terminal", painted, "\x1b[1;33mblocked\x1b[0m", "\x1b[1mSTATUS\x1b[0m", "…")
	for _, line := range lines(painted) {
		if n := len([]rune(stripSGR(line))); n > 60 {
			t.Errorf("a line of %d columns on a 60-column terminal: %q", n, line)
		}
	}
	for name, env := range map[string]map[string]string{"NO_COLOR": {"NO_COLOR": "1"}, "TERM=dumb": {"TERM": "dumb"}} {
		saved := l.env
		l.env = map[string]string{"LAZY_NO_DAEMON": "1"}
		for k, v := range env {
			l.env[k] = v
		}
		hasNot(t, "list with "+name, l.ok("list"), "\x1b[")
		l.env = saved
	}
	hasNot(t, "list --no-color", l.ok("list", "--no-color"), "\x1b[")
	l.env["COLUMNS"] = "200"
	wide := l.ok("list")
	hasNot(t, "list with COLUMNS=200", wide, "…")
	has(t, "list with COLUMNS=200", wide, "as this one is")
}

// stripSGR takes lazy's colour codes out of a line.
func stripSGR(s string) string {
	for {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			return s
		}
		j := strings.IndexByte(s[i:], 'm')
		if j < 0 {
			return s
		}
		s = s[:i] + s[i+j+1:]
	}
}

// TestTitlesFromRecordsNeverDriveTheTerminal: a title with escape
// sequences (as a hostile remote or a hand-edited record could carry)
// prints escaped in list and show.
func TestTitlesFromRecordsNeverDriveTheTerminal(t *testing.T) {
	l := newLazy(t)
	tk := l.create("Plain")
	l.set(tk.ID, func(sn *task.Snapshot) { sn.Task.Title = "evil \x1b]0;pwned\x07 \x1b[2J title" })
	for _, args := range [][]string{{"list"}, {"show", tk.Slug}} {
		out := l.ok(args...)
		hasNot(t, fmt.Sprint(args), out, "\x1b]", "\x07", "\x1b[2J")
		has(t, fmt.Sprint(args), out, `\u001b`)
	}
}

// TestShowRendersTheTurns: the turns a task's sessions recorded read in
// lazy show in order (who asked what, what the agent answered, what it
// cost and its tool calls, a failed turn's class), with what the agent
// wrote escaped for the terminal, and in --json's turn_list.
func TestShowRendersTheTurns(t *testing.T) {
	l := newLazy(t)
	tk := l.worked("Fix the login", "auth/login.go", "package auth\n")
	exit := 1
	l.set(tk.ID, func(sn *task.Snapshot) {
		at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
		sn.AddTurn(task.Turn{Role: "human", Actor: "human", Kind: "start", Content: "Make the form submit.", At: at})
		sn.AddTurn(task.Turn{Role: "agent", Kind: "start", Content: "Done: the form submits \x1b[2J now.", At: at.Add(time.Minute),
			Agent: "claude", Model: "claude-opus-4-1", Usage: &task.Usage{CostUSD: 0.25, InputTokens: 1200, OutputTokens: 300},
			Tools: &task.Tools{Calls: 5, Failed: 2}, ChangedFiles: []string{"auth/login.go"}})
		sn.AddTurn(task.Turn{Role: "human", Actor: "human", Kind: "unblock", Content: "Also cover logout.", At: at.Add(2 * time.Minute)})
		sn.AddTurn(task.Turn{Role: "agent", Kind: "unblock", Content: "", At: at.Add(3 * time.Minute), ExitCode: &exit,
			Error: "the agent exited 1", FailureClass: "crash", Agent: "claude"})
	})
	out := l.ok("show", tk.Slug)
	has(t, "show's turns", out, "Turns (4)", "Make the form submit.", `Done: the form submits \u001b[2J now.`, "$0.2500", "5 tool calls (2 failed)",
		"Also cover logout.", "crash")
	hasNot(t, "show's turns", out, "\x1b[2J")
	if i, j := strings.Index(out, "Make the form submit."), strings.Index(out, "Also cover logout."); i < 0 || j < i {
		t.Errorf("the turns are out of order:\n%s", out)
	}
	var sh struct {
		TurnList []struct {
			Seq     int    `json:"seq"`
			Role    string `json:"role"`
			Content string `json:"content"`
			Tools   *struct {
				Calls  int `json:"calls"`
				Failed int `json:"failed"`
			} `json:"tools"`
			FailureClass string `json:"failure_class"`
		} `json:"turn_list"`
	}
	l.json(&sh, "show", tk.Slug, "--json")
	if len(sh.TurnList) != 4 || sh.TurnList[1].Role != "agent" || sh.TurnList[1].Tools == nil || sh.TurnList[1].Tools.Failed != 2 ||
		sh.TurnList[3].FailureClass != "crash" || sh.TurnList[2].Content != "Also cover logout." || sh.TurnList[0].Seq != 1 {
		t.Errorf("show --json turn_list: %+v", sh.TurnList)
	}
}
