package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/lazyorch/lazy/daemon"
	"github.com/lazyorch/lazy/events"
	"github.com/lazyorch/lazy/internal/progress"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// AcceptCmd merges a task's work.
type AcceptCmd struct {
	Tasks    []string `arg:"" name:"task" help:"Slugs or id prefixes. Several form a merge queue per target branch, landed in this order, each gated on the target plus those ahead of it." predictor:"acceptable"`
	SkipGate bool     `name:"skip-gate" help:"Land without running the merge gate (lazy.gate, .lazy/gate): a human decision, recorded on the task and in the commit with --reason."`
	Reason   string   `help:"Why the gate is skipped (required with --skip-gate)."`
	// ApproveProtected is the human approval a change touching protected
	// paths needs.
	ApproveProtected bool          `name:"approve-protected" help:"Approve the protected paths the change touches (lazy.gate.protect, .lazy/, CI configuration, the files the gate's commands name), which the gate alone may not decide: a human decision, recorded on the task and in the commit's Lazy-Approved-Protected trailer. Review them first with lazy diff."`
	SkipPreTurn      bool          `name:"skip-pre-turn" help:"Do not run the pre-accept agent turn configured in lazy.accept.preTurn."`
	Timeout          time.Duration `help:"How long the pre-accept agent turn may take." default:"30m"`
	JSON             bool          `help:"Print the result as JSON."`
	DryRun           bool          `name:"dry-run" short:"n" help:"Print exactly what would be merged (commits, files, the commit message) and change nothing."`
	// Attempt lands one attempt of a task tried several ways.
	Attempt int `help:"Land attempt K of a task tried several ways (lazy start --attempts): through the normal accept (gate, queue), then the task completes and its other attempts are closed with the reason." placeholder:"K"`
}

// Run implements lazy accept.
func (c *AcceptCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	if c.Reason != "" && !c.SkipGate {
		return usageError{"--reason goes with --skip-gate: it says why the gate is skipped"}
	}
	if c.SkipGate && strings.TrimSpace(c.Reason) == "" {
		// Caught here, before any task is touched: with several tasks
		// each would otherwise fail on its own for the same missing flag.
		return usageError{"--skip-gate needs --reason \"...\": why the gate is skipped, recorded on the task and in the commit"}
	}
	if c.Attempt != 0 && len(c.Tasks) != 1 {
		return usageError{"--attempt K lands an attempt of one task; name that one task"}
	}
	if c.Attempt != 0 {
		// The chosen attempt is the task from here on: a dry run
		// previews it, and the accept below lands it.
		if _, id, err := env.Attempts().Resolve(c.Tasks[0], c.Attempt); err != nil {
			return err
		} else if c.DryRun {
			c.Tasks[0] = id
		}
	}
	if c.DryRun {
		if len(c.Tasks) != 1 {
			return usageError{"--dry-run previews one task at a time"}
		}
		return c.dryRun(a, ctx, env)
	}
	opts, err := c.options(a)
	if err != nil {
		return err
	}
	if len(c.Tasks) > 1 {
		return c.queue(a, ctx, env, opts)
	}
	id, err := a.store.Resolve(c.Tasks[0])
	if err != nil {
		return err
	}
	var res *landing.AcceptResult
	if c.Attempt != 0 {
		_, aid, _ := env.Attempts().Resolve(id, c.Attempt)
		res, err = env.Landing().AcceptAttempt(ctx, id, c.Attempt, a.acceptDisplay(aid), opts)
	} else {
		res, err = env.Landing().Accept(ctx, id, a.acceptDisplay(id), opts)
	}
	if err != nil {
		return err
	}
	a.pushPooled(ctx, res.Snapshot)
	for _, w := range res.Warnings {
		fmt.Fprintf(a.io.errOut, "lazy: warning: %s\n", w)
	}
	if c.JSON {
		out := acceptJSON(res)
		if res.StashOwed != nil {
			out["stash_owed"] = map[string]string{"stash": res.StashOwed.SHA, "checkout": res.StashOwed.Dest, "error": res.StashOwed.Error()}
		}
		if err := a.io.printJSON(out); err != nil {
			return err
		}
		if res.StashOwed != nil {
			return res.StashOwed
		}
		return nil
	}
	if res.PR == nil && res.Commit == "" && c.Attempt != 0 {
		fmt.Fprintf(a.io.out, "Attempt %d (%s) had landed already\n", c.Attempt, res.Snapshot.Task.Slug)
	} else {
		fmt.Fprintln(a.io.out, acceptedLine(res))
	}
	if g := res.Snapshot.Task.AttemptOf; g != "" {
		if gs, err := a.store.Load(g); err == nil && gs.Task.Status == machine.Complete {
			fmt.Fprintf(a.io.out, "%s is complete (%s); its other attempts are closed with the reason \"attempt %d was chosen\" (their branches are kept)\n", gs.Task.Slug, gs.Task.Reason, res.Snapshot.Task.Attempt)
		}
	}
	if res.PR == nil && res.StashOwed != nil {
		// The merge happened, but the user's changes are not back: that
		// is a failure they must see.
		return res.StashOwed
	}
	return nil
}

