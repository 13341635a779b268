// Package tui is lazy watch on a terminal: a full-screen Bubble Tea
// program with the task tree, the selected task's live agent output, its
// diff or its attempts compared, and keys for the review loop (create,
// start, unblock, ask, accept, reject, close, stop). What it reads and
// does goes through a Backend the CLI implements over the same code its
// commands run, so the surfaces stay apart: this package imports no
// other surface.
package tui

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
)

// The TUI's panes.
const (
	paneLog = iota
	paneDiff
)

// Where the keys go: the task list, or the pane on the right (which
// they scroll).
const (
	focusList = iota
	focusPane
)

// The status filters f cycles through.
const (
	showAll = iota // what watch lists: open tasks (with --all, finished too)
	showNeedsMe
	showWorking
	showFinished
	showFilters
)

var showNames = [showFilters]string{"all", "needs me", "working", "finished"}

// Model is lazy watch on a terminal: the task tree on the left (or
// top, when narrow), the selected task's live agent output or diff on the
// right, keys for the review loop. Every action goes through the Backend,
// the same operations the CLI commands use, and says how it ended in the
// status line. It composes two sub-models: the bottom of the screen
// (statusBar: the status line and the prompt) and the actions its keys
// start (actionRunner).
type Model struct {
	b      Backend // nil in tests of the screen alone
	ctx    context.Context
	all    bool
	styles tuiStyles
	// run runs the actions the keys start.
	run actionRunner

	width, height int
	// tasks is every task read, finished ones included; rows is those
	// the filters let through, in tree order.
	tasks []*task.Summary
	rows  []render.TreeRow
	// overlaps is each listed task's overlaps (Backend.Load), read
	// with the list through overlapCache.
	overlaps     map[string]review.TaskOverlaps
	overlapCache *review.OverlapCache
	// queues are this machine's merge queues (Backend.Queues), read with
	// the list: the header shows the lanes of each split into lanes.
	queues   []queue.View
	selected string // task id, kept across refreshes
	pane     int
	focus    int
	preview  []string
	// scroller scrolls the pane (bubbles' viewport): its offset is the
	// first line shown; with follow the pane shows the newest lines
	// instead, whatever the offset says.
	scroller viewport.Model
	follow   bool
	// filter is the text / matches (slug, title, pool label); show is
	// the status filter f cycles.
	filter string
	show   int
	// bar is the bottom of the screen: the status line and the open
	// prompt; help is the ? overlay.
	bar     statusBar
	help    bool
	prev    map[string]machine.Status
	bell    bool // ring the terminal bell when a task starts needing a human
	loading *sync.Mutex
}

type tuiStyles struct {
	header, dim, sel, border, key, overlap, bad, plain lipgloss.Style
	status                                             map[machine.Status]lipgloss.Style
}

// newTUIStyles are the TUI's styles. They are written in full colour;
// Bubble Tea brings them down to what the terminal can show, or to none
// (see Run).
func newTUIStyles() tuiStyles {
	st := tuiStyles{
		header:  lipgloss.NewStyle().Bold(true),
		dim:     lipgloss.NewStyle().Faint(true),
		sel:     lipgloss.NewStyle().Reverse(true),
		border:  lipgloss.NewStyle().Border(lipgloss.NormalBorder(), false, false, false, true).PaddingLeft(1),
		key:     lipgloss.NewStyle().Bold(true),
		overlap: lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		bad:     lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
		plain:   lipgloss.NewStyle(),
		status:  map[machine.Status]lipgloss.Style{},
	}
	colours := map[machine.Status]string{
		machine.Working: "6", machine.Blocked: "3", machine.Conflict: "1", machine.Interrupted: "1",
		machine.Pairing: "5", machine.Merging: "6", machine.Submitted: "4", machine.Complete: "2", machine.Abandoned: "8",
	}
	for s, c := range colours {
		st.status[s] = lipgloss.NewStyle().Foreground(lipgloss.Color(c))
	}
	st.status[machine.Blocked] = st.status[machine.Blocked].Bold(true)
	return st
}

