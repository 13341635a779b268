package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/daemon"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/ops"
	"github.com/lazyorch/lazy/proto"
)

// The TUI's panes.
const (
	paneLog = iota
	paneDiff
)

// tuiModel is lazy watch on a terminal: the task tree on the left (or
// top, when narrow), the selected task's live agent output or diff on the
// right, keys for the review loop.
type tuiModel struct {
	a      *app
	ctx    context.Context
	all    bool
	self   string // this binary, for the actions that need the terminal
	styles tuiStyles

	width, height int
	rows          []treeRow
	// overlaps is each listed task's overlaps (ops.Env.Overlaps), read
	// with the list through overlapCache.
	overlaps     map[string]ops.TaskOverlaps
	overlapCache *ops.OverlapCache
	selected     string // task id, kept across refreshes
	pane         int
	preview      []string
	status       string // the last action's outcome
	prev         map[string]machine.Status
	bell         bool // ring the terminal bell when a task starts needing a human
	err          error
	loading      *sync.Mutex
}

type tuiStyles struct {
	header, dim, sel, border, key, overlap lipgloss.Style
	status                                 map[machine.Status]lipgloss.Style
}

// newTUIStyles are the TUI's styles. They are written in full colour;
// Bubble Tea brings them down to what the terminal can show, or to none
// (see runTUI).
func newTUIStyles() tuiStyles {
	st := tuiStyles{
		header:  lipgloss.NewStyle().Bold(true),
		dim:     lipgloss.NewStyle().Faint(true),
		sel:     lipgloss.NewStyle().Reverse(true),
		border:  lipgloss.NewStyle().Border(lipgloss.NormalBorder(), false, false, false, true).PaddingLeft(1),
		key:     lipgloss.NewStyle().Bold(true),
		overlap: lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
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
		rows     []treeRow
		overlaps map[string]ops.TaskOverlaps
	}
	tuiPreview struct {
		id    string
		pane  int
		lines []string
	}
	tuiDone struct {
		what string
		err  error
		out  string
	}
	tuiErr struct{ err error }
)

func (m *tuiModel) Init() tea.Cmd { return tea.Batch(m.load(), m.tick()) }

// tick refreshes once a second: the list reconciles (so a finished turn
// shows up without a daemon) and the preview follows the agent's log.
func (m *tuiModel) tick() tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return tuiTick{} })
}

func (m *tuiModel) load() tea.Cmd {
	return func() tea.Msg {
		// Loads overlap (the tick, a daemon event, an action's end): one
		// reconciles at a time, on a copy of the app whose stderr is
		// discarded, because the TUI owns the screen.
		m.loading.Lock()
		defer m.loading.Unlock()
		quiet := *m.a
		quiet.stderr = io.Discard
		entries, err := quiet.reconciledList(m.ctx)
		if err != nil {
			return tuiErr{err}
		}
		var tasks []*gitstore.Summary
		for i := range entries {
			s, err := entries[i].Summary()
			if err != nil || (!m.all && s.Status.IsTerminal()) {
				continue
			}
			tasks = append(tasks, s)
		}
		return tuiLoaded{rows: treeOrder(tasks, taskLess("attention")), overlaps: quiet.overlaps(m.ctx, entries, m.overlapCache)}
	}
}

func (m *tuiModel) current() *gitstore.Summary {
	for _, r := range m.rows {
		if r.Item.ID == m.selected {
			return r.Item
		}
	}
	return nil
}

func (m *tuiModel) index() int {
	for i, r := range m.rows {
		if r.Item.ID == m.selected {
			return i
		}
	}
	return 0
}

// loadPreview reads the selected task's log tail or its diff.
func (m *tuiModel) loadPreview() tea.Cmd {
	t := m.current()
	if t == nil {
		return nil
	}
	id, pane := t.ID, m.pane
	return func() tea.Msg {
		var lines []string
		if pane == paneDiff {
			lines = m.a.diffLines(m.ctx, id)
		} else {
			lines = m.a.logTail(id, 400)
		}
		return tuiPreview{id: id, pane: pane, lines: lines}
	}
}

func (m *tuiModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case tuiTick:
		return m, tea.Batch(m.load(), m.tick())
	case tuiRefresh:
		return m, m.load()
	case tuiErr:
		m.err = msg.err
		return m, nil
	case tuiLoaded:
		var bell tea.Cmd
		now := map[string]machine.Status{}
		for _, r := range msg.rows {
			now[r.Item.ID] = r.Item.Status
		}
		if m.bell && newlyNeedsYou(m.prev, now) {
			bell = ringBell // a task just started needing a human
		}
		m.prev, m.rows, m.overlaps = now, msg.rows, msg.overlaps
		if m.current() == nil && len(m.rows) > 0 {
			m.selected = m.rows[0].Item.ID
		}
		return m, tea.Batch(bell, m.loadPreview())
	case tuiPreview:
		if msg.id == m.selected && msg.pane == m.pane {
			m.preview = msg.lines
		}
		return m, nil
	case tuiDone:
		switch {
		case msg.err != nil && msg.out != "":
			m.status = msg.what + ": " + lastLine(msg.out)
		case msg.err != nil:
			m.status = msg.what + ": " + msg.err.Error()
		case msg.out != "":
			m.status = lastLine(msg.out)
		default:
			m.status = msg.what + ": done"
		}
		return m, m.load()
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	// A paste (tea.PasteMsg) is not a command: it falls through to here.
	return m, nil
}