// acceptedLine is the sentence that says where an accept landed (lazy
// accept prints it, lazy watch shows it).
func acceptedLine(res *landing.AcceptResult) string {
	slug := res.Snapshot.Task.Slug
	if res.PR != nil {
		if res.Pending != "" {
			return fmt.Sprintf("Merging %s: pull request #%d %s is not merged yet (%s); lazy accept %s again (or the daemon) finishes it", slug, res.PR.Number, res.PR.URL, res.Pending, slug)
		}
		return fmt.Sprintf("Accepted %s: pull request #%d merged into %s as %s", slug, res.PR.Number, res.Into, render.ShortSHA(res.Commit))
	}
	return fmt.Sprintf("Accepted %s: squash-merged into %s as %s%s", slug, res.Into, render.ShortSHA(res.Commit), gateNote(res))
}

// options are the accept options of this command and the repository's
// configuration.
func (c *AcceptCmd) options(a *app) (landing.AcceptOptions, error) {
	var once sync.Once
	opts := landing.AcceptOptions{PreTurnTimeout: c.Timeout, SkipGate: c.SkipGate, SkipReason: c.Reason, ApproveProtected: c.ApproveProtected,
		Reconcile: func(ctx context.Context, id string) {
			once.Do(func() { a.daemonAfterLaunch(ctx) })
			a.reconcileTask(ctx, id)
		}}
	if v, ok := a.cfg.Get("lazy.accept.preTurn"); ok && !c.SkipPreTurn {
		opts.PreTurn = v
	}
	sb, err := a.settings().sandbox("")
	if err != nil {
		return opts, err
	}
	opts.Sandbox = sb
	return opts, nil
}

// pushPooled sends the accept of a pooled task to the pool's remote, so
// the runner that holds it lets it go; a failure is a warning (lazy push
// sends it later).
func (a *app) pushPooled(ctx context.Context, sn *task.Snapshot) {
	if sn == nil || sn.Task.Pool == nil {
		return
	}
	remote, err := a.settings().poolRemote(ctx, "")
	if err == nil {
		spec, _ := a.cfg.Get("lazy.pushRefspec")
		_, err = a.store.Sync().Push(ctx, remote, spec)
	}
	if err != nil {
		fmt.Fprintf(a.io.errOut, "lazy: warning: %s is accepted here, but telling the pool failed (lazy push sends it): %v\n", sn.Task.Slug, err)
	}
}

// acceptDisplay narrates the accept of task id on stderr.
func (a *app) acceptDisplay(id string) *phaseDisplay {
	slug := id
	if sn, err := a.store.Load(id); err == nil {
		slug = sn.Task.Slug
	}
	return &phaseDisplay{w: a.io.errOut, tty: isTerminal(a.io.errOut), slug: slug, relay: a.phaseRelay(id, "accept")}
}

// acceptJSON is the JSON of one accept's result.
func acceptJSON(res *landing.AcceptResult) map[string]any {
	out := map[string]any{"task": toJSON(&res.Snapshot.Task), "into": res.Into, "commit": res.Commit, "pending": res.Pending, "warnings": nonNil(res.Warnings)}
	if res.Gate != "" {
		out["gate_run"] = res.Gate
	}
	return out
}