// Messages.
type (
	tuiRefresh struct{} // the daemon reported something
	tuiTick    struct{}
	tuiLoaded  struct {
		tasks    []*task.Summary
		overlaps map[string]review.TaskOverlaps
		queues   []queue.View
	}
	tuiPreview struct {
		id    string
		pane  int
		lines []string
	}
	// tuiDone is how an action ended: what it was ("reject fix-login"),
	// and the sentence that confirms it or the error that stopped it.
	tuiDone struct {
		what string
		err  error
		out  string
	}
	// tuiProgress is a line of an action still running.
	tuiProgress struct{ line string }
	tuiErr      struct{ err error }
)

// Init loads the list and starts the one-second tick.
func (m *Model) Init() tea.Cmd { return tea.Batch(m.load(), m.tick()) }

// tick refreshes once a second: the list reconciles (so a finished turn
// shows up without a daemon) and the preview follows the agent's log.
func (m *Model) tick() tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return tuiTick{} })
}

func (m *Model) load() tea.Cmd {
	return func() tea.Msg {
		// Loads overlap (the tick, a daemon event, an action's end): one
		// reconciles at a time.
		m.loading.Lock()
		defer m.loading.Unlock()
		tasks, overlaps, err := m.b.Load(m.ctx, m.overlapCache)
		if err != nil {
			return tuiErr{err}
		}
		return tuiLoaded{tasks: tasks, overlaps: overlaps, queues: m.b.Queues()}
	}
}

// needsYou reports whether a task in status st waits for a human.
func needsYou(st machine.Status) bool { return st.IsBlocked() || st == machine.Interrupted }

// keep reports whether the filters let t through: the status filter,
// then the text, which matches the slug, the title or a pool label.
func (m *Model) keep(t *task.Summary) bool {
	switch m.show {
	case showNeedsMe:
		if !needsYou(t.Status) {
			return false
		}
	case showWorking:
		if t.Status != machine.Working && t.Status != machine.Merging && t.Status != machine.Pairing {
			return false
		}
	case showFinished:
		if !t.Status.IsTerminal() {
			return false
		}
	default:
		if !m.all && t.Status.IsTerminal() {
			return false
		}
	}
	q := strings.ToLower(strings.TrimSpace(m.filter))
	if q == "" {
		return true
	}
	hay := []string{t.Slug, t.Title}
	if t.Pool != nil {
		hay = append(hay, t.Pool.Labels...)
	}
	for _, h := range hay {
		if strings.Contains(strings.ToLower(h), q) {
			return true
		}
	}
	return false
}

// refilter puts the tasks the filters let through into rows, keeping
// the selection when it is still listed.
func (m *Model) refilter() {
	var kept []*task.Summary
	for _, t := range m.tasks {
		if m.keep(t) {
			kept = append(kept, t)
		}
	}
	m.rows = render.TreeOrder(kept, render.TaskLess("attention"))
	if m.current() == nil {
		m.selected = ""
		if len(m.rows) > 0 {
			m.selected = m.rows[0].Item.ID
		}
		m.preview = nil
		m.resetScroll()
	}
}

func (m *Model) current() *task.Summary {
	for _, r := range m.rows {
		if r.Item.ID == m.selected {
			return r.Item
		}
	}
	return nil
}

func (m *Model) index() int {
	for i, r := range m.rows {
		if r.Item.ID == m.selected {
			return i
		}
	}
	return 0
}

// comparing reports whether the pane compares the selected group's
// attempts: a group never runs, so it has no agent output of its own,
// and what a human looks at it for is how its attempts compare.
func (m *Model) comparing() bool {
	t := m.current()
	return t != nil && m.pane == paneLog && len(t.Attempts) > 0
}

// loadPreview reads the selected task's log tail or its diff, or for a
// group its attempts compared.
func (m *Model) loadPreview() tea.Cmd {
	t := m.current()
	if t == nil || m.b == nil {
		return nil
	}
	id, pane, comparing := t.ID, m.pane, m.comparing()
	return func() tea.Msg {
		var lines []string
		switch {
		case pane == paneDiff:
			lines = m.b.Diff(m.ctx, id)
		case comparing:
			lines = attemptLines(m.b.Attempts(m.ctx, id))
		default:
			lines = m.b.LogTail(id, 2000)
		}
		return tuiPreview{id: id, pane: pane, lines: lines}
	}
}