func (m *tuiModel) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
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
	move := func(d int) (tea.Model, tea.Cmd) {
		if len(m.rows) == 0 {
			return m, nil
		}
		i := m.index() + d
		if i < 0 {
			i = 0
		}
		if i >= len(m.rows) {
			i = len(m.rows) - 1
		}
		m.selected, m.preview = m.rows[i].Item.ID, nil
		return m, m.loadPreview()
	}
	switch k.String() {
	case "q", "ctrl+c", "esc":
		return m, tea.Quit
	case "up", "k":
		return move(-1)
	case "down", "j":
		return move(1)
	case "home", "g":
		return move(-len(m.rows))
	case "end", "G":
		return move(len(m.rows))
	case "tab", "d":
		m.pane = 1 - m.pane
		m.preview = nil
		return m, m.loadPreview()
	case "r":
		return m, m.load()
	}
	t := m.current()
	if t == nil {
		return m, nil
	}
	switch k.String() {
	case "enter", "u":
		return m, m.interactive("unblock", t.ID)
	case "p":
		return m, m.interactive("pair", t.ID)
	case "?":
		return m, m.interactive("ask", t.ID)
	case "a":
		m.status = "accepting " + t.Slug + "…"
		return m, m.background("accept "+t.Slug, "accept", t.ID)
	case "s":
		m.status = "stopping " + t.Slug + "…"
		return m, m.background("stop "+t.Slug, "stop", t.ID)
	}
	return m, nil
}

// interactive hands the terminal to `lazy VERB TASK` (the editor for
// feedback or a question, or the agent CLI for pair) and comes back.
func (m *tuiModel) interactive(verb, id string) tea.Cmd {
	cmd := exec.Command(m.self, "-C", m.a.repoDir(), verb, id)
	if verb == "ask" {
		// The answer is printed on the terminal: keep it there until the
		// human has read it. The names travel as arguments, never as
		// shell text.
		cmd = exec.Command("sh", "-c", `"$0" -C "$1" ask "$2"; s=$?; printf '\n(press enter to return to lazy watch) '; read _; exit $s`, m.self, m.a.repoDir(), id)
	}
	return tea.ExecProcess(cmd, func(err error) tea.Msg { return tuiDone{what: verb, err: err} })
}

// background runs `lazy VERB TASK` with its output captured for the
// status line, so its narration never scribbles over the screen.
func (m *tuiModel) background(what string, verb, id string) tea.Cmd {
	return func() tea.Msg {
		cmd := exec.CommandContext(m.ctx, m.self, "-C", m.a.repoDir(), "--no-color", verb, id)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return tuiDone{what: what, err: err, out: out.String()}
	}
}

