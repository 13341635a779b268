package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/internal/redact"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// Show is what lazy show prints as text, fetched once (the CLI fetches
// it): the record and its detail, and the few things only the text
// adds. Render reads it and fetches nothing.
type Show struct {
	Snapshot *task.Snapshot
	Detail   *task.Detail
	// Parent names the parent task as "slug (id)", or by id alone if it
	// cannot be loaded; "" for a root task.
	Parent string
	// PR is the pull request in brief, "" when there is none.
	PR string
	// Foreign says the record claims this host runs the session, but
	// this machine never started it.
	Foreign bool
	// Overlaps is what the task's branch shares with other active tasks
	// and with what landed on its target.
	Overlaps review.TaskOverlaps
	Next     []string
	// Attempts compares a group's attempts (nil for any other task);
	// AttemptOf names an attempt's group as "attempt K of slug".
	Attempts  *attempts.Comparison
	AttemptOf string
	// Protected names the protected paths the task's change touches, in
	// a line ("": none); they need a human's accept --approve-protected.
	Protected string
	// BudgetNote follows a task's own budget: what it and its subtasks
	// spent against it, and the figures the sum leaves out.
	BudgetNote string
}

// Render prints the view as text, section by section.
func (v *Show) Render(w io.Writer, st Style) error {
	v.renderHeader(w, st)
	v.renderAttempts(w)
	v.renderSession(w)
	Overlaps(w, v.Snapshot.Task.Slug, v.Overlaps)
	v.renderPermissions(w)
	v.renderGate(w)
	v.renderRefusals(w)
	v.renderTurns(w)
	v.renderNotes(w)
	if err := v.renderHistory(w); err != nil {
		return err
	}
	if len(v.Next) > 0 {
		fmt.Fprintf(w, "\nNext\n")
		for _, s := range v.Next {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	return nil
}

// renderHeader prints the task's fields and its goal.
func (v *Show) renderHeader(w io.Writer, st Style) {
	t, d := &v.Snapshot.Task, v.Detail
	fmt.Fprintf(w, "%s  (%s)\n", t.Slug, t.ID)
	fmt.Fprintf(w, "  Title:    %s\n", t.Title)
	fmt.Fprint(w, "  Status:   ")
	st.Print(w, StatusSGR[t.Status], string(t.Status))
	if d.Live != "" {
		fmt.Fprintf(w, " (%s)", d.Live)
	}
	fmt.Fprintln(w)
	if t.Outcome != "" {
		fmt.Fprintf(w, "  Outcome:  %s\n", t.Outcome)
	}
	if t.Reason != "" {
		fmt.Fprintf(w, "  Reason:   %s\n", OneLine(t.Reason, 100))
	}
	if v.PR != "" {
		fmt.Fprintf(w, "  PR:       %s %s\n", v.PR, sanitize.Field(d.PR.URL))
	}
	if v.Parent != "" {
		fmt.Fprintf(w, "  Parent:   %s\n", v.Parent)
	}
	if v.AttemptOf != "" {
		fmt.Fprintf(w, "  Attempt:  %s\n", v.AttemptOf)
	}
	if t.TargetBranch != "" {
		fmt.Fprintf(w, "  Target:   %s\n", t.TargetBranch)
	}
	if len(t.AllowedPaths) > 0 {
		fmt.Fprintf(w, "  Allowed:  %s\n", strings.Join(t.AllowedPaths, ", "))
	}
	fmt.Fprintf(w, "  Created:  %s by %s\n", AbsTime(t.CreatedAt), ActorOrHuman(t.CreatedBy))
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
		fmt.Fprintf(w, "  Budget:   %s (its own, for it and its subtasks)%s\n", BudgetAmount(usd), v.BudgetNote)
	}
	if h := t.Hold; h != nil {
		fmt.Fprintf(w, "  Held:     %s\n", OneLine(sanitize.Field(h.Reason), 160))
		fmt.Fprintf(w, "  Next:     %s\n", session.HoldNext(t.Slug, h))
	}
	if d.Goal != "" {
		fmt.Fprintf(w, "\nGoal:\n%s\n", Indent(d.Goal, "  "))
	}
}

// BudgetAmount is a budget as show prints it; 0 allows no spend.
func BudgetAmount(usd float64) string {
	if usd == 0 {
		return "$0 (no spend allowed)"
	}
	return fmt.Sprintf("$%.2f", usd)
}

// renderAttempts prints a group's attempts side by side, one line each:
// K, slug, agent and model, status, cost, gate, diff stat.
func (v *Show) renderAttempts(w io.Writer) {
	av := v.Attempts
	if av == nil {
		return
	}
	fmt.Fprintf(w, "\n%s\n", AttemptsHeading(av))
	AttemptTable(w, av)
}

// renderSession prints the current session, if any.
func (v *Show) renderSession(w io.Writer) {
	s, t := v.Snapshot.Session, &v.Snapshot.Task
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nSession %d (%s) on %s, agent %s\n", s.Number, ShortID(s.ID), s.Host, sanitize.Field(attempts.AgentLabel(s.Agent, s.Model)))
	fmt.Fprintf(w, "  Branch:   %s (from %s)\n  Worktree: %s\n", s.Branch, ShortID(s.GitStartSHA), s.Worktree)
	if label, reason := ParkReason(t.Status, s.InterruptReason, v.Detail.TurnList); reason != "" {
		fmt.Fprintf(w, "  %-9s %s\n", label+":", reason)
	}
	if v.Foreign {
		fmt.Fprintf(w, "  Warning:  the record says this host runs this session, but this machine never started it; lazy will not run, stop or delete anything for it (lazy start --take-over %s adopts it)\n", t.Slug)
	}
}

// renderPermissions prints what the agent may do here and the pending
// file-permission violations.
func (v *Show) renderPermissions(w io.Writer) {
	if perms := v.Detail.Permissions; perms != nil {
		fmt.Fprintf(w, "\nPermissions (%s, %s", perms.Agent, perms.Work.Posture)
		if perms.Network != "" {
			fmt.Fprintf(w, ", network %s", sanitize.Field(perms.Network))
		}
		if perms.Note != "" {
			fmt.Fprintf(w, ": %s", perms.Note)
		}
		fmt.Fprintf(w, ")\n  Work:     %s\n  Ask:      %s\n  Leftovers: %s\n", sanitize.Field(perms.Work.String()), sanitize.Field(perms.Ask.String()), perms.Uncommitted)
	}
	if pending := v.Snapshot.Violations.Pending; len(pending) > 0 {
		fmt.Fprintf(w, "\nPending file-permission violations:\n")
		for _, p := range pending {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
}

// renderRefusals prints the operations refused when histories merged.
func (v *Show) renderRefusals(w io.Writer) {
	refused := v.Snapshot.Task.MergeRefused
	if len(refused) == 0 {
		return
	}
	fmt.Fprintf(w, "\nRefused when two machines' histories were merged (the commits stay in history):\n")
	for _, r := range refused {
		fmt.Fprintf(w, "  %s by %s on %s (%s -> %s), commit %s: %s\n", r.Op, ActorOrHuman(r.Actor), r.Host, r.From, r.To, ShortSHA(r.Commit), r.Reason)
	}
}

// renderTurns prints every turn with what it committed and changed.
func (v *Show) renderTurns(w io.Writer) {
	turns := v.Detail.TurnList
	fmt.Fprintf(w, "\nTurns (%d)\n", len(turns))
	for _, tn := range turns {
		who := tn.Role
		if tn.Role == task.RoleHuman {
			who = string(ActorOrHuman(tn.Actor))
		}
		fmt.Fprintf(w, "  #%d %s %s %s\n%s\n", tn.Seq, AbsTime(tn.At), who, tn.Kind, Indent(tn.Content, "      "))
		if tn.Role == task.RoleAgent || len(tn.Commits) > 0 || len(tn.ChangedFiles) > 0 {
			v.renderTurnWork(w, tn)
		}
	}
}

// renderTurnWork prints a turn's commits, exit and changed files.
func (v *Show) renderTurnWork(w io.Writer, tn task.Turn) {
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
	if r := tn.Resume; r != nil {
		fmt.Fprintf(w, "      %s\n", sanitize.Field(r.String()))
	}
	if tn.Tools.AllFailed() {
		// Whatever the agent's last words say, it did nothing it set
		// out to: no permission, a missing tool, a broken environment.
		fmt.Fprintf(w, "      ⚠ %s; lazy logs %s --turn %d shows why\n", tn.Tools, v.Snapshot.Task.Slug, tn.Seq)
	}
	for i, f := range tn.ChangedFiles {
		if i == MaxFilesShown && len(tn.ChangedFiles) > MaxFilesShown+1 {
			fmt.Fprintf(w, "         … and %d more (lazy diff %s --name-only)\n", len(tn.ChangedFiles)-i, v.Snapshot.Task.Slug)
			break
		}
		fmt.Fprintf(w, "         %s\n", sanitize.Field(f))
	}
}

// renderNotes prints the comments and the journal.
func (v *Show) renderNotes(w io.Writer) {
	if comments := v.Detail.CommentList; len(comments) > 0 {
		fmt.Fprintf(w, "\nComments (%d)\n", len(comments))
		for _, cm := range comments {
			fmt.Fprintf(w, "  #%d %s %s\n%s\n", cm.Seq, AbsTime(cm.At), cm.Actor, Indent(cm.Text, "      "))
		}
	}
	if journal := v.Detail.Journal; len(journal) > 0 {
		fmt.Fprintf(w, "\nJournal (%d)\n", len(journal))
		for _, j := range journal {
			fmt.Fprintf(w, "  %s %s, turn %d\n%s\n", j.At.Format(time.DateTime), ActorOrHuman(j.Actor), j.Journal.Turn, Indent(j.Text, "      "))
			for _, x := range j.Journal.Decisions {
				fmt.Fprintf(w, "      decided: %s\n", OneLine(x, 200))
			}
			for _, x := range j.Journal.Deferrals {
				fmt.Fprintf(w, "      deferred: %s\n", OneLine(x, 200))
			}
		}
	}
}

// renderHistory prints the status history as a table.
func (v *Show) renderHistory(w io.Writer) error {
	fmt.Fprintf(w, "\nHistory\n")
	var rows [][]string
	for _, h := range v.Detail.History {
		from := string(h.From)
		if from == "" {
			from = "-"
		}
		move := from + " -> " + string(h.To)
		if h.From == h.To {
			move = string(h.To)
		}
		rows = append(rows, []string{"  " + AbsTime(h.At), h.Op, string(ActorOrHuman(h.Actor)), move, h.Host})
	}
	Columns(w, rows)
	return nil
}

// renderGate prints the task's merge gate: its newest run with each
// command's exit, the output tail of a failure and where the whole log
// is, older runs in a line each, and a human's skip.
func (v *Show) renderGate(w io.Writer) {
	g := v.Detail.GateRecord
	if v.Protected == "" && (g == nil || (len(g.Runs) == 0 && g.Skipped == nil && g.Approved == nil && len(g.Fixes) == 0)) {
		return
	}
	fmt.Fprintf(w, "\nGate\n")
	if v.Protected != "" {
		fmt.Fprintf(w, "  protected: %s\n", v.Protected)
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
		if b := r.Batch; b != nil {
			spec += fmt.Sprintf(", %s, round %d, %d entries", sanitize.Field(task.BatchPlace(b.Batch, b.Of, b.Lane)), b.Round, b.Entries)
		}
		fmt.Fprintf(w, "  run %s %s  %s  on %s at %s (tree %s%s), %.1fs\n", sanitize.Field(r.ID), verdict, r.At.UTC().Format(task.TimeLayout),
			sanitize.Field(r.Target), ShortSHA(sanitize.Field(r.Base)), ShortSHA(sanitize.Field(r.Tree)), spec, float64(r.DurationMS)/1000)
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
			fmt.Fprintf(w, "    output (tail):\n%s\n", Indent(sanitize.Prose(redact.Text(r.Tail)), "      "))
		}
		if r.Refused != "" {
			fmt.Fprintf(w, "    not passed: %s\n", sanitize.Field(r.Refused))
		}
		if r.Log != "" && r.Origin == task.GateHere {
			fmt.Fprintf(w, "    whole log: %s\n", sanitize.Field(r.Log))
		}
	}
	if b := g.Batched; b != nil {
		fmt.Fprintf(w, "  batched train into %s: %s\n", sanitize.Field(b.Target), sanitize.Field(b.String()))
	}
	if g.Lane != "" {
		fmt.Fprintf(w, "  lane: %s (lazy.gate.lanes: gated and landed beside the train's other lanes)\n", sanitize.Field(g.Lane))
	}
	if g.FixRounds > 0 {
		fmt.Fprintf(w, "  automatic fix rounds: %d\n", g.FixRounds)
	}
	for _, f := range g.Fixes {
		// Whether the agent kept its context: its own session resumed,
		// or a new one and why (the CLI's words, hence sanitized).
		fmt.Fprintf(w, "  %s\n", sanitize.Field(f.String()))
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

// ActorOrHuman is who did something: a human when the record names no one.
func ActorOrHuman(a machine.Actor) machine.Actor {
	if a == "" {
		return machine.Human
	}
	return a
}

// ParkReason labels why the task is where it is by its status: a stop
// reads "Stopped", a classified failure that parked it "Blocked", a dead
// agent "Interrupted", and a failure recorded before a later move
// "Failed". A stop's own words come from its turn, since a stop records
// no failure.
func ParkReason(status machine.Status, reason string, turns []task.Turn) (string, string) {
	var last *task.Turn
	if len(turns) > 0 {
		last = &turns[len(turns)-1]
	}
	switch status {
	case machine.Interrupted:
		return "Interrupted", reason
	case machine.Blocked, machine.Conflict:
		if last != nil && last.Kind == "stop" {
			return "Stopped", strings.TrimPrefix(strings.TrimPrefix(last.Content, "[stop] "), "the human stopped this turn: ")
		}
		return "Blocked", reason
	}
	return "Failed", reason
}

// MaxFilesShown bounds the changed files show lists per turn.
const MaxFilesShown = 20

// Overlaps prints lazy show's Overlaps section: per other task and
// for what landed on the target, the files, at most MaxFilesShown each.
func Overlaps(w io.Writer, slug string, o review.TaskOverlaps) {
	if o.Empty() {
		return
	}
	into := o.Into
	if into == "" {
		into = "its target"
	}
	fmt.Fprintf(w, "\nOverlaps (files changed here and elsewhere; the later merge may conflict)\n")
	files := func(list []string) {
		for i, f := range list {
			if i == MaxFilesShown && len(list) > MaxFilesShown+1 {
				fmt.Fprintf(w, "      … and %d more\n", len(list)-i)
				return
			}
			fmt.Fprintf(w, "      %s\n", FileName(f))
		}
	}
	for _, other := range o.Others() {
		n := len(o.With[other])
		fmt.Fprintf(w, "  with %s, also merging into %s (%d %s):\n", other, into, n, Plural(n, "file", "files"))
		files(o.With[other])
	}
	if n := len(o.Landed); n > 0 {
		fmt.Fprintf(w, "  landed on %s since the branch forked (%d %s; lazy sync %s merges it in now):\n", into, n, Plural(n, "file", "files"), slug)
		files(o.Landed)
	}
	if o.Truncated {
		fmt.Fprintf(w, "  (a side changed more than %d files, which is all lazy compares: some overlaps may be missing)\n", worktree.MaxRangeFiles)
	}
}

// FileName is a path as lazy prints it on a terminal: as it is when it is
// plain, else quoted the way Go quotes a string (a newline, a control or
// a bidi character shows as an escape), so one name stays on one line
// and looks like what it is.
func FileName(f string) string {
	if strconv.CanBackquote(f) && termsafe.Safe(f) && !strings.Contains(f, "\t") {
		return f
	}
	return strconv.Quote(f)
}

// Plural is one or many by n.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// OneLine flattens text for a table cell.
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// ShortSHA is the display form of a commit.
func ShortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