// Update is the model after msg: a key, the terminal's size, a load,
// a preview, an action's progress or end.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case tuiTick:
		return m, tea.Batch(m.load(), m.tick())
	case tuiRefresh:
		return m, m.load()
	case tuiErr:
		m.bar.err = msg.err
		return m, nil
	case tuiLoaded:
		m.bar.err = nil
		var bell tea.Cmd
		now := map[string]machine.Status{}
		for _, t := range msg.tasks {
			if m.all || !t.Status.IsTerminal() {
				now[t.ID] = t.Status
			}
		}
		if m.bell && NewlyNeedsYou(m.prev, now) {
			bell = ringBell // a task just started needing a human
		}
		m.prev, m.tasks, m.overlaps, m.queues = now, msg.tasks, msg.overlaps, msg.queues
		m.refilter()
		return m, tea.Batch(bell, m.loadPreview())
	case tuiPreview:
		if msg.id == m.selected && msg.pane == m.pane {
			m.preview = msg.lines
		}
		return m, nil
	case tuiProgress:
		m.bar.status, m.bar.statusBad = msg.line, false
		return m, nil
	case tuiDone:
		m.bar.finished(msg)
		return m, tea.Batch(m.load(), m.loadPreview())
	case tea.PasteMsg:
		// A paste is text for an open prompt, never a command.
		if p := m.bar.prompt; p != nil && !p.confirm {
			p.paste(msg.Content)
		}
		return m, nil
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

func (m *Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if m.bar.prompt != nil {
		return m, m.bar.promptKey(k)
	}
	// Text of more than one character ("jjq", as an input method may
	// send it) is still a key per character.
	if runes := []rune(k.Text); len(runes) > 1 && k.Mod == 0 {
		var cmds []tea.Cmd
		for _, r := range runes {
			_, cmd := m.key(tea.KeyPressMsg{Code: r, Text: string(r)})
			cmds = append(cmds, cmd)
		}
		return m, tea.Batch(cmds...)
	}
	if m.help {
		// Any key closes the help; q and Ctrl-C still quit.
		m.help = false
		if s := k.String(); s != "q" && s != "ctrl+c" {
			return m, nil
		}
	}
	_, paneH := m.paneSize()
	page := max(1, paneH-2)
	switch k.String() {
	case "q", "ctrl+c":
		return m, tea.Quit
	case "esc":
		if m.focus == focusPane {
			m.focus = focusList
			return m, nil
		}
		return m, tea.Quit
	case "?":
		m.help = true
		return m, nil
	case "tab":
		m.focus = 1 - m.focus
		return m, nil
	case "d":
		m.pane = 1 - m.pane
		m.preview = nil
		m.resetScroll()
		return m, m.loadPreview()
	case "pgup":
		m.scroll(-page)
		return m, nil
	case "pgdown", "space":
		m.scroll(page)
		return m, nil
	case "F":
		m.follow = !m.follow
		if !m.follow {
			m.syncPane()
			m.scroller.GotoBottom()
		}
		return m, nil
	case "f":
		m.show = (m.show + 1) % showFilters
		m.refilter()
		m.bar.say("showing " + showNames[m.show] + " tasks")
		return m, m.loadPreview()
	case "/":
		m.bar.ask("filter (slug, title or label; empty for all)", m.filter, "", func(text string) tea.Cmd {
			m.filter = strings.TrimSpace(text)
			m.refilter()
			return m.loadPreview()
		})
		return m, nil
	case "n":
		m.createPrompt()
		return m, nil
	}
	if m.focus == focusPane {
		switch k.String() {
		case "up", "k":
			m.scroll(-1)
			return m, nil
		case "down", "j":
			m.scroll(1)
			return m, nil
		case "home", "g":
			m.follow = false
			m.scroller.GotoTop()
			return m, nil
		case "end", "G":
			m.follow = m.pane == paneLog
			m.syncPane()
			m.scroller.GotoBottom()
			return m, nil
		}
	} else {
		move := func(d int) (tea.Model, tea.Cmd) {
			if len(m.rows) == 0 {
				return m, nil
			}
			i := min(max(m.index()+d, 0), len(m.rows)-1)
			if m.rows[i].Item.ID != m.selected {
				m.selected, m.preview = m.rows[i].Item.ID, nil
				m.resetScroll()
			}
			return m, m.loadPreview()
		}
		switch k.String() {
		case "up", "k":
			return move(-1)
		case "down", "j":
			return move(1)
		case "home", "g":
			return move(-len(m.rows))
		case "end", "G":
			return move(len(m.rows))
		}
	}
	t := m.current()
	if t == nil {
		return m, nil
	}
	return m, m.actionKey(k.String(), t)
}

