package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/marks"

	"github.com/lazyorch/lazy/daemon"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/pool"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/tui"
	"github.com/lazyorch/lazy/wire"
)

// StatusCmd summarizes the repository's tasks.
type StatusCmd struct {
	JSON bool `help:"Print the summary as JSON."`
}

// statusView is lazy status's JSON.
type statusView struct {
	Counts map[machine.Status]int `json:"counts"`
	Active []statusRow            `json:"active"`
	Daemon *daemon.Info           `json:"daemon,omitempty"`
	// Usage totals what every task's agent turns cost.
	Usage *task.Usage `json:"usage,omitempty"`
	// OwedStashes are the user's uncommitted changes an accept stashed
	// and has not given back, each with the command that restores it.
	OwedStashes []landing.OwedStash `json:"owed_stashes"`
	// ForeignMerges say, for each task merging by an accept this machine
	// did not begin, that lazy leaves it alone here.
	ForeignMerges []string `json:"foreign_merges,omitempty"`
	// Queues are this machine's merge queues (see lazy queue).
	Queues []queue.View `json:"queues"`
	// GateFailed are the open tasks whose newest gate run failed.
	GateFailed []gateFailure `json:"gate_failed"`
	// Overlaps are the active tasks whose changes overlap another's or
	// what landed on their target, in brief, by slug.
	Overlaps map[string]string `json:"overlaps"`
}

// overlapBriefs is each overlapping task's overlaps in brief, by slug.
func overlapBriefs(entries []task.Entry, ov map[string]review.TaskOverlaps) map[string]string {
	out := map[string]string{}
	for i := range entries {
		if o, ok := ov[entries[i].ID]; ok && !o.Empty() {
			if s, err := entries[i].Summary(); err == nil {
				out[s.Slug] = o.Brief()
			}
		}
	}
	return out
}

// gateFailure is an open task whose newest merge-gate run failed.
type gateFailure struct {
	Slug   string `json:"slug"`
	Failed string `json:"failed"`
	At     string `json:"at"`
}

// gateFailures lists the open tasks whose newest gate run failed.
func gateFailures(entries []task.Entry) []gateFailure {
	out := []gateFailure{}
	for i := range entries {
		if entries[i].Err != nil || entries[i].Status.IsTerminal() {
			continue
		}
		if s, err := entries[i].Summary(); err == nil && s.Gate != nil && s.Gate.State == task.GateFailed {
			out = append(out, gateFailure{Slug: s.Slug, Failed: s.Gate.Failed, At: s.Gate.At})
		}
	}
	return out
}