// newlyNeedsYou reports whether a task seen before in prev now has a
// status that waits for a human (blocked, conflict, interrupted) it did
// not have: the moment lazy watch rings the bell. The first load rings
// nothing: what needed you before you looked is on the screen.
func newlyNeedsYou(prev, now map[string]machine.Status) bool {
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
func (m *tuiModel) View() tea.View {
	v := tea.NewView(m.screen())
	v.AltScreen = true
	return v
}

func (m *tuiModel) screen() string {
	if m.width == 0 {
		return "loading…"
	}
	w, h := m.width, m.height
	need := 0
	for _, r := range m.rows {
		if r.Item.Status.IsBlocked() || r.Item.Status == machine.Interrupted {
			need++
		}
	}
	title := fmt.Sprintf("lazy watch · %d task(s) · %d need you · %s", len(m.rows), need, time.Now().Format("15:04:05"))
	header := m.styles.header.Render(cut(title, w))
	keys := "↑↓ move  tab log/diff  u unblock  a accept  p pair  s stop  ? ask  q quit"
	footer := m.styles.dim.Render(cut(keys, w))
	if m.status != "" {
		footer = cut(termsafe.String(m.status), w) + "\n" + footer
	}
	if m.err != nil {
		footer = cut(termsafe.String("error: "+m.err.Error()), w) + "\n" + footer
	}
	bodyH := h - 2 - strings.Count(footer, "\n")
	if bodyH < 3 {
		bodyH = 3
	}
	var body string
	if w >= 100 {
		listW := w * 2 / 5
		list := m.renderList(listW, bodyH)
		pane := m.styles.border.Render(m.renderPane(w-listW-2, bodyH))
		body = lipgloss.JoinHorizontal(lipgloss.Top, lipgloss.NewStyle().Width(listW).Render(list), pane)
	} else {
		listH := bodyH / 2
		if n := len(m.rows) + 1; n < listH {
			listH = n
		}
		body = m.renderList(w, listH) + "\n" + strings.Repeat("─", w) + "\n" + m.renderPane(w, bodyH-listH-1)
	}
	// The footer stays at the bottom however short the list is.
	if n := strings.Count(body, "\n") + 1; n < bodyH {
		body += strings.Repeat("\n", bodyH-n)
	}
	return header + "\n" + body + "\n" + footer
}

// renderList is the task tree, one task a line, the selection reversed.
func (m *tuiModel) renderList(w, h int) string {
	if len(m.rows) == 0 {
		return m.styles.dim.Render("no open tasks (lazy create \"...\")")
	}
	first := 0
	if i := m.index(); i >= h {
		first = i - h + 1
	}
	var lines []string
	for i := first; i < len(m.rows) && len(lines) < h; i++ {
		t := m.rows[i].Item
		status := string(t.Status)
		if sub := m.a.marks().Substate(t); sub != "" {
			status += " (" + sub + ")"
		}
		marker := "  "
		if t.ID == m.selected {
			marker = "▸ "
		}
		text := marker + strings.Repeat("  ", m.rows[i].Depth) + termsafe.String(t.Slug) + "  "
		mark := ""
		if o := m.overlaps[t.ID]; !o.Empty() {
			mark = "  ⚠ " + termsafe.String(o.Brief())
		}
		mark += gateMark(t.Gate)
		plain := cut(text+status+mark, w)
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

// renderPane is the preview: the tail of the agent's output, or the diff.
func (m *tuiModel) renderPane(w, h int) string {
	t := m.current()
	if t == nil {
		return ""
	}
	name := "agent output"
	if m.pane == paneDiff {
		name = "diff"
	}
	head := m.styles.header.Render(cut(fmt.Sprintf("%s — %s", termsafe.String(t.Slug), name), w))
	lines := m.preview
	if m.pane == paneLog && len(lines) > h-1 {
		lines = lines[len(lines)-(h-1):] // the latest output
	} else if len(lines) > h-1 {
		lines = lines[:h-1]
	}
	out := []string{head}
	for _, l := range lines {
		out = append(out, cut(termsafe.String(l), w))
	}
	if len(m.preview) == 0 {
		out = append(out, m.styles.dim.Render("(nothing yet)"))
	}
	return strings.Join(out, "\n")
}

// logTail renders the last lines of a task's agent log.
func (a *app) logTail(id string, max int) []string {
	path := proto.ForTask(a.repo.LazyDir(), id).Path(proto.LogFile)
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	const window = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, _ = f.Seek(fi.Size()-window, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		out = append(out, agent.RenderLine(l)...)
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// diffLines is a task's diff for the diff pane: stat, then the patch.
func (a *app) diffLines(ctx context.Context, id string) []string {
	env, err := a.env()
	if err != nil {
		return []string{err.Error()}
	}
	r, err := env.ReviewRange(ctx, id)
	if err != nil {
		return []string{err.Error()}
	}
	out, err := gitcli.New(a.repoDir(), "diff", "--no-color", "--stat", "--patch", r.MergeBase, r.BranchSHA).Output(ctx)
	if err != nil {
		return []string{err.Error()}
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		lines = append(lines, sanitize.Display(strings.ReplaceAll(l, "\t", "    ")))
	}
	return lines
}

// runTUI runs lazy watch as a full-screen program.
func (a *app) runTUI(ctx context.Context, all, bell bool) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the lazy binary: %w", err)
	}
	opts := []tea.ProgramOption{tea.WithContext(ctx)}
	if a.noColor || os.Getenv("TERM") == "dumb" {
		// No colour; bold, faint and reverse stay, so the selection shows.
		opts = append(opts, tea.WithColorProfile(colorprofile.Ascii))
	}
	m := &tuiModel{a: a, ctx: ctx, all: all, bell: bell, self: self, styles: newTUIStyles(), loading: &sync.Mutex{}, overlapCache: &ops.OverlapCache{}}
	p := tea.NewProgram(m, opts...)
	// The daemon's events (a turn ended, progress) refresh at once; the
	// one-second tick covers the rest, daemon or not.
	if os.Getenv("LAZY_NO_DAEMON") == "" {
		if events, err := daemon.Dial(a.repo.LazyDir()).Subscribe(ctx); err == nil {
			go func() {
				for range events {
					p.Send(tuiRefresh{})
				}
			}()
		}
	}
	_, err = p.Run()
	if err != nil && ctx.Err() != nil {
		return nil // interrupted: not an error
	}
	return err
}

// gateMark flags a task whose newest merge-gate run failed.
func gateMark(g *gitstore.GateSummary) string {
	if g == nil || g.State != gitstore.GateFailed {
		return ""
	}
	return "  ✗ gate: " + termsafe.String(g.Failed)
}