// actionKey starts the action key stands for on task t: at once, or
// after the prompt it opens.
func (m *Model) actionKey(key string, t *task.Summary) tea.Cmd {
	slug := termsafe.String(t.Slug)
	switch key {
	case "u", "enter":
		m.bar.ask("feedback for "+slug, "", "Not unblocked "+slug, func(text string) tea.Cmd {
			if strings.TrimSpace(text) == "" {
				m.bar.bad("Not unblocked " + slug + ": the feedback is empty (type what the agent should do next)")
				return nil
			}
			m.bar.say("Unblocking " + slug + "…")
			return m.run.unblock(t, text)
		})
	case "e":
		return m.run.interactive("unblock", t.ID)
	case "p":
		return m.run.interactive("pair", t.ID)
	case "a":
		m.bar.ask("question for "+slug+"'s agent", "", "Not asked", func(text string) tea.Cmd {
			if strings.TrimSpace(text) == "" {
				m.bar.bad("Not asked: the question is empty")
				return nil
			}
			m.bar.say("Asking " + slug + "…")
			return m.run.askAgent(t, text)
		})
	case "r", "c":
		verb, past, ing := "reject", "rejected", "Rejecting"
		if key == "c" {
			verb, past, ing = "close", "closed", "Closing"
		}
		m.bar.ask(verb+" "+slug+": reason (optional)", "", "Not "+past+" "+slug, func(reason string) tea.Cmd {
			m.bar.confirm(fmt.Sprintf("%s %s? Its work is not merged. y/N", capitalize(verb), slug), "Not "+past+" "+slug, func() tea.Cmd {
				m.bar.say(ing + " " + slug + "…")
				return m.run.end(t, verb, reason)
			})
			return nil
		})
	case "A":
		m.bar.confirm(fmt.Sprintf("Accept %s (runs the merge gate, then merges)? y/N", slug), "Not accepted "+slug, func() tea.Cmd {
			m.bar.say("Accepting " + slug + "…")
			return m.run.accept(t)
		})
	case "s":
		m.bar.say("Starting " + slug + "…")
		return m.run.start(t)
	case "S":
		m.bar.ask("try "+slug+" several ways: how many (2-8), then the agents to cycle, e.g. 3 claude,codex", "2", "Not started "+slug, func(text string) tea.Cmd {
			n, agents, err := parseAttemptsPrompt(text)
			if err != nil {
				m.bar.bad("Not started " + slug + ": " + err.Error())
				return nil
			}
			m.bar.say(fmt.Sprintf("Starting %d attempts of %s…", n, slug))
			return m.run.startAttempts(t, n, agents)
		})
	case "B":
		m.bar.ask("raise the budget that holds "+slug+": +N adds N dollars, N sets it", "+5", "Budget of "+slug+" unchanged", func(text string) tea.Cmd {
			m.bar.say("Raising the budget of " + slug + "…")
			return m.run.raiseBudget(t, text)
		})
	case "x":
		m.bar.say("Stopping " + slug + "…")
		return m.run.stop(t)
	}
	return nil
}