// gateNote says which gate run let the commit land.
func gateNote(res *landing.AcceptResult) string {
	if res.Gate == "" {
		return ""
	}
	return " (gate passed, run " + res.Gate + ")"
}

// queue accepts several tasks as a merge queue and reports each; it
// fails if any did not land.
func (c *AcceptCmd) queue(a *app, ctx context.Context, env *wire.Env, opts landing.AcceptOptions) error {
	ids := make([]string, len(c.Tasks))
	for i, name := range c.Tasks {
		id, err := a.store.Resolve(name)
		if err != nil {
			return err
		}
		ids[i] = id
	}
	line := a.io.progressLine(c.JSON)
	line.Start(time.Second)
	line.Set(fmt.Sprintf("accept: %d tasks in the queue; checking and gating them", len(ids)))
	pos := 0
	results := env.Landing().AcceptMany(ctx, ids, func(id string) landing.Narrator {
		pos++
		d := a.acceptDisplay(id)
		d.line, d.pos = line, fmt.Sprintf("%d of %d", pos, len(ids))
		d.status("starting")
		return d
	}, opts)
	line.Close()
	failed := 0
	var out []map[string]any
	for i, r := range results {
		if r.Err != nil {
			failed++
		}
		if c.JSON {
			out = append(out, queueResultJSON(a.taskSummary(ids[i]), r))
			continue
		}
		switch {
		case r.Err != nil:
			fmt.Fprintf(a.io.out, "Not accepted %s: %s\n", c.Tasks[i], sanitize.Field(r.Err.Error()))
		case r.Result.Pending != "":
			fmt.Fprintf(a.io.out, "Merging %s: %s\n", r.Result.Snapshot.Task.Slug, r.Result.Pending)
		default:
			fmt.Fprintf(a.io.out, "Accepted %s: squash-merged into %s as %s%s\n", r.Result.Snapshot.Task.Slug, r.Result.Into, render.ShortSHA(r.Result.Commit), gateNote(r.Result))
		}
		// What landed but was not fully settled (an attempt's group, say)
		// is said here as for one task.
		if r.Err == nil {
			for _, w := range r.Result.Warnings {
				fmt.Fprintf(a.io.errOut, "lazy: warning: %s\n", sanitize.Field(w))
			}
		}
	}
	if c.JSON {
		if err := a.io.printJSON(out); err != nil {
			return err
		}
	}
	if failed > 0 {
		return silentExit{code: 1, err: fmt.Errorf("%d of %d tasks were not accepted", failed, len(results))}
	}
	return nil
}

// queueResultJSON is one element of lazy accept TASK... --json: the
// task (as it now is) whether or not it was accepted, so every element
// has one shape, and the error and gate run of one that was not.
func queueResultJSON(task task.Summary, r landing.Accepting) map[string]any {
	if r.Err != nil {
		m := map[string]any{"task": task, "accepted": false, "error": r.Err.Error()}
		var ge *landing.GateError
		if errors.As(r.Err, &ge) {
			m["gate"] = ge.Run
			m["fixing"] = ge.Fixing
		}
		var pe *landing.ProtectedError
		if errors.As(r.Err, &pe) {
			m["protected"] = nonNil(pe.Files)
		}
		return m
	}
	m := acceptJSON(r.Result)
	m["accepted"] = r.Result.Pending == ""
	return m
}