// foreignMerges describes the merging tasks of store whose accept this
// machine did not begin (see wire.Env.ForeignMerge).
func foreignMerges(store *gitstore.Store, env *wire.Env, entries []task.Entry) []string {
	var out []string
	for i := range entries {
		if entries[i].Err != nil || entries[i].Status != machine.Merging {
			continue
		}
		sn, err := store.Load(entries[i].ID)
		if err != nil {
			continue
		}
		if err := env.Landing().Recovery().ForeignMerge(sn); err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

type statusRow struct {
	Slug     string         `json:"slug"`
	Status   machine.Status `json:"status"`
	Substate string         `json:"substate,omitempty"`
	Title    string         `json:"title"`
	Usage    *task.Usage    `json:"usage,omitempty"`
	// Gate is how its newest merge-gate run ended.
	Gate *task.GateSummary `json:"gate,omitempty"`
	// AttemptOf is the slug of the group an attempt belongs to, and
	// Attempt its number: live views list attempts under their group.
	AttemptOf string `json:"attempt_of,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	// id is the task's id; overlaps is its overlaps in brief, which
	// only lazy watch fills in.
	id       string
	overlaps string
}

// liveRows renders the tasks a live view shows: everything not finished, with
// its substate from the one shared derivation (mk).
func liveRows(mk *marks.Marks, entries []task.Entry, keep func(machine.Status) bool) ([]statusRow, map[machine.Status]int) {
	counts := map[machine.Status]int{}
	var rows []statusRow
	slugs := map[string]string{}
	for i := range entries {
		e := &entries[i]
		if e.Err != nil {
			continue
		}
		counts[e.Status]++
		if !keep(e.Status) {
			continue
		}
		s, err := e.Summary()
		if err != nil {
			continue
		}
		slugs[s.ID] = s.Slug
		rows = append(rows, statusRow{Slug: s.Slug, Status: s.Status, Substate: mk.Substate(s), Title: s.Title, Usage: s.Usage, Gate: s.Gate, id: s.ID,
			AttemptOf: s.AttemptOf, Attempt: s.Attempt})
	}
	// Attempts sort right under their group, in order.
	key := func(r *statusRow) string {
		if r.AttemptOf == "" {
			return r.Slug
		}
		return cmp.Or(slugs[r.AttemptOf], r.Slug) + fmt.Sprintf("\x00%03d", r.Attempt)
	}
	sort.SliceStable(rows, func(i, j int) bool { return key(&rows[i]) < key(&rows[j]) })
	for i := range rows {
		if rows[i].AttemptOf != "" {
			rows[i].AttemptOf = cmp.Or(slugs[rows[i].AttemptOf], render.ShortID(rows[i].AttemptOf))
		}
	}
	return rows, counts
}

// rowTitle is a live view's title cell: an attempt's says which attempt
// it is and what it has cost so far.
func rowTitle(r statusRow) string {
	if r.AttemptOf == "" {
		return render.OneLine(r.Title, 60)
	}
	return fmt.Sprintf("└ attempt %d of %s, %s", r.Attempt, r.AttemptOf, attempts.UsageCell(r.Usage))
}

// totalUsage sums what every listed task's agent turns cost.
func totalUsage(entries []task.Entry) *task.Usage {
	var total *task.Usage
	for i := range entries {
		if entries[i].Err != nil {
			continue
		}
		if s, err := entries[i].Summary(); err == nil && s.Usage != nil {
			if total == nil {
				total = &task.Usage{}
			}
			total.Add(*s.Usage)
		}
	}
	return total
}

func statusCell(r statusRow) string {
	if r.Substate == "" {
		return string(r.Status) + render.GateMark(r.Gate)
	}
	return string(r.Status) + " (" + r.Substate + ")" + render.GateMark(r.Gate)
}

// Run implements lazy status.
func (c *StatusCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	entries, err := a.reconciledList(ctx)
	if err != nil {
		return err
	}
	rows, counts := liveRows(a.marks(), entries, machine.Status.IsActive)
	v := statusView{Counts: counts, Active: rows, Usage: totalUsage(entries), OwedStashes: []landing.OwedStash{}, Queues: []queue.View{}, GateFailed: gateFailures(entries),
		Overlaps: overlapBriefs(entries, overlapCheckOf(a).of(ctx, entries, nil))}
	if env, err := a.env(); err == nil {
		if q := env.Queue().Queues(); q != nil {
			v.Queues = q
		}
		if owed, err := env.Landing().Stashes().OwedStashes(ctx, false); err == nil && owed != nil {
			v.OwedStashes = owed
		}
		v.ForeignMerges = foreignMerges(a.store, env, entries)
	}
	if info, err := daemon.Dial(a.repo.LazyDir()).Info(ctx); err == nil {
		v.Daemon = &info
	}
	if c.JSON {
		if v.Active == nil {
			v.Active = []statusRow{}
		}
		return a.io.printJSON(v)
	}
	var parts []string
	for _, s := range machine.Statuses() {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		parts = []string{"no tasks"}
	}
	fmt.Fprintln(a.io.out, strings.Join(parts, ", "))
	if v.Daemon != nil {
		fmt.Fprintf(a.io.out, "daemon: pid %d, version %s\n", v.Daemon.PID, v.Daemon.Version)
	} else {
		fmt.Fprintln(a.io.out, "daemon: not running (it starts with the next turn)")
	}
	if v.Usage != nil {
		fmt.Fprintf(a.io.out, "agents spent: %s\n", v.Usage.String())
	}
	printPRs(a.io.out, entries)
	for _, o := range v.OwedStashes {
		fmt.Fprintln(a.io.out, "owed stash: "+sanitize.Display(o.Describe()))
	}
	for _, m := range v.ForeignMerges {
		fmt.Fprintln(a.io.out, "foreign merge: "+sanitize.Display(m))
	}
	for _, q := range v.Queues {
		if len(q.Entries) == 0 {
			continue
		}
		var parts []string
		for _, en := range q.Entries {
			parts = append(parts, sanitize.Field(en.Slug)+" "+en.State)
		}
		fmt.Fprintf(a.io.out, "merge queue into %s: %s (lazy queue)\n", sanitize.Field(q.Target), strings.Join(parts, ", "))
	}
	slugs := make([]string, 0, len(v.Overlaps))
	for slug := range v.Overlaps {
		slugs = append(slugs, slug)
	}
	sort.Strings(slugs)
	for _, slug := range slugs {
		fmt.Fprintf(a.io.out, "overlap: %s with %s (lazy show %s)\n", sanitize.Field(slug), sanitize.Field(v.Overlaps[slug]), sanitize.Field(slug))
	}
	for _, p := range poolLines(ctx, a.repoDir()) {
		fmt.Fprintln(a.io.out, sanitize.Field(p))
	}
	for _, g := range v.GateFailed {
		fmt.Fprintf(a.io.out, "gate failed: %s at %s: %s (lazy show %s)\n", sanitize.Field(g.Slug), g.At, sanitize.Field(g.Failed), sanitize.Field(g.Slug))
	}
	if len(rows) > 0 {
		fmt.Fprintln(a.io.out)
		cells := make([][]render.Cell, 0, len(rows))
		for _, r := range rows {
			cells = append(cells, []render.Cell{{Text: r.Slug}, {Text: statusCell(r), SGR: render.StatusSGR[r.Status]}, {Text: r.Title}})
		}
		return a.io.style(a.now()).Table(a.io.out, []string{"ACTIVE", "STATUS", "TITLE"}, cells)
	}
	return nil
}

// WatchCmd is a live view of the tasks: a full-screen TUI on a terminal,
// plain lines otherwise.
type WatchCmd struct {
	All    bool `help:"Include finished tasks."`
	NoBell bool `name:"no-bell" help:"Never ring the terminal bell when a task starts needing you (git config lazy.watch.bell false does the same)."`
}

// bell reports whether lazy watch rings the terminal bell: on unless
// --no-bell or git config lazy.watch.bell false.
func (c *WatchCmd) bell(a *app) bool {
	if c.NoBell {
		return false
	}
	on, err := a.cfg.Bool("lazy.watch.bell", true)
	return err != nil || on
}

// Run implements lazy watch: it redraws when the daemon reports
// something (a reconcile, a progress change, a phase, a heartbeat), never
// by polling. On a terminal it redraws in place; otherwise it prints one
// line per task whose status changed, which suits logs and ssh pipes.
func (c *WatchCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	if isTerminal(a.io.out) && isTerminal(a.io.in) {
		if a.getenv("LAZY_NO_DAEMON") == "" {
			if _, err := a.ensureDaemon(ctx); err != nil {
				return err
			}
		}
		return a.runTUI(ctx, c.All, c.bell(a))
	}
	if a.getenv("LAZY_NO_DAEMON") != "" {
		return errors.New("lazy watch follows the daemon's events, and LAZY_NO_DAEMON is set")
	}
	if _, err := a.ensureDaemon(ctx); err != nil {
		return err
	}
	events, err := daemon.Dial(a.repo.LazyDir()).Subscribe(ctx)
	if err != nil {
		return fmt.Errorf("follow the daemon: %w", err)
	}
	keep := func(s machine.Status) bool { return c.All || !s.IsTerminal() }
	tty := isTerminal(a.io.out)
	bell := tty && c.bell(a)
	var prevStatus map[string]machine.Status
	last := map[string]string{}
	cache := &review.OverlapCache{}
	draw := func() error {
		entries, err := a.store.List()
		if err != nil {
			return err
		}
		rows, _ := liveRows(a.marks(), entries, keep)
		ov := overlapCheckOf(a).of(ctx, entries, cache)
		for i := range rows {
			rows[i].overlaps = ov[rows[i].id].Short()
		}
		var queues []queue.View
		if env, err := a.env(); err == nil {
			queues = env.Queue().Queues()
		}
		if tty {
			drawScreen(a.io.out, rows, queues, poolLines(ctx, a.repoDir()))
			now := make(map[string]machine.Status, len(rows))
			for _, r := range rows {
				now[r.id] = r.Status
			}
			if bell && tui.NewlyNeedsYou(prevStatus, now) {
				_, _ = io.WriteString(rawWriter(a.io.out), "\a")
			}
			prevStatus = now
			return nil
		}
		now := time.Now().Format("15:04:05")
		seen := map[string]bool{}
		for _, r := range rows {
			seen[r.Slug] = true
			cell := statusCell(r)
			if r.overlaps != "" {
				cell += "  overlaps: " + r.overlaps
			}
			if last[r.Slug] != cell {
				last[r.Slug] = cell
				fmt.Fprintf(a.io.out, "%s %s %s\n", now, r.Slug, cell)
			}
		}
		for slug := range last {
			if !seen[slug] {
				delete(last, slug)
				fmt.Fprintf(a.io.out, "%s %s finished\n", now, slug)
			}
		}
		return nil
	}
	if err := draw(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-events:
			if !ok {
				return errors.New("the daemon went away; run lazy watch again")
			}
			if err := draw(); err != nil {
				return err
			}
		}
	}
}

func drawScreen(w io.Writer, rows []statusRow, queues []queue.View, pools []string) {
	// lazy's own redraw sequence goes raw; the frame, which carries
	// titles and progress from records, goes through the escaper.
	_, _ = io.WriteString(rawWriter(w), "\x1b[H\x1b[2J") // home, clear
	var b strings.Builder
	fmt.Fprintf(&b, "lazy watch  %s  (Ctrl-C to quit)\n\n", time.Now().Format("15:04:05"))
	overlapping := false
	for _, r := range rows {
		overlapping = overlapping || r.overlaps != ""
	}
	table := [][]string{{"TASK", "STATUS", "TITLE"}}
	if overlapping {
		table[0] = []string{"TASK", "STATUS", "OVERLAPS", "TITLE"}
	}
	for _, r := range rows {
		if overlapping {
			mark := ""
			if r.overlaps != "" {
				mark = "⚠ " + termsafe.String(r.overlaps)
			}
			table = append(table, []string{r.Slug, statusCell(r), mark, rowTitle(r)})
			continue
		}
		table = append(table, []string{r.Slug, statusCell(r), rowTitle(r)})
	}
	render.Columns(&b, table)
	if len(rows) == 0 {
		b.WriteString("(no open tasks)\n")
	}
	b.WriteString(queueLines(queues))
	for _, p := range pools {
		b.WriteString("\n" + termsafe.String(p) + "\n")
	}
	_, _ = io.WriteString(w, b.String())
}

// queueLines says, a line per target, what each merge queue holds,
// and, under a queue split into lanes, lazy queue's lanes line.
func queueLines(queues []queue.View) string {
	var b strings.Builder
	for _, q := range queues {
		if len(q.Entries) == 0 {
			continue
		}
		var parts []string
		for _, en := range q.Entries {
			parts = append(parts, termsafe.String(en.Slug)+" "+en.State)
		}
		fmt.Fprintf(&b, "\nmerge queue into %s: %s\n", termsafe.String(q.Target), strings.Join(parts, ", "))
		if l := render.Lanes(q.Lanes); l != "" {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}

// poolLines says, a line per remote, what the runner pool of the
// repository in repoDir looked like at the last fetch (no network: lazy
// pool fetches).
func poolLines(ctx context.Context, repoDir string) []string {
	remotes, err := pool.Fetched(ctx, repoDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range remotes {
		if line, err := pool.Brief(ctx, repoDir, r, time.Now()); err == nil {
			out = append(out, line)
		}
	}
	return out
}