// createPrompt asks for a title, then an optional goal, then creates.
func (m *Model) createPrompt() {
	m.bar.ask("new task: title", "", "Nothing created", func(title string) tea.Cmd {
		title = strings.TrimSpace(title)
		if title == "" {
			m.bar.bad("Nothing created: a task needs a title")
			return nil
		}
		m.bar.ask("goal for the agent (optional; enter to skip)", "", "Nothing created", func(goal string) tea.Cmd {
			m.bar.say("Creating " + termsafe.String(title) + "…")
			return m.run.create(title, goal)
		})
		return nil
	})
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// resetScroll is the scroll of a pane just opened: the log follows its
// newest lines, a diff starts at its top.
func (m *Model) resetScroll() {
	m.scroller.SetYOffset(0)
	m.follow = m.pane == paneLog
}

// syncPane gives the pane's viewport what the pane shows now (its size
// and lines), so that a scroll stops at its last page.
func (m *Model) syncPane() {
	w, h := m.paneSize()
	m.scroller.SetWidth(w)
	m.scroller.SetHeight(max(h-1, 1))
	m.scroller.SetContentLines(m.paneContent(w))
}

// scroll moves the pane by d lines; scrolling up leaves follow mode
// (End or F comes back to it).
func (m *Model) scroll(d int) {
	m.syncPane()
	if m.follow {
		m.scroller.GotoBottom()
	}
	if d < 0 {
		m.follow = false
		m.scroller.ScrollUp(-d)
		return
	}
	m.scroller.ScrollDown(d)
}

// NewlyNeedsYou reports whether a task seen before in prev now has a
// status that waits for a human (blocked, conflict, interrupted) it did
// not have: the moment lazy watch rings the bell. The first load rings
// nothing: what needed you before you looked is on the screen.
func NewlyNeedsYou(prev, now map[string]machine.Status) bool {
	waits := func(st machine.Status) bool { return st.IsBlocked() || st == machine.Interrupted }
	for id, st := range now {
		if old, ok := prev[id]; ok && waits(st) && !waits(old) {
			return true
		}
	}
	return false
}

func ringBell() tea.Msg {
	_, _ = io.WriteString(os.Stdout, "\a")
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimPrefix(lines[len(lines)-1], "lazy: ")
}

// View is the whole screen, on the alternate screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.screen())
	v.AltScreen = true
	return v
}

// tuiKeys is the key help on the bottom line; ? shows tuiHelp.
// It starts with ? so that a narrow terminal, which cuts it, still
// says where the rest is.
const tuiKeys = "? help  n new  s start  u unblock  a ask  A accept  r reject  c close  / filter  f status  d diff  q quit"

// tuiHelp is the ? overlay: every key.
var tuiHelp = []string{
	"Tasks (the list has the keys; tab moves them to the pane)",
	"  ↑ ↓ j k  select        g G home end  first / last",
	"  n  create a task (title, then an optional goal)",
	"  s  start a backlog task (the agent of lazy.agent / lazy.exec.command)",
	"  S  start attempts: N ways side by side, agents cycled (3 claude,codex)",
	"  B  raise the budget that holds a task over budget (+5), then u carries on",
	"  u  unblock with feedback (enter does too)    e  unblock in $EDITOR",
	"  a  ask the agent a read-only question; the answer shows here",
	"  A  accept: runs the merge gate and merges, after y",
	"  r  reject, with a reason, after y            c  close, the same",
	"  x  stop the running turn                     p  pair with the agent",
	"Filters",
	"  /  filter by text (slug, title, pool label)  f  status: all, needs me, working, finished",
	"The pane (agent output or diff; a group tried several ways: its attempts compared)",
	"  d  agent output / diff                       tab  keys to the pane and back (esc)",
	"  ↑ ↓ j k  scroll (pane focused)   PgUp PgDn  scroll   g G home end  top / bottom",
	"  F  follow the newest output (scrolling up leaves it; End comes back)",
	"",
	"  ?  this help (any key closes it)             q  quit",
}

// tuiLayout is where the list and the pane go.
type tuiLayout struct {
	wide         bool
	bodyH        int
	listW, listH int
	paneW, paneH int
}

func (m *Model) layout(footer string) tuiLayout {
	w, h := m.width, m.height
	l := tuiLayout{bodyH: max(3, h-2-len(m.laneLines())-strings.Count(footer, "\n"))}
	if w >= 100 {
		l.wide = true
		l.listW, l.listH = w*2/5, l.bodyH
		l.paneW, l.paneH = w-l.listW-2, l.bodyH
		return l
	}
	l.listW, l.listH = w, l.bodyH/2
	if n := len(m.rows) + 1; n < l.listH {
		l.listH = n
	}
	l.paneW, l.paneH = w, l.bodyH-l.listH-1
	return l
}

// paneSize is the pane's width and height, its title line included.
func (m *Model) paneSize() (int, int) {
	l := m.layout(m.bar.footer(m.width, m.height, m.styles))
	return max(l.paneW, 1), max(l.paneH, 2)
}