// taskSummary is task id as it now is, or only its id if it cannot be
// read.
func (a *app) taskSummary(id string) task.Summary {
	if sn, err := a.store.Load(id); err == nil {
		return toJSON(&sn.Task)
	}
	return task.Summary{ID: id}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// phaseRelay sends narration to the repository's daemon, if one runs, as
// progress events for every subscriber (lazy daemon --events, and the
// clients that follow it). It never starts a daemon and never waits long.
func (a *app) phaseRelay(id, op string) func(events.Phase) {
	if a.getenv("LAZY_NO_DAEMON") != "" {
		return func(events.Phase) {}
	}
	client := daemon.Dial(a.repo.LazyDir())
	return func(ev events.Phase) {
		ev.TaskID, ev.Op = id, op
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_ = client.Phase(ctx, ev)
	}
}

// phaseDisplay renders accept narration: "[n/m] label" on a terminal,
// plain self-contained lines otherwise (logs, CI, pipes), and relays each
// line to the daemon.
type phaseDisplay struct {
	w     io.Writer
	tty   bool
	slug  string
	relay func(events.Phase)
	// line (accept of a queue on a terminal) is the status line that
	// shows the task's place in the queue and its phase; the narration
	// prints above it.
	line *progress.Line
	pos  string // "2 of 3"
}

// say prints one line of the narration on a terminal.
func (d *phaseDisplay) say(s string) {
	if d.line.On() {
		d.line.Println(s)
		return
	}
	fmt.Fprintln(d.w, s)
}

// status sets the status line: the task, its place in the queue, what
// it does.
func (d *phaseDisplay) status(what string) {
	if d.line.On() {
		d.line.Set("accept " + d.slug + " (" + d.pos + " in the queue): " + what)
	}
}

func (d *phaseDisplay) Prelude(msg string) {
	d.relay(events.Phase{Label: msg})
	if d.tty {
		d.say("      " + msg)
		d.status(msg)
		return
	}
	fmt.Fprintf(d.w, "· accept %s: %s\n", d.slug, msg)
}

func (d *phaseDisplay) Plan(plan []landing.Phase) {
	labels := make([]string, len(plan))
	for i, p := range plan {
		labels[i] = p.Label
	}
	d.relay(events.Phase{Plan: labels})
	if d.tty {
		d.say("      plan: " + strings.Join(labels, " → "))
		return
	}
	fmt.Fprintf(d.w, "· accept %s: plan: %s\n", d.slug, strings.Join(labels, "; "))
}

func (d *phaseDisplay) Step(n, m int, p landing.Phase) {
	d.relay(events.Phase{Step: n, Of: m, Label: p.Label})
	if d.tty {
		d.say(fmt.Sprintf("[%d/%d] %s", n, m, p.Label))
		d.status(fmt.Sprintf("step %d of %d: %s", n, m, p.Label))
		return
	}
	fmt.Fprintf(d.w, "· accept %s: step %d of %d: %s\n", d.slug, n, m, p.Label)
}

func (d *phaseDisplay) Note(msg string) {
	d.relay(events.Phase{Label: msg})
	if d.tty {
		d.say("      " + msg)
		return
	}
	fmt.Fprintf(d.w, "· accept %s: %s\n", d.slug, msg)
}

// dryRun prints what accept would squash-merge, writing nothing.
func (c *AcceptCmd) dryRun(a *app, ctx context.Context, env *wire.Env) error {
	p, err := env.Landing().PreviewAccept(ctx, c.Tasks[0])
	if err != nil {
		return err
	}
	if c.JSON {
		return a.io.printJSON(p)
	}
	w := a.io.out
	fmt.Fprintf(w, "Dry run: lazy accept %s would squash-merge %s into %s as one commit (nothing was changed)\n", p.Slug, p.Branch, p.Into)
	fmt.Fprintf(w, "\nCommits (%d):\n", len(p.Commits))
	for _, cm := range p.Commits {
		fmt.Fprintf(w, "  %s\n", sanitize.Field(cm))
	}
	fmt.Fprintf(w, "\nFiles (%d):\n", len(p.Files))
	for _, f := range p.Files {
		fmt.Fprintf(w, "  %s\n", sanitize.Field(f))
	}
	if p.Stat != "" {
		fmt.Fprintf(w, "\n%s\n", render.Indent(sanitize.Prose(p.Stat), " "))
	}
	fmt.Fprintf(w, "\nCommit message:\n%s\n", render.Indent(sanitize.Prose(p.Message), "  "))
	if p.Blocker != "" {
		fmt.Fprintf(w, "\nAccept would refuse now: %s\n", p.Blocker)
		return silentExit{code: 1, err: errors.New(p.Blocker)}
	}
	fmt.Fprintf(w, "\nRun lazy accept %s to merge it (lazy diff %s shows the patch).\n", p.Slug, p.Slug)
	return nil
}
