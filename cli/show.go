package cli

import (
	"context"
	"fmt"
	"github.com/lazyorch/lazy/attempts"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/internal/redact"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/ops"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// showView is what lazy show prints, fetched once: the detail that
// --json prints as it is, and the few things only the text adds. The
// render reads it and fetches nothing.
type showView struct {
	sn     *task.Snapshot
	detail *task.Detail
	// parent names the parent task as "slug (id)", or by id alone if it
	// cannot be loaded; "" for a root task.
	parent string
	// pr is the pull request in brief, "" when there is none.
	pr string
	// foreign says the record claims this host runs the session, but
	// this machine never started it.
	foreign bool
	// overlaps is what the task's branch shares with other active tasks
	// and with what landed on its target (--json prints it too).
	overlaps review.TaskOverlaps
	next     []string
	// attempts compares a group's attempts (nil for any other task);
	// attemptOf names an attempt's group as "attempt K of slug".
	attempts  *attempts.Comparison
	attemptOf string
	// protected names the protected paths the task's change touches
	// (nil: none), which need a human's accept --approve-protected.
	protected *ops.ProtectedView
	// budgetNote follows a task's own budget: what it and its subtasks
	// spent against it, and the figures the sum leaves out.
	budgetNote string
}

// showJSON is lazy show --json: the detail, with the overlaps' fields
// beside its own, and a group's attempts compared.
type showJSON struct {
	*task.Detail
	review.TaskOverlaps
	showAttempts
	// ProtectedChanges names the protected paths the change touches.
	ProtectedChanges *ops.ProtectedView `json:"protected_changes,omitempty"`
}

// showAttempts is what show --json adds for an attempt group: one
// entry per attempt (status, agent, model, cost, gate, diff stat), the
// cost of them all and the attempt that landed.
type showAttempts struct {
	Attempts      []attempts.Attempt `json:"attempts,omitempty"`
	AttemptsUsage *task.Usage        `json:"attempts_usage,omitempty"`
	AttemptChosen int                `json:"attempt_chosen,omitempty"`
}

func attemptsJSON(v *attempts.Comparison) showAttempts {
	if v == nil {
		return showAttempts{}
	}
	return showAttempts{Attempts: v.Attempts, AttemptsUsage: v.Usage, AttemptChosen: v.Chosen}
}

// Run implements lazy show.
func (c *ShowCmd) Run(a *app, ctx context.Context) error {
	v, err := c.fetch(a, ctx)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.printJSON(showJSON{v.detail, v.overlaps, attemptsJSON(v.attempts), v.protected})
	}
	return v.render(a.stdout, a.style())
}

// fetch reads the task, after the reconciler has had its say, into the
// view; the text view's extras are fetched only when text is printed.
func (c *ShowCmd) fetch(a *app, ctx context.Context) (*showView, error) {
	sn, err := a.openTask(c.Task)
	if err != nil {
		return nil, err
	}
	id := sn.Task.ID
	if a.reconcileBeforeRead(ctx, []task.Entry{{ID: id, Status: sn.Task.Status}}) {
		if sn, err = a.store.Load(id); err != nil {
			return nil, err
		}
	}
	d, err := a.store.Detail(sn, 0)
	if err != nil {
		return nil, err
	}
	d.Live = a.marks().Substate(&d.Summary)
	d.Permissions = a.permissions(ctx, sn)
	if !c.Full {
		d.Clip(showClip, "lazy show "+sn.Task.Slug+" --full shows it whole")
	}
	v := &showView{sn: sn, detail: d, overlaps: a.taskOverlaps(ctx, sn)}
	if env, err := a.env(); err == nil {
		// A gate run is this machine's only if its own record says so.
		env.VerifyDetail(d)
		v.protected, _ = env.ProtectedChanges(ctx, sn)
		if sn.Task.IsAttemptGroup() {
			v.attempts, _ = env.Attempts().Compare(ctx, id)
		}
	}
	if c.JSON {
		return v, nil
	}
	if _, ok, _ := sn.Task.OwnBudget(); ok {
		if env, err := a.env(); err == nil {
			v.budgetNote = budgetNote(env, sn)
		}
	}
	t := &sn.Task
	v.pr = render.PRBrief(&d.Summary)
	if t.Parent != "" {
		v.parent = t.Parent
		if p, err := a.store.Load(t.Parent); err == nil {
			v.parent = p.Task.Slug + " (" + render.ShortID(t.Parent) + ")"
		}
	}
	if sn.Session != nil {
		if env, err := a.env(); err == nil {
			v.foreign = env.Foreign(sn)
		}
	}
	if t.AttemptOf != "" {
		v.attemptOf = fmt.Sprintf("%d of %s", t.Attempt, render.ShortID(t.AttemptOf))
		if g, err := a.store.Load(t.AttemptOf); err == nil {
			v.attemptOf = fmt.Sprintf("%d of %s (lazy show %s compares the attempts)", t.Attempt, g.Task.Slug, g.Task.Slug)
		}
	}
	v.next = nextSteps(t.Slug, t.Status, len(sn.Violations.Pending) > 0)
	if t.IsAttemptGroup() && !t.Status.IsTerminal() {
		v.next = []string{"lazy diff " + t.Slug + " --attempts", "lazy accept " + t.Slug + " --attempt K", "lazy watch"}
	}
	if v.protected != nil && t.Status == machine.Blocked {
		v.next = []string{"lazy diff " + t.Slug, v.protected.Approve + "   # a human, after reviewing them", "lazy unblock " + t.Slug + " -m TEXT", "lazy reject " + t.Slug}
	}
	if h := t.Hold; h != nil && h.Kind == task.HoldBudget && !t.Status.IsTerminal() {
		// Over budget, a plain unblock would only park it again.
		v.next = []string{"lazy unblock " + t.Slug + " --budget +N", "lazy diff " + t.Slug, "lazy accept " + t.Slug, "lazy reject " + t.Slug}
	}
	return v, nil
}

