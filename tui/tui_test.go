package tui

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// quits reports whether cmd, run to its end through batches, quits.
func quits(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	switch msg := cmd().(type) {
	case tea.QuitMsg:
		return true
	case tea.BatchMsg:
		for _, c := range msg {
			if quits(c) {
				return true
			}
		}
	}
	return false
}

// Text of several characters is a key per character: "xyzq" still quits.
func TestTUIKeysInOneReadAreEachAKey(t *testing.T) {
	m := &Model{}
	if _, cmd := m.key(tea.KeyPressMsg{Code: 'x', Text: "xyzq"}); !quits(cmd) {
		t.Fatal("q in a run of keys did not quit")
	}
	if _, cmd := m.key(tea.KeyPressMsg{Code: 'x', Text: "xyz"}); quits(cmd) {
		t.Fatal("xyz quit")
	}
	if _, cmd := m.Update(tea.PasteMsg{Content: "qq"}); quits(cmd) {
		t.Fatal("a pasted q quit")
	}
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}); !quits(cmd) {
		t.Fatal("ctrl+c did not quit")
	}
}

// TestBellRingsWhenATaskStartsNeedingYou: the bell is for the moment a
// seen task comes to wait for a human, not for the first screen, not for
// a task that already waited, not for work going on.
func TestBellRingsWhenATaskStartsNeedingYou(t *testing.T) {
	for _, c := range []struct {
		name      string
		prev, now map[string]machine.Status
		want      bool
	}{
		{"first load", nil, map[string]machine.Status{"a": machine.Blocked}, false},
		{"a turn ends", map[string]machine.Status{"a": machine.Working}, map[string]machine.Status{"a": machine.Blocked}, true},
		{"a turn ends in conflict", map[string]machine.Status{"a": machine.Working}, map[string]machine.Status{"a": machine.Conflict}, true},
		{"interrupted", map[string]machine.Status{"a": machine.Working}, map[string]machine.Status{"a": machine.Interrupted}, true},
		{"conflict resolved into blocked", map[string]machine.Status{"a": machine.Conflict}, map[string]machine.Status{"a": machine.Blocked}, false},
		{"a new task appears blocked", map[string]machine.Status{}, map[string]machine.Status{"a": machine.Blocked}, false},
		{"work starts", map[string]machine.Status{"a": machine.Blocked}, map[string]machine.Status{"a": machine.Working}, false},
	} {
		if got := NewlyNeedsYou(c.prev, c.now); got != c.want {
			t.Errorf("%s: rang %v, want %v", c.name, got, c.want)
		}
	}
}

// tuiTestModel is a model on a screen of w x h with tasks listed.
func tuiTestModel(w, h int, tasks ...*task.Summary) *Model {
	m := &Model{width: w, height: h, tasks: tasks, follow: true}
	m.refilter()
	return m
}

func press(m *Model, keys ...string) tea.Cmd {
	var last tea.Cmd
	for _, k := range keys {
		var msg tea.KeyPressMsg
		switch k {
		case "enter":
			msg = tea.KeyPressMsg{Code: tea.KeyEnter}
		case "esc":
			msg = tea.KeyPressMsg{Code: tea.KeyEscape}
		case "backspace":
			msg = tea.KeyPressMsg{Code: tea.KeyBackspace}
		case "end":
			msg = tea.KeyPressMsg{Code: tea.KeyEnd}
		case "pgup":
			msg = tea.KeyPressMsg{Code: tea.KeyPgUp}
		case "tab":
			msg = tea.KeyPressMsg{Code: tea.KeyTab}
		default:
			r := []rune(k)
			msg = tea.KeyPressMsg{Code: r[0], Text: k}
			if len(r) == 1 && unicode.IsUpper(r[0]) {
				msg = tea.KeyPressMsg{Code: unicode.ToLower(r[0]), ShiftedCode: r[0], Mod: tea.ModShift, Text: k}
			}
		}
		_, last = m.Update(msg)
	}
	return last
}