func (m *Model) screen() string {
	if m.width == 0 {
		return "loading…"
	}
	w := m.width
	need := 0
	for _, t := range m.tasks {
		if needsYou(t.Status) {
			need++
		}
	}
	title := fmt.Sprintf("lazy watch · %s · %d need you · %s", words.Count(len(m.rows), "task", "tasks"), need, time.Now().Format("15:04:05"))
	if m.show != showAll {
		title += " · showing " + showNames[m.show]
	}
	if m.filter != "" {
		title += " · /" + termsafe.String(m.filter)
	}
	header := m.styles.header.Render(render.Cut(title, w))
	for _, l := range m.laneLines() {
		header += "\n" + m.styles.dim.Render(render.Cut(l, w))
	}
	footer := m.bar.footer(m.width, m.height, m.styles)
	l := m.layout(footer)
	var body string
	switch {
	case m.help:
		var lines []string
		for _, h := range tuiHelp {
			lines = append(lines, render.Cut(h, w))
		}
		if len(lines) > l.bodyH {
			lines = lines[:l.bodyH]
		}
		body = strings.Join(lines, "\n")
	case l.wide:
		list := m.renderList(l.listW, l.listH)
		pane := m.styles.border.Render(m.renderPane(l.paneW, l.paneH))
		body = lipgloss.JoinHorizontal(lipgloss.Top, lipgloss.NewStyle().Width(l.listW).Render(list), pane)
	default:
		body = m.renderList(w, l.listH) + "\n" + strings.Repeat("─", w) + "\n" + m.renderPane(w, l.paneH)
	}
	// The footer stays at the bottom however short the list is.
	if n := strings.Count(body, "\n") + 1; n < l.bodyH {
		body += strings.Repeat("\n", l.bodyH-n)
	}
	return header + "\n" + body + "\n" + footer
}

// laneLines are the header's lines for the merge queues split into
// lanes, lazy queue's line for each (render.Lanes), after the target it
// lands on: "Queue into main · Lanes: lane docs: 2 entries, gating; lane
// api: landed". A queue without lanes adds nothing.
func (m *Model) laneLines() []string {
	var out []string
	for _, q := range m.queues {
		if l := render.Lanes(q.Lanes); l != "" {
			out = append(out, "Queue into "+termsafe.String(q.Target)+" · "+l)
		}
	}
	return out
}

// wrap breaks s into lines of at most w columns, at spaces where it can:
// an error is shown whole, never cut.
func wrap(s string, w int) []string {
	w = max(w, 1)
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(s, "\t", "    "), "\n") {
		r := []rune(line)
		for {
			// fit: how many runes fill w columns (a wide rune takes two).
			fit, cols := 0, 0
			for fit < len(r) && cols+runeWidth(r[fit]) <= w {
				cols += runeWidth(r[fit])
				fit++
			}
			if fit == len(r) {
				break
			}
			i := max(fit, 1) // a rune wider than the line still moves on
			for j := fit; j > fit/2; j-- {
				if r[j] == ' ' {
					i = j
					break
				}
			}
			out = append(out, strings.TrimRight(string(r[:i]), " "))
			r = r[i:]
			for len(r) > 0 && r[0] == ' ' {
				r = r[1:]
			}
		}
		out = append(out, string(r))
	}
	return out
}

// runeWidth is the terminal columns r takes.
func runeWidth(r rune) int {
	if r < utf8.RuneSelf {
		return 1
	}
	return render.TextWidth(string(r))
}

// renderList is the task tree, one task a line, the selection reversed.
func (m *Model) renderList(w, h int) string {
	if len(m.rows) == 0 {
		return m.styles.dim.Render("no open tasks (lazy create \"...\")")
	}
	// A model without a backend (in a test) has no markers to read.
	substate := func(*task.Summary) string { return "" }
	if m.b != nil {
		substate = m.b.Substate
	}
	first := 0
	if i := m.index(); i >= h {
		first = i - h + 1
	}
	var lines []string
	for i := first; i < len(m.rows) && len(lines) < h; i++ {
		t := m.rows[i].Item
		status := string(t.Status)
		if sub := substate(t); sub != "" {
			status += " (" + sub + ")"
		}
		marker := "  "
		if t.ID == m.selected {
			marker = "▸ "
		}
		text := marker + strings.Repeat("  ", m.rows[i].Depth) + termsafe.String(t.Slug) + "  "
		mark := ""
		if o := m.overlaps[t.ID]; !o.Empty() {
			mark = "  ⚠ " + o.Short()
		}
		mark += render.GateMark(t.Gate)
		plain := render.Cut(text+status+mark, w)
		if t.ID == m.selected {
			lines = append(lines, m.styles.sel.Render(plain))
			continue
		}
		lines = append(lines, paint(plain, text, status, m.styles.status[t.Status], m.styles.overlap))
	}
	return strings.Join(lines, "\n")
}