// render prints the view as text, section by section.
func (v *showView) render(w io.Writer, st render.Style) error {
	v.renderHeader(w, st)
	v.renderAttempts(w)
	v.renderSession(w)
	renderOverlaps(w, v.sn.Task.Slug, v.overlaps)
	v.renderPermissions(w)
	v.renderGate(w)
	v.renderRefusals(w)
	v.renderTurns(w)
	v.renderNotes(w)
	if err := v.renderHistory(w); err != nil {
		return err
	}
	if len(v.next) > 0 {
		fmt.Fprintf(w, "\nNext\n")
		for _, s := range v.next {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	return nil
}

// renderHeader prints the task's fields and its goal.
func (v *showView) renderHeader(w io.Writer, st render.Style) {
	t, d := &v.sn.Task, v.detail
	fmt.Fprintf(w, "%s  (%s)\n", t.Slug, t.ID)
	fmt.Fprintf(w, "  Title:    %s\n", t.Title)
	fmt.Fprint(w, "  Status:   ")
	st.Print(w, render.StatusSGR[t.Status], string(t.Status))
	if d.Live != "" {
		fmt.Fprintf(w, " (%s)", d.Live)
	}
	fmt.Fprintln(w)
	if t.Outcome != "" {
		fmt.Fprintf(w, "  Outcome:  %s\n", t.Outcome)
	}
	if t.Reason != "" {
		fmt.Fprintf(w, "  Reason:   %s\n", oneLine(t.Reason, 100))
	}
	if v.pr != "" {
		fmt.Fprintf(w, "  PR:       %s %s\n", v.pr, sanitize.Field(d.PR.URL))
	}
	if v.parent != "" {
		fmt.Fprintf(w, "  Parent:   %s\n", v.parent)
	}
	if v.attemptOf != "" {
		fmt.Fprintf(w, "  Attempt:  %s\n", v.attemptOf)
	}
	if t.TargetBranch != "" {
		fmt.Fprintf(w, "  Target:   %s\n", t.TargetBranch)
	}
	if len(t.AllowedPaths) > 0 {
		fmt.Fprintf(w, "  Allowed:  %s\n", strings.Join(t.AllowedPaths, ", "))
	}
	fmt.Fprintf(w, "  Created:  %s by %s\n", render.AbsTime(t.CreatedAt), actorOrHuman(t.CreatedBy))
	for _, why := range d.Truncated {
		fmt.Fprintf(w, "  Cut:      %s\n", why)
	}
	if u := t.Usage; u != nil {
		if u.Flagged != "" {
			fmt.Fprintf(w, "  Spent:    left out: %s; lazy cost and the budgets count none of it, and lazy doctor sums it again from the turns\n", sanitize.Field(u.Flagged))
		} else {
			fmt.Fprintf(w, "  Spent:    %s (all agent turns)\n", u.String())
		}
	}
	switch usd, ok, flag := t.OwnBudget(); {
	case flag != "":
		fmt.Fprintf(w, "  Budget:   none: %s\n", flag)
	case ok:
		fmt.Fprintf(w, "  Budget:   %s (its own, for it and its subtasks)%s\n", budgetAmount(usd), v.budgetNote)
	}
	if h := t.Hold; h != nil {
		fmt.Fprintf(w, "  Held:     %s\n", oneLine(sanitize.Field(h.Reason), 160))
		fmt.Fprintf(w, "  Next:     %s\n", session.HoldNext(t.Slug, h))
	}
	if d.Goal != "" {
		fmt.Fprintf(w, "\nGoal:\n%s\n", render.Indent(d.Goal, "  "))
	}
}

// budgetNote says what a task's own budget counts: what it and its
// subtasks spent, and each recorded figure under it that is left out
// because lazy does not believe it (out of bounds): such a figure counts
// as nothing, so it can neither hold the budget for good nor pay for
// another task's spending.
func budgetNote(env *ops.Env, sn *task.Snapshot) string {
	spent, flags, err := env.Spending().Spending(sn)
	if err != nil {
		return ""
	}
	note := fmt.Sprintf("; $%.2f spent against it", spent.CostUSD)
	if spent.Unpriced > 0 || (spent.CostUSD == 0 && spent.Tokens() > 0) {
		note += ", besides unpriced turns"
	}
	var left []string
	for _, f := range flags {
		if f.What == "usage" {
			left = append(left, sanitize.Field(f.Task))
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		note += fmt.Sprintf("; left out as out of bounds: the figures of %s (lazy doctor names them)", words.List(left, ""))
	}
	return note
}

// budgetAmount is a budget as show prints it; 0 allows no spend.
func budgetAmount(usd float64) string {
	if usd == 0 {
		return "$0 (no spend allowed)"
	}
	return fmt.Sprintf("$%.2f", usd)
}

// renderAttempts prints a group's attempts side by side, one line each:
// K, slug, agent and model, status, cost, gate, diff stat.
func (v *showView) renderAttempts(w io.Writer) {
	av := v.attempts
	if av == nil {
		return
	}
	fmt.Fprintf(w, "\n%s\n", render.AttemptsHeading(av))
	render.AttemptTable(w, av)
}

// renderSession prints the current session, if any.
func (v *showView) renderSession(w io.Writer) {
	s, t := v.sn.Session, &v.sn.Task
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nSession %d (%s) on %s, agent %s\n", s.Number, render.ShortID(s.ID), s.Host, sanitize.Field(attempts.AgentLabel(s.Agent, s.Model)))
	fmt.Fprintf(w, "  Branch:   %s (from %s)\n  Worktree: %s\n", s.Branch, render.ShortID(s.GitStartSHA), s.Worktree)
	if label, reason := parkReason(t.Status, s.InterruptReason, v.detail.TurnList); reason != "" {
		fmt.Fprintf(w, "  %-9s %s\n", label+":", reason)
	}
	if v.foreign {
		fmt.Fprintf(w, "  Warning:  the record says this host runs this session, but this machine never started it; lazy will not run, stop or delete anything for it (lazy start --take-over %s adopts it)\n", t.Slug)
	}
}

// renderPermissions prints what the agent may do here and the pending
// file-permission violations.
func (v *showView) renderPermissions(w io.Writer) {
	if perms := v.detail.Permissions; perms != nil {
		fmt.Fprintf(w, "\nPermissions (%s, %s", perms.Agent, perms.Work.Posture)
		if perms.Network != "" {
			fmt.Fprintf(w, ", network %s", sanitize.Field(perms.Network))
		}
		if perms.Note != "" {
			fmt.Fprintf(w, ": %s", perms.Note)
		}
		fmt.Fprintf(w, ")\n  Work:     %s\n  Ask:      %s\n  Leftovers: %s\n", sanitize.Field(perms.Work.String()), sanitize.Field(perms.Ask.String()), perms.Uncommitted)
	}
	if pending := v.sn.Violations.Pending; len(pending) > 0 {
		fmt.Fprintf(w, "\nPending file-permission violations:\n")
		for _, p := range pending {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
}

// renderRefusals prints the operations refused when histories merged.
func (v *showView) renderRefusals(w io.Writer) {
	refused := v.sn.Task.MergeRefused
	if len(refused) == 0 {
		return
	}
	fmt.Fprintf(w, "\nRefused when two machines' histories were merged (the commits stay in history):\n")
	for _, r := range refused {
		fmt.Fprintf(w, "  %s by %s on %s (%s -> %s), commit %s: %s\n", r.Op, actorOrHuman(r.Actor), r.Host, r.From, r.To, shortSHA(r.Commit), r.Reason)
	}
}

// renderTurns prints every turn with what it committed and changed.
func (v *showView) renderTurns(w io.Writer) {
	turns := v.detail.TurnList
	fmt.Fprintf(w, "\nTurns (%d)\n", len(turns))
	for _, tn := range turns {
		who := tn.Role
		if tn.Role == task.RoleHuman {
			who = string(actorOrHuman(tn.Actor))
		}
		fmt.Fprintf(w, "  #%d %s %s %s\n%s\n", tn.Seq, render.AbsTime(tn.At), who, tn.Kind, render.Indent(tn.Content, "      "))
		if tn.Role == task.RoleAgent || len(tn.Commits) > 0 || len(tn.ChangedFiles) > 0 {
			v.renderTurnWork(w, tn)
		}
	}
}

// renderTurnWork prints a turn's commits, exit and changed files.
func (v *showView) renderTurnWork(w io.Writer, tn task.Turn) {
	fmt.Fprintf(w, "      -- %s, %s changed", words.Count(len(tn.Commits), "commit", "commits"), words.Count(len(tn.ChangedFiles), "file", "files"))
	if t := tn.Tools.String(); t != "" && !tn.Tools.AllFailed() {
		fmt.Fprintf(w, ", %s", t)
	}
	if tn.ExitCode != nil && *tn.ExitCode != 0 {
		fmt.Fprintf(w, ", exit %d (%s)", *tn.ExitCode, tn.FailureClass)
	}
	if u := tn.Usage; u != nil {
		fmt.Fprintf(w, ", %s", sanitize.Field(u.String()))
		switch tn.PricedBy {
		case budget.PricedByTable:
			fmt.Fprintf(w, " (priced from lazy's table for %s)", sanitize.Field(tn.Model))
		case budget.PricedByConfig:
			fmt.Fprintf(w, " (priced by lazy.price for %s)", sanitize.Field(tn.Model))
		}
	}
	fmt.Fprintln(w)
	if tn.Tools.AllFailed() {
		// Whatever the agent's last words say, it did nothing it set
		// out to: no permission, a missing tool, a broken environment.
		fmt.Fprintf(w, "      ⚠ %s; lazy logs %s --turn %d shows why\n", tn.Tools, v.sn.Task.Slug, tn.Seq)
	}
	for i, f := range tn.ChangedFiles {
		if i == maxFilesShown && len(tn.ChangedFiles) > maxFilesShown+1 {
			fmt.Fprintf(w, "         … and %d more (lazy diff %s --name-only)\n", len(tn.ChangedFiles)-i, v.sn.Task.Slug)
			break
		}
		fmt.Fprintf(w, "         %s\n", sanitize.Field(f))
	}
}

// renderNotes prints the comments and the journal.
func (v *showView) renderNotes(w io.Writer) {
	if comments := v.detail.CommentList; len(comments) > 0 {
		fmt.Fprintf(w, "\nComments (%d)\n", len(comments))
		for _, cm := range comments {
			fmt.Fprintf(w, "  #%d %s %s\n%s\n", cm.Seq, render.AbsTime(cm.At), cm.Actor, render.Indent(cm.Text, "      "))
		}
	}
	if journal := v.detail.Journal; len(journal) > 0 {
		fmt.Fprintf(w, "\nJournal (%d)\n", len(journal))
		for _, j := range journal {
			fmt.Fprintf(w, "  %s %s, turn %d\n%s\n", j.At.Format(time.DateTime), actorOrHuman(j.Actor), j.Journal.Turn, render.Indent(j.Text, "      "))
			for _, x := range j.Journal.Decisions {
				fmt.Fprintf(w, "      decided: %s\n", oneLine(x, 200))
			}
			for _, x := range j.Journal.Deferrals {
				fmt.Fprintf(w, "      deferred: %s\n", oneLine(x, 200))
			}
		}
	}
}

// renderHistory prints the status history as a table.
func (v *showView) renderHistory(w io.Writer) error {
	fmt.Fprintf(w, "\nHistory\n")
	var rows [][]string
	for _, h := range v.detail.History {
		from := string(h.From)
		if from == "" {
			from = "-"
		}
		move := from + " -> " + string(h.To)
		if h.From == h.To {
			move = string(h.To)
		}
		rows = append(rows, []string{"  " + render.AbsTime(h.At), h.Op, string(actorOrHuman(h.Actor)), move, h.Host})
	}
	render.Columns(w, rows)
	return nil
}

// renderGate prints the task's merge gate: its newest run with each
// command's exit, the output tail of a failure and where the whole log
// is, older runs in a line each, and a human's skip.
func (v *showView) renderGate(w io.Writer) {
	g := v.detail.GateRecord
	if v.protected == nil && (g == nil || (len(g.Runs) == 0 && g.Skipped == nil && g.Approved == nil)) {
		return
	}
	fmt.Fprintf(w, "\nGate\n")
	if v.protected != nil {
		fmt.Fprintf(w, "  protected: %s\n", v.protected.Line())
	}
	if g == nil {
		return
	}
	if g.Skipped != nil {
		fmt.Fprintf(w, "  skipped by %s at %s: %s\n", sanitize.Field(g.Skipped.By), g.Skipped.At.UTC().Format(task.TimeLayout), sanitize.Field(g.Skipped.Reason))
	}
	if ap := g.Approved; ap != nil {
		fmt.Fprintf(w, "  protected paths approved by %s at %s: %s\n", sanitize.Field(ap.By), ap.At.UTC().Format(task.TimeLayout), strings.Join(sanitizeFields(ap.Files), ", "))
	}
	for i, r := range g.Runs {
		last := i == len(g.Runs)-1
		verdict := gateVerdict(r)
		spec := ""
		if r.Speculative {
			spec = ", speculative"
		}
		fmt.Fprintf(w, "  run %s %s  %s  on %s at %s (tree %s%s), %.1fs\n", sanitize.Field(r.ID), verdict, r.At.UTC().Format(task.TimeLayout),
			sanitize.Field(r.Target), shortSHA(sanitize.Field(r.Base)), shortSHA(sanitize.Field(r.Tree)), spec, float64(r.DurationMS)/1000)
		if !last {
			continue
		}
		fmt.Fprintf(w, "    commands from %s:\n", sanitize.Field(r.Source))
		for _, c := range r.Commands {
			how := fmt.Sprintf("exit %d", c.Exit)
			switch {
			case c.TimedOut:
				how = "timed out"
			case c.Missing:
				how = "not found (exit 127)"
			}
			fmt.Fprintf(w, "      $ %s  -> %s, %.1fs\n", sanitize.Field(c.Cmd), how, float64(c.DurationMS)/1000)
		}
		if r.Error != "" {
			fmt.Fprintf(w, "    could not run: %s\n", sanitize.Field(r.Error))
		}
		if !r.Passed && strings.TrimSpace(r.Tail) != "" {
			fmt.Fprintf(w, "    output (tail):\n%s\n", render.Indent(sanitize.Prose(redact.Text(r.Tail)), "      "))
		}
		if r.Refused != "" {
			fmt.Fprintf(w, "    not passed: %s\n", sanitize.Field(r.Refused))
		}
		if r.Log != "" && r.Origin == task.GateHere {
			fmt.Fprintf(w, "    whole log: %s\n", sanitize.Field(r.Log))
		}
	}
	if g.FixRounds > 0 {
		fmt.Fprintf(w, "  automatic fix rounds: %d\n", g.FixRounds)
	}
}

// gateVerdict is how show words a run: passed or failed when this
// machine ran it; anything else only says what its record claims.
func gateVerdict(r task.GateRun) string {
	claim := "failed"
	if r.Passed {
		claim = "passed"
	}
	if r.Origin == task.GateHere {
		return claim
	}
	return fmt.Sprintf("%s (its record says %s, host %q)", task.GateRemote, claim, sanitize.Field(r.Host))
}

// sanitizeFields escapes each of ss for a terminal.
func sanitizeFields(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = sanitize.Field(s)
	}
	return out
}