func sampleTasks() []*task.Summary {
	return []*task.Summary{
		{ID: "1", Slug: "fix-login", Title: "Fix the login", Status: machine.Blocked},
		{ID: "2", Slug: "add-api", Title: "Add the API", Status: machine.Working, Pool: &task.PoolSpec{Labels: []string{"gpu"}}},
		{ID: "3", Slug: "old-idea", Title: "An old idea", Status: machine.Abandoned},
		{ID: "4", Slug: "new-thing", Title: "Something new", Status: machine.Backlog},
		{ID: "5", Slug: "stuck", Title: "Stuck", Status: machine.Interrupted},
	}
}

func slugs(m *Model) string {
	var out []string
	for _, r := range m.rows {
		out = append(out, r.Item.Slug)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// TestTUIFilters: f cycles all, needs me, working, finished; / matches
// slug, title or pool label; both at once narrow together.
func TestTUIFilters(t *testing.T) {
	m := tuiTestModel(120, 30, sampleTasks()...)
	for _, want := range []string{
		"add-api fix-login new-thing stuck", // all: open tasks
		"fix-login stuck",                   // needs me
		"add-api",                           // working
		"old-idea",                          // finished
		"add-api fix-login new-thing stuck", // all again
	} {
		if got := slugs(m); got != want {
			t.Fatalf("showing %s: %q, want %q", showNames[m.show], got, want)
		}
		press(m, "f")
	}
	// needs me
	for text, want := range map[string]string{"LOGIN": "fix-login", "stu": "stuck", "api": ""} {
		press(m, "/")
		m.bar.prompt.input.SetValue("")
		press(m, text, "enter")
		if got := slugs(m); got != want {
			t.Errorf("needs me, /%s: %q, want %q", text, got, want)
		}
	}
	m.show, m.filter = showAll, ""
	press(m, "/", "gpu", "enter")
	if got := slugs(m); got != "add-api" || m.selected != "2" {
		t.Errorf("/gpu: %q (selected %s), want add-api by its pool label", got, m.selected)
	}
	if !strings.Contains(m.screen(), "/gpu") {
		t.Errorf("the header does not say the filter:\n%s", m.screen())
	}
	m.all, m.filter = true, ""
	m.refilter()
	if got := slugs(m); got != "add-api fix-login new-thing old-idea stuck" {
		t.Errorf("--all: %q", got)
	}
}

// TestTUIFollowAndScroll: the log pane follows its newest line; any
// scroll up leaves follow mode, End and F come back to it.
func TestTUIFollowAndScroll(t *testing.T) {
	m := tuiTestModel(120, 20, sampleTasks()[0])
	for i := 1; i <= 100; i++ {
		m.preview = append(m.preview, fmt.Sprintf("line %d", i))
	}
	if s := m.screen(); !strings.Contains(s, "line 100") || strings.Contains(s, "line 50 ") {
		t.Fatalf("following, the pane does not end on the newest line:\n%s", s)
	}
	m.preview = append(m.preview, "line 101")
	if !strings.Contains(m.screen(), "line 101") || !m.follow {
		t.Fatal("a new line was not followed")
	}
	// The list has the keys: k moves the selection, not the pane.
	press(m, "k")
	if !m.follow {
		t.Fatal("k in the list left follow mode")
	}
	press(m, "tab", "k")
	if m.follow || !strings.Contains(m.screen(), "line 100") || strings.Contains(m.screen(), "line 101") {
		t.Fatalf("k in the pane: follow %v\n%s", m.follow, m.screen())
	}
	m.preview = append(m.preview, "line 102")
	if strings.Contains(m.screen(), "line 102") {
		t.Fatal("scrolled up, the pane still jumped to the newest line")
	}
	press(m, "pgup", "pgup")
	if s := m.screen(); strings.Contains(s, "line 100") {
		t.Fatalf("PgUp did not scroll:\n%s", s)
	}
	press(m, "g")
	if !strings.Contains(m.screen(), "line 1 ") {
		t.Fatalf("g did not go to the top:\n%s", m.screen())
	}
	press(m, "end")
	if !m.follow || !strings.Contains(m.screen(), "line 102") {
		t.Fatal("End did not come back to follow mode")
	}
	press(m, "F")
	if m.follow {
		t.Fatal("F did not leave follow mode")
	}
	m.preview = append(m.preview, "line 103")
	press(m, "F")
	if !m.follow || !strings.Contains(m.screen(), "line 103") {
		t.Fatal("F did not follow again")
	}
}

// TestTUITurnRulesAndWrap: a turn header becomes a rule across the
// pane; a long line of output wraps instead of being cut.
func TestTUITurnRulesAndWrap(t *testing.T) {
	m := tuiTestModel(120, 30, sampleTasks()[0])
	long := "error: " + strings.Repeat("word ", 30) + "END"
	m.preview = []string{agent.TurnRule + "1 (start) · 2026-01-01 ──", "hello", long}
	w, _ := m.paneSize()
	lines := m.paneLines(w)
	if len([]rune(lines[0])) != w || !strings.HasSuffix(lines[0], "──────") {
		t.Errorf("the turn rule is not as wide as the pane (%d): %q", w, lines[0])
	}
	joined := strings.Join(lines[2:], " ")
	if len(lines) < 4 || !strings.Contains(joined, "END") || strings.Contains(joined, "…") {
		t.Errorf("the long line was not wrapped whole: %q", lines)
	}
}

func TestWrap(t *testing.T) {
	s := "reject fix-login: the task never started, so there is no work to reject; use lazy close"
	got := wrap(s, 30)
	for _, l := range got {
		if len([]rune(l)) > 30 {
			t.Errorf("a line wider than 30: %q", l)
		}
	}
	if strings.Join(got, " ") != s {
		t.Errorf("wrapping lost text: %q", got)
	}
	if got := wrap(strings.Repeat("x", 25), 10); len(got) != 3 || got[2] != "xxxxx" {
		t.Errorf("a word longer than the width: %q", got)
	}
	if got := wrap("a\nb", 10); len(got) != 2 {
		t.Errorf("newlines: %q", got)
	}
}

// TestTUIStatusShowsWholeErrorsEscaped: an action's error is wrapped in
// full in the status line, and text from records never reaches the
// terminal raw.
func TestTUIStatusShowsWholeErrorsEscaped(t *testing.T) {
	m := tuiTestModel(40, 30, sampleTasks()...)
	m.Update(tuiDone{what: "unblock fix-login", err: errors.New("the budget of fix-login ($5.00) is spent: raise it with lazy unblock fix-login --budget +5\x1b[2J")})
	s := m.screen()
	if !strings.Contains(strings.Join(strings.Fields(s), " "), "lazy unblock fix-login --budget +5") || strings.Contains(s, "\x1b[2J") {
		t.Fatalf("the error is not whole, or not escaped:\n%q", s)
	}
	for _, l := range strings.Split(s, "\n") {
		if n := len([]rune(l)); n > 40 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
	m.Update(tuiDone{what: "stop add-api", out: "Stopped add-api: now blocked"})
	if !strings.Contains(m.screen(), "Stopped add-api: now blocked") || m.bar.statusBad {
		t.Error("a success is not confirmed in the status line")
	}
}

// TestTUIPrompts: the keys that need words open a prompt on the bottom
// line; a prompt takes every key as text (q does not quit); reject,
// close and accept go ahead only on y.
func TestTUIPrompts(t *testing.T) {
	m := tuiTestModel(120, 30, sampleTasks()...)
	m.selected = "1"
	press(m, "r")
	if m.bar.prompt == nil || !strings.Contains(m.bar.prompt.label, "reject fix-login: reason") {
		t.Fatalf("r opened %+v", m.bar.prompt)
	}
	if cmd := press(m, "q", "u", "x", "backspace", "i", "t"); quits(cmd) {
		t.Fatal("q in a prompt quit")
	}
	m.Update(tea.PasteMsg{Content: " now"})
	if got := m.bar.prompt.value(); got != "quit now" {
		t.Fatalf("typed %q", got)
	}
	press(m, "enter")
	if m.bar.prompt == nil || !m.bar.prompt.confirm || !strings.Contains(m.screen(), "Reject fix-login? Its work is not merged. y/N") {
		t.Fatalf("no confirmation after the reason:\n%s", m.screen())
	}
	if cmd := press(m, "n"); cmd != nil || m.bar.prompt != nil || m.bar.status != "Not rejected fix-login" {
		t.Fatalf("n: status %q, prompt %+v", m.bar.status, m.bar.prompt)
	}
	press(m, "c", "enter")
	if cmd := press(m, "y"); cmd == nil || m.bar.status != "Closing fix-login…" {
		t.Fatalf("c, y: status %q", m.bar.status)
	}
	press(m, "A")
	if m.bar.prompt == nil || !m.bar.prompt.confirm {
		t.Fatal("A did not ask first")
	}
	if cmd := press(m, "esc"); cmd != nil || m.bar.status != "Not accepted fix-login" {
		t.Fatalf("esc on accept: %q", m.bar.status)
	}
	press(m, "u", "enter")
	if m.bar.prompt != nil || !m.bar.statusBad || !strings.Contains(m.bar.status, "feedback is empty") {
		t.Fatalf("empty feedback: %q", m.bar.status)
	}
	press(m, "u", "also logout")
	if cmd := press(m, "enter"); cmd == nil || m.bar.status != "Unblocking fix-login…" {
		t.Fatalf("u: %q", m.bar.status)
	}
	// n asks a title, then a goal.
	press(m, "n", "enter")
	if m.bar.prompt != nil || !strings.Contains(m.bar.status, "needs a title") {
		t.Fatalf("n with no title: %q", m.bar.status)
	}
	press(m, "n", "Fix it", "enter")
	if m.bar.prompt == nil || !strings.Contains(m.bar.prompt.label, "goal") {
		t.Fatalf("no goal prompt after the title: %+v", m.bar.prompt)
	}
	if cmd := press(m, "enter"); cmd == nil || m.bar.status != "Creating Fix it…" {
		t.Fatalf("n: %q", m.bar.status)
	}
	// ? shows every key; any key closes it.
	press(m, "?")
	if !strings.Contains(m.screen(), "F  follow the newest output") {
		t.Fatalf("? shows no help:\n%s", m.screen())
	}
	press(m, "j")
	if m.help || m.selected != "1" {
		t.Fatal("the key that closed the help also acted")
	}
}

// S asks how many attempts and which agents; a bad answer is one
// sentence and starts nothing; B asks how much to raise a budget.
func TestTUIAttemptsAndBudgetPrompts(t *testing.T) {
	m := tuiTestModel(160, 30, sampleTasks()...)
	m.selected = "1"
	press(m, "S")
	if m.bar.prompt == nil || !strings.Contains(m.bar.prompt.label, "how many (2-8)") || m.bar.prompt.value() != "2" {
		t.Fatalf("S opened %+v", m.bar.prompt)
	}
	press(m, "backspace", "9", "enter")
	if cmd := press(m); cmd != nil || m.bar.prompt != nil || !m.bar.statusBad || !strings.Contains(m.bar.status, "--attempts 9") {
		t.Fatalf("9 attempts: status %q", m.bar.status)
	}
	press(m, "S", "backspace", "3", " ", "c", "l", "a", "u", "d", "e", ",", "e", "x", "e", "c")
	if cmd := press(m, "enter"); cmd == nil || m.bar.status != "Starting 3 attempts of fix-login…" {
		t.Fatalf("3 attempts: status %q", m.bar.status)
	}
	press(m, "B")
	if m.bar.prompt == nil || m.bar.prompt.value() != "+5" || !strings.Contains(m.bar.prompt.label, "raise the budget") {
		t.Fatalf("B opened %+v", m.bar.prompt)
	}
	if cmd := press(m, "enter"); cmd == nil || m.bar.status != "Raising the budget of fix-login…" {
		t.Fatalf("B: status %q", m.bar.status)
	}
	for in, want := range map[string]string{"3 claude,codex": "", "2": "", "": "give a number", "x": "not a number", "1": "2 to", "3 a b": "give a number"} {
		_, _, err := parseAttemptsPrompt(in)
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	if n, agents, _ := parseAttemptsPrompt(" 3  claude,,codex "); n != 3 || len(agents) != 2 || agents[1] != "codex" {
		t.Errorf("parsed %d %v", n, agents)
	}
}

// TestTUIGroupPaneComparesAttempts: with a group selected, the pane
// shows its attempts compared as lazy show does (agent and model,
// status, cost, gate, diff stat), not an empty agent log, each line
// through the terminal escaper; d still switches to the diff pane.
func TestTUIGroupPaneComparesAttempts(t *testing.T) {
	group := &task.Summary{ID: "g", Slug: "two-ways", Title: "Two ways", Status: machine.Backlog, Attempts: []string{"a1", "a2"}}
	m := tuiTestModel(160, 30, group)
	if !m.comparing() {
		t.Fatal("a selected group's pane does not compare its attempts")
	}
	v := &attempts.Comparison{Group: "two-ways", Usage: &task.Usage{CostUSD: 0.75}, Attempts: []attempts.Attempt{
		{K: 1, ID: "a1", Slug: "two-ways-a1", Agent: "claude", Model: "opus\x1b[2J", Status: machine.Blocked,
			Usage: &task.Usage{CostUSD: 0.25}, Gate: &task.GateSummary{State: task.GateFailed}, Diff: &worktree.DiffStat{Files: 1, Additions: 3}},
		{K: 2, ID: "a2", Slug: "two-ways-a2", Agent: "codex", Status: machine.Working, Usage: &task.Usage{InputTokens: 300, OutputTokens: 30}},
	}}
	m.preview = attemptPaneLines(v)
	screen := m.screen()
	for _, want := range []string{"two-ways — attempts", "Attempts (2; spent $0.7500", "K  SLUG", "two-ways-a1", "claude --model opus", "$0.2500", "failed", "1 file, +3 -0",
		"two-ways-a2", "codex", "working", "unpriced", "lazy accept two-ways --attempt K"} {
		if !strings.Contains(screen, want) {
			t.Fatalf("the pane lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "\x1b[2J") {
		t.Fatal("a model name reached the terminal unescaped")
	}
	press(m, "d")
	if m.comparing() || m.pane != paneDiff {
		t.Fatal("d on a group did not switch to the diff pane")
	}
	if m2 := tuiTestModel(160, 30, sampleTasks()[0]); m2.comparing() {
		t.Fatal("a task that is not a group compares attempts")
	}
}

// key is one key press: a code with modifiers, or text.
func key(code rune, mod tea.KeyMod) tea.KeyPressMsg { return tea.KeyPressMsg{Code: code, Mod: mod} }

// TestTUIPromptEditsLikeALineEditor: the prompt is a line editor (bubbles'
// textinput): the cursor moves and text goes in where it is, ctrl+w
// deletes a word, ctrl+u what is before the cursor, home and end move to
// the ends; the bottom line shows a block where the cursor is; a chord
// types nothing, and ctrl+v runs no clipboard program.
func TestTUIPromptEditsLikeALineEditor(t *testing.T) {
	m := tuiTestModel(120, 30, sampleTasks()...)
	var got string
	m.bar.ask("feedback for fix-login", "", "Not unblocked", func(text string) tea.Cmd { got = text; return nil })
	press(m, "fix login")
	for range 5 {
		m.Update(key(tea.KeyLeft, 0))
	}
	press(m, "t", "h", "e", " ")
	if v := m.bar.prompt.value(); v != "fix the login" {
		t.Fatalf("typed mid-line: %q", v)
	}
	if !strings.Contains(m.screen(), "feedback for fix-login: fix the █login") {
		t.Fatalf("the cursor is not drawn where it is:\n%s", m.screen())
	}
	m.Update(key('x', tea.ModAlt))
	m.Update(key('v', tea.ModCtrl))
	if v := m.bar.prompt.value(); v != "fix the login" {
		t.Fatalf("a chord typed: %q", v)
	}
	m.Update(key(tea.KeyEnd, 0))
	m.Update(key('w', tea.ModCtrl))
	if v := m.bar.prompt.value(); v != "fix the " {
		t.Fatalf("ctrl+w at the end: %q", v)
	}
	m.Update(key(tea.KeyHome, 0))
	press(m, ">")
	m.Update(key(tea.KeyRight, 0))
	m.Update(key('u', tea.ModCtrl))
	if v := m.bar.prompt.value(); v != "ix the " {
		t.Fatalf("ctrl+u after the second character: %q", v)
	}
	press(m, "enter")
	if got != "ix the " || m.bar.prompt != nil {
		t.Fatalf("enter gave %q (prompt %v)", got, m.bar.prompt)
	}
}

// TestTUIPastedTextKeepsItsLines: a paste into a prompt keeps its line
// breaks (CRLF and CR read as one) and tabs, shown as ⏎ on the one line,
// and given whole to the action; escape sequences in it never reach the
// screen.
func TestTUIPastedTextKeepsItsLines(t *testing.T) {
	m := tuiTestModel(120, 30, sampleTasks()...)
	var got string
	m.bar.ask("feedback for fix-login", "", "", func(text string) tea.Cmd { got = text; return nil })
	m.Update(tea.PasteMsg{Content: "first\r\nsecond\tcol\rthird \x1b[2J\u202eend\ue00a"})
	screen := m.screen()
	if !strings.Contains(screen, "first⏎second col⏎third [2J\\u202eend█") || strings.Contains(screen, "\x1b[2J") || strings.Contains(screen, "\u202e") {
		t.Fatalf("the pasted text on the bottom line:\n%q", screen)
	}
	press(m, "enter")
	if got != "first\nsecond\tcol\nthird [2J\u202eend" {
		t.Fatalf("the action got %q", got)
	}
}

// TestTUIPromptLineFitsWideText: a long text of wide runes keeps the
// bottom line within the terminal's width, the cursor's end in sight.
func TestTUIPromptLineFitsWideText(t *testing.T) {
	m := tuiTestModel(40, 20, sampleTasks()...)
	m.bar.ask("title", "", "", func(string) tea.Cmd { return nil })
	m.Update(tea.PasteMsg{Content: strings.Repeat("日本語のタイトル", 6) + "終"})
	for _, l := range strings.Split(m.screen(), "\n") {
		if n := ansi.StringWidth(l); n > 40 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
	if !strings.Contains(m.screen(), "…") || !strings.Contains(m.screen(), "終█") {
		t.Errorf("the end of the text is not in sight:\n%s", m.screen())
	}
}

// TestTUIPaneScrollsInItsViewport: the pane (bubbles' viewport) stops at
// its last page however far it is paged down, shows "(nothing yet)"
// while there is no output, and wraps a line of wide runes within its
// width.
func TestTUIPaneScrollsInItsViewport(t *testing.T) {
	m := tuiTestModel(60, 20, sampleTasks()[0])
	if !strings.Contains(m.screen(), "(nothing yet)") {
		t.Fatalf("an empty pane:\n%s", m.screen())
	}
	for i := 1; i <= 40; i++ {
		m.preview = append(m.preview, fmt.Sprintf("line %d", i))
	}
	m.preview = append(m.preview, strings.Repeat("出力", 50))
	press(m, "tab", "g")
	if s := m.screen(); !strings.Contains(s, "line 1 ") || strings.Contains(s, "line 40") {
		t.Fatalf("g: not at the top:\n%s", s)
	}
	for range 20 {
		m.Update(tea.KeyPressMsg{Code: tea.KeyPgDown})
	}
	s := m.screen()
	if !strings.Contains(s, "出力出力") || strings.Contains(s, "line 1 ") {
		t.Fatalf("paged past the end, the pane does not show its last page:\n%s", s)
	}
	for _, l := range strings.Split(s, "\n") {
		if n := ansi.StringWidth(l); n > 60 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
	if m.follow {
		t.Error("paging down is not following")
	}
	press(m, "k")
	if !strings.Contains(m.screen(), "line 40") && !strings.Contains(m.screen(), "line 39") {
		t.Errorf("k did not scroll up a line:\n%s", m.screen())
	}
}

// TestPaintKeepsTheCutLine: the TUI line's painting (status, then the
// overlap mark, each in its style) must keep the cut line's text.
func TestPaintKeepsTheCutLine(t *testing.T) {
	plain := lipgloss.NewStyle()
	for _, line := range []string{"  a  blocked  ⚠ b (1 file)", "  a  bloc", "  a"} {
		if got := paint(line, "  a  ", "blocked", plain, plain); got != line {
			t.Errorf("paint(%q) = %q", line, got)
		}
	}
}

// TestTUIHeaderShowsTheQueueLanes: a merge queue split into lanes
// (lazy.gate.lanes) has lazy queue's lanes line in watch's header, the
// same words from the same function, after the target it lands on; a
// queue without lanes adds no line; a lane name from config that holds
// control bytes reaches the terminal escaped, never as a sequence.
func TestTUIHeaderShowsTheQueueLanes(t *testing.T) {
	now := time.Now()
	split := queue.View{Target: "main",
		Entries: []queue.Entry{
			{Slug: "fix-docs", State: queue.Waiting, Lane: "docs"},
			{Slug: "more-docs", State: queue.Gating, Lane: "docs"},
			{Slug: "evil", State: queue.Waiting, Lane: "ev\x1b]0;pwned\x07il"},
		},
		Left: []queue.Left{{Slug: "add-api", Outcome: queue.LeftLanded, Lane: "api", At: now}}}
	split.Lanes = queue.LaneSummary(split)
	plain := queue.View{Target: "release", Entries: []queue.Entry{{Slug: "bump", State: queue.Gating}}}
	plain.Lanes = queue.LaneSummary(plain)

	m := tuiTestModel(160, 30, sampleTasks()...)
	m.queues = []queue.View{plain, split}
	screen := m.screen()
	text := ansi.Strip(screen)
	lines := strings.Split(text, "\n")
	want := "Queue into main · " + render.Lanes(split.Lanes)
	if !strings.HasPrefix(lines[1], want) {
		t.Fatalf("the header's second line is %q, want %q:\n%s", lines[1], want, text)
	}
	for _, w := range []string{"Lanes: lane docs: 2 entries, gating;", "lane api: landed"} {
		if !strings.Contains(lines[1], w) {
			t.Errorf("the lanes line %q does not say %q", lines[1], w)
		}
	}
	if strings.Contains(text, "release") || strings.Count(text, "Lanes:") != 1 {
		t.Errorf("a queue without lanes shows a lanes line:\n%s", text)
	}
	if strings.Contains(screen, "\x1b]") || strings.Contains(screen, "\x07") {
		t.Errorf("a lane name's control bytes reached the screen: %q", lines[1])
	}
	if got := strings.Count(text, "\n") + 1; got != m.height {
		t.Errorf("the screen is %d lines with the lanes line, want the terminal's %d", got, m.height)
	}

	if l := render.Lanes("lane d\x1b[2Jocs: 1 entry, gating"); strings.Contains(l, "\x1b") {
		t.Errorf("render.Lanes let an escape through: %q", l)
	}
	m.queues = []queue.View{plain}
	if text := ansi.Strip(m.screen()); strings.Contains(text, "Lanes:") || strings.Count(text, "\n")+1 != m.height {
		t.Errorf("with no lanes the header changed:\n%s", text)
	}
}