// paint colours a list line cut to the width: text as it is, then the
// status in its style, then the overlap mark in its own, each only as
// far as the cut line reaches.
func paint(line, text, status string, statusStyle, markStyle lipgloss.Style) string {
	r := []rune(line)
	a := min(len([]rune(text)), len(r))
	b := min(a+len([]rune(status)), len(r))
	out := string(r[:a])
	if b > a {
		out += statusStyle.Render(string(r[a:b]))
	}
	if len(r) > b {
		out += markStyle.Render(string(r[b:]))
	}
	return out
}

// paneLines is the pane's text as shown at width w: the agent's output
// wrapped (an error in it is read whole) with a rule at each turn, or
// the diff cut at the width, every line through the terminal escaper.
func (m *Model) paneLines(w int) []string {
	var out []string
	table := m.pane == paneDiff || m.comparing() // columns: cut, never wrapped
	for _, l := range m.preview {
		l = termsafe.String(l)
		if table {
			out = append(out, render.Cut(l, w))
			continue
		}
		if strings.HasPrefix(l, agent.TurnRule) {
			out = append(out, rule(l, w))
			continue
		}
		out = append(out, wrap(l, w)...)
	}
	return out
}

// rule pads a turn header with ─ to the width, so turns read apart.
func rule(l string, w int) string {
	l = render.Cut(l, w)
	if n := w - len([]rune(l)); n > 0 {
		l += strings.Repeat("─", n)
	}
	return l
}

// renderPane is the preview: the agent's output, newest last, or the
// diff, scrolled to top (or following the newest lines).
func (m *Model) renderPane(w, h int) string {
	t := m.current()
	if t == nil {
		return ""
	}
	name := "agent output"
	switch {
	case m.pane == paneDiff:
		name = "diff"
	case m.comparing():
		name = "attempts"
	}
	var marks []string
	if m.focus == focusPane {
		marks = append(marks, "scrolling")
	}
	if m.follow && m.pane == paneLog {
		marks = append(marks, "following")
	}
	head := fmt.Sprintf("%s — %s", termsafe.String(t.Slug), name)
	if len(marks) > 0 {
		head += " (" + strings.Join(marks, ", ") + ")"
	}
	// A copy of the viewport: drawing the screen moves nothing, and the
	// scroll kept is the one the keys set (clamped here to the lines
	// there are now).
	vp := m.scroller
	vp.SetWidth(w)
	vp.SetHeight(max(h-1, 1))
	vp.SetContentLines(m.paneContent(w))
	if m.follow {
		vp.GotoBottom()
	}
	return m.styles.header.Render(render.Cut(head, w)) + "\n" + vp.View()
}

// paneContent is the pane's lines at width w as the viewport shows them:
// turn rules dimmed, or a dim "(nothing yet)".
func (m *Model) paneContent(w int) []string {
	if len(m.preview) == 0 {
		return []string{m.styles.dim.Render("(nothing yet)")}
	}
	lines := m.paneLines(w)
	for i, l := range lines {
		if strings.HasPrefix(l, agent.TurnRule) {
			lines[i] = m.styles.dim.Render(l)
		}
	}
	return lines
}

// attemptLines is a group's attempts for the pane, as lazy show
// compares them (package attempts words the rows for every surface),
// or the error that kept them from being read.
func attemptLines(v *attempts.Comparison, err error) []string {
	if err != nil {
		return []string{err.Error()}
	}
	return attemptPaneLines(v)
}

// attemptPaneLines is the comparison as the pane shows it: the heading
// and table of lazy show's Attempts section, then how to go on. The
// pane escapes every line for the terminal.
func attemptPaneLines(v *attempts.Comparison) []string {
	var b strings.Builder
	fmt.Fprintln(&b, render.AttemptsHeading(v))
	render.AttemptTable(&b, v)
	if v.Chosen == 0 {
		fmt.Fprintf(&b, "\nlazy diff %s --attempts shows their diffs; lazy accept %s --attempt K (or A on an attempt here) lands one and closes the others\n", v.Group, v.Group)
	}
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}
