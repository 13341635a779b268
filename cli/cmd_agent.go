package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/handoff"

	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/daemon"
	"github.com/lazyorch/lazy/events"
	"github.com/lazyorch/lazy/internal/configkeys"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/mcp"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/reconcile"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/runner"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/supervise"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/tui"
	"github.com/lazyorch/lazy/wire"
)

// StartCmd starts a backlog task.
type StartCmd struct {
	Task  string `arg:"" help:"Slug or id prefix." predictor:"task"`
	Agent string `help:"Agent CLI to run: claude, codex or exec. Default: exec when --command is given, else git config lazy.agent, else claude. With --attempts, a comma-separated list cycled over the attempts (claude,codex)." predictor:"agent"`
	Model string `help:"The model the agent runs (Claude's and Codex's --model: sonnet, opus, gpt-5-codex); default: the CLI's own. Recorded on the session." placeholder:"MODEL"`
	// Attempts tries the task several ways side by side.
	Attempts *int   `help:"Try the task N ways side by side (2 to 8): N attempts, each a task of its own with its branch lazy/<slug>-a<K>, worktree, session and cost; lazy show compares them (--wait waits for every attempt and prints the comparison) and lazy accept TASK --attempt K lands one." placeholder:"N"`
	Pick     string `help:"With --attempts: how the attempt that lands is chosen: human (you read lazy show's comparison; the default, or git config lazy.attempts.pick) or gate (the daemon gates each attempt on the tree it would land when it parks, ranks them by gate passed, then lower cost, then smaller diff, and proposes the best: lazy start fix-login --attempts 3 --pick gate)." enum:",human,gate" default:""`
	Land     bool   `help:"With --attempts N --pick gate: land the attempt the gate picks through the normal accept (its queue, its gate) and close the others with the reason; if none passed, nothing lands (lazy start fix-login --attempts 3 --pick gate --land)."`
	Command  string `help:"The exec agent's command line (split on spaces; the prompt is appended as the last argument and set in LAZY_PROMPT). Default: git config lazy.exec.command." placeholder:"CMD"`
	JSON     bool   `help:"Print the task as JSON."`
	Sandbox  string `help:"Run this session's turns under bubblewrap (on) or not (off), whatever git config lazy.sandbox says. Without it a subtask of a task sandboxed here runs sandboxed too; off is how a human lets one out (an agent never can)." enum:",on,off" default:""`
	// TakeOver adopts a session this machine did not start.
	TakeOver bool `name:"take-over" help:"Make this machine the owner of a task whose session was started on another machine (or whose local record was lost): a new session with the agent and command given here, in a worktree derived from its slug. No turn starts; resume or unblock it next."`
	// Pool hands the tasks to the runner pool instead of starting them here.
	Pool     bool     `help:"Mark the tasks for the runner pool and push: a lazy runner on any machine whose labels and agents fit claims and runs them (lazy pool shows them)."`
	More     []string `arg:"" optional:"" name:"more" help:"With --pool: more tasks to mark."`
	Label    []string `help:"With --pool: a label the runner must offer (gpu, linux-arm64; repeatable)."`
	Priority int      `help:"With --pool: runners take higher priorities first, then older tasks."`
	Remote   string   `help:"With --pool: the remote the pool lives on (default: git config lazy.pool.remote, else the default remote)." placeholder:"NAME"`
	followFlags
}

// Run implements lazy start.
func (c *StartCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	if c.Pool {
		return c.toPool(a, ctx, env)
	}
	if len(c.More) > 0 || len(c.Label) > 0 || c.Priority != 0 || c.Remote != "" {
		return usageError{"more than one task, --label, --priority and --remote go with --pool"}
	}
	agents := tui.SplitAgents(c.Agent)
	if len(agents) > 1 && c.Attempts == nil {
		return usageError{"a list of agents (--agent " + c.Agent + ") goes with --attempts N, which cycles it over the attempts"}
	}
	first := ""
	if len(agents) > 0 {
		first = agents[0]
	}
	in, err := a.settings().startInput(first, c.Command)
	if err != nil {
		return err
	}
	in.Model = sanitize.Field(c.Model)
	if c.Sandbox != "" {
		if in.Sandbox, err = a.settings().sandbox(c.Sandbox); err != nil {
			return err
		}
		in.SandboxExplicit = true
	}
	if c.Attempts == nil && (c.Pick != "" || c.Land) {
		return usageError{"--pick and --land choose among attempts; give --attempts N with them"}
	}
	if c.Attempts != nil {
		if c.TakeOver {
			return usageError{"--take-over adopts one session; it does not go with --attempts"}
		}
		return c.attempts(a, ctx, env, in, agents)
	}
	if c.TakeOver {
		sn, err := env.Lifecycle().TakeOver(ctx, c.Task, in)
		if err != nil {
			return err
		}
		if c.JSON {
			return a.io.printJSON(toJSON(&sn.Task))
		}
		fmt.Fprintf(a.io.out, "Took over %s on this machine: %s, worktree %s (branch %s); run lazy resume or lazy unblock to start its next turn here\n",
			sn.Task.Slug, sn.Task.Status, sn.Session.Worktree, sn.Session.Branch)
		return nil
	}
	if cur, err := a.openTask(c.Task); err == nil && cur.Session != nil && c.Agent != "" && handsOff(cur.Task.Status, cur.Session.Agent, in.Agent) {
		// A parked task another agent worked: start hands it over.
		return a.handoff(ctx, env, c.Task, handoff.Input{StartInput: in}, c.JSON, c.followFlags)
	}
	logOff := logsOptionsOf(a).logSize(c.Task)
	sn, err := env.Lifecycle().Start(ctx, c.Task, in)
	var waiting *lifecycle.WaitingError
	if errors.As(err, &waiting) && !c.Wait && !c.Follow {
		if _, derr := env.Runner().DeferStart(c.Task, in); derr != nil {
			return fmt.Errorf("%w; and it could not be kept to start later: %w", err, derr)
		}
		if _, derr := a.ensureDaemon(ctx); derr != nil {
			return fmt.Errorf("%s waits for %s; it is kept to start here then, but the daemon that starts it did not start: %w", waiting.Task, strings.Join(waiting.On, ", "), derr)
		}
		fmt.Fprintf(a.io.out, "%s waits for %s: it starts here once they are complete (the daemon starts it)\n", waiting.Task, strings.Join(waiting.On, ", "))
		return nil
	}
	if err != nil {
		return err
	}
	a.daemonAfterLaunch(ctx)
	if c.JSON && !c.Wait && !c.Follow {
		return a.io.printJSON(toJSON(&sn.Task))
	}
	fmt.Fprintf(a.io.out, "Started %s: working in %s (branch %s)\n", sn.Task.Slug, sn.Session.Worktree, sn.Session.Branch)
	return a.stay(ctx, c.followFlags, sn, logOff)
}

// attempts starts the task's attempts (start --attempts N).
func (c *StartCmd) attempts(a *app, ctx context.Context, env *wire.Env, in session.StartInput, agents []string) error {
	if c.Follow {
		return usageError{"--follow prints one agent's output; with --attempts, --wait waits for every attempt and compares them, and lazy watch (or lazy logs -f SLUG-a1) follows them"}
	}
	if err := attempts.Check(*c.Attempts); err != nil {
		return usageError{err.Error()}
	}
	if len(agents) > 0 {
		agents[0] = in.Agent
	}
	pick := c.Pick
	if pick == "" {
		pick, _ = a.cfg.Get("lazy.attempts.pick")
	}
	res, err := env.Attempts().Start(ctx, c.Task, attempts.Input{N: *c.Attempts, Agents: agents, Base: in, Pick: pick, Land: c.Land})
	if res != nil && len(res.Started) > 0 {
		a.daemonAfterLaunch(ctx)
	}
	if err != nil {
		return err
	}
	for _, e := range res.NotStart {
		fmt.Fprintf(a.io.errOut, "lazy: warning: %s\n", e)
	}
	if !c.JSON {
		fmt.Fprintf(a.io.out, "Trying %s %d ways:\n", res.Group.Task.Slug, *c.Attempts)
		for _, sn := range res.Started {
			fmt.Fprintf(a.io.out, "  attempt %d  %s  %s  working in %s (branch %s)\n", sn.Task.Attempt, sn.Task.Slug, attempts.AgentLabel(sn.Session.Agent, sn.Session.Model), sn.Session.Worktree, sn.Session.Branch)
		}
	}
	if c.Wait {
		return c.waitAttempts(a, ctx, env, res)
	}
	if c.JSON {
		out := map[string]any{"group": toJSON(&res.Group.Task)}
		var started []task.Summary
		for _, sn := range res.Started {
			started = append(started, toJSON(&sn.Task))
		}
		out["attempts"] = started
		return a.io.printJSON(out)
	}
	if line := attempts.PickLine(res.Group.Task.Slug, res.Group.Task.Pick); line != "" {
		then := "proposed"
		if res.Group.Task.Pick.Land {
			then = "landed"
		}
		fmt.Fprintf(a.io.out, "The daemon gates each attempt when it parks; the best is %s (lazy show %s says which and why)\n", then, res.Group.Task.Slug)
	}
	fmt.Fprintf(a.io.out, "Compare them with lazy show %s or lazy diff %s --attempts; land one with lazy accept %s --attempt K\n", res.Group.Task.Slug, res.Group.Task.Slug, res.Group.Task.Slug)
	return nil
}

// waitAttempts waits until every attempt started settles (start
// --attempts N --wait), then compares them as lazy show GROUP does and
// says how each ended: held, its gate failed, what carries it on. The
// exit code is lazy wait's: 3 when an attempt needs attention.
func (c *StartCmd) waitAttempts(a *app, ctx context.Context, env *wire.Env, res *attempts.Result) error {
	ids := make([]string, 0, len(res.Started))
	for _, sn := range res.Started {
		ids = append(ids, sn.Task.ID)
	}
	final, _, err := a.waitSettled(ctx, ids, false, 0, a.io.progressLine(c.JSON))
	if err != nil {
		return err
	}
	group := res.Group.Task.Slug
	av, err := env.Attempts().Compare(ctx, res.Group.Task.ID)
	if err != nil {
		return fmt.Errorf("every attempt of %s settled, but comparing them failed: %w", group, err)
	}
	attention := false
	var settledOut []task.Summary
	for _, id := range ids {
		sn := final[id]
		if sn == nil {
			continue
		}
		settledOut = append(settledOut, toJSON(&sn.Task))
		switch sn.Task.Status {
		case machine.Interrupted, machine.Conflict, machine.Abandoned:
			attention = true
		}
	}
	if c.JSON {
		if err := a.io.printJSON(map[string]any{"group": toJSON(&res.Group.Task), "attempts": settledOut, "comparison": attemptsJSON(av)}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.io.out, "\n%s\n", render.AttemptsHeading(av))
		render.AttemptTable(a.io.out, av)
		fmt.Fprintln(a.io.out)
		// The table says each status; an attempt held, whose gate
		// failed or that needs attention says more, with what carries it
		// on.
		for _, id := range ids {
			sn := final[id]
			if sn == nil {
				continue
			}
			line, facts := outcome(ctx, a.env, sn)
			if st := sn.Task.Status; facts || st != machine.Blocked && st != machine.Submitted && st != machine.Complete {
				fmt.Fprintf(a.io.out, "%s: %s\n", sn.Task.Slug, line)
			}
		}
		fmt.Fprintf(a.io.out, "Compare them with lazy show %s or lazy diff %s --attempts; land one with lazy accept %s --attempt K\n", group, group, group)
	}
	if attention {
		return silentExit{code: waitNeedsAttention, err: errors.New("an attempt needs attention")}
	}
	return nil
}

// toPool marks the tasks for the runner pool and pushes them.
func (c *StartCmd) toPool(a *app, ctx context.Context, env *wire.Env) error {
	if c.Command != "" || c.TakeOver || c.Sandbox != "" || c.Wait || c.Follow {
		return usageError{"--command, --take-over, --sandbox, --wait and --follow do not go with --pool: a runner runs the agent as its own machine is configured"}
	}
	remote, err := a.settings().poolRemote(ctx, c.Remote)
	if err != nil {
		return err
	}
	var marked []*task.Snapshot
	for _, name := range append([]string{c.Task}, c.More...) {
		sn, err := env.Runner().MarkForPool(ctx, name, runner.PoolMark{Labels: c.Label, Priority: c.Priority, Agent: c.Agent})
		if err != nil {
			return err
		}
		marked = append(marked, sn)
	}
	spec, _ := a.cfg.Get("lazy.pushRefspec")
	if _, err := a.store.Sync().Push(ctx, remote, spec); err != nil {
		return fmt.Errorf("marked %s for the pool here, but pushing %s to %s failed (lazy push retries): %w", words.Count(len(marked), "task", "tasks"), words.Plural(len(marked), "it", "them"), remote, err)
	}
	if c.JSON {
		out := make([]task.Summary, len(marked))
		for i, sn := range marked {
			out[i] = toJSON(&sn.Task)
		}
		return a.io.printJSON(out)
	}
	for _, sn := range marked {
		who := "any runner"
		if len(c.Label) > 0 {
			who = "a runner labelled " + words.List(c.Label, "")
		}
		fmt.Fprintf(a.io.out, "Pooled %s on %s: %s takes it (lazy pool shows it)\n", sn.Task.Slug, remote, who)
	}
	return nil
}

// launchSupervisor starts `lazy supervise` detached, in its own session,
// so that nothing that happens to this command (or a daemon) kills the
// agent.
func (a *app) launchSupervisor(taskID string) error {
	// The supervisor's own stderr (a panic, a race report) goes to a log
	// the interrupt diagnostics include, never to /dev/null.
	pd := proto.ForTask(a.repo.LazyDir(), taskID)
	if err := os.MkdirAll(string(pd), 0o755); err != nil {
		return err
	}
	errlog, err := os.OpenFile(pd.Path(proto.SupervisorLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = errlog.Close() }()
	pd.Remove(proto.SupervisorExitFile) // what is there belongs to an earlier launch
	if err := spawnerOf(a).start(errlog, pd.Path(proto.SupervisorExitFile), "supervise", taskID); err != nil {
		return fmt.Errorf("start supervisor: %w", err)
	}
	return nil
}

// SuperviseCmd runs one turn (started by lazy itself).
type SuperviseCmd struct {
	Task string `arg:"" help:"Full task id."`
}

// Run implements lazy supervise.
func (c *SuperviseCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	if !task.ValidID(c.Task) {
		return usageError{fmt.Sprintf("supervise needs a full task id, not %q", c.Task)}
	}
	return supervise.Run(ctx, proto.ForTask(a.repo.LazyDir(), c.Task))
}

// reconcileBeforeRead runs the reconciler's sweeps so that a read shows
// what happened since the last command (spec: the reconciler runs before
// list, blocked and active). Failures are reported, never fatal to the
// read. It reports whether anything changed.
func (a *app) reconcileBeforeRead(ctx context.Context, entries []task.Entry) bool {
	r, err := a.reconciler()
	if err != nil {
		fmt.Fprintf(a.io.errOut, "lazy: reconcile: %v\n", err)
		return false
	}
	defer func() { _ = r.Close() }()
	actions, err := r.Sweep(ctx, entries)
	if err != nil {
		fmt.Fprintf(a.io.errOut, "lazy: reconcile: %v\n", err)
	}
	if len(actions) > 0 {
		a.wrote = true
		notifyOptionsOf(a).command(actions)
	}
	return len(actions) > 0
}

// reconcileTask runs the reconciler on task id once. ctx may carry a
// hold on the task's lock (an accept's), under which it records.
func (a *app) reconcileTask(ctx context.Context, id string) {
	sn, err := a.store.Load(id)
	if err != nil {
		return
	}
	a.reconcileBeforeRead(ctx, []task.Entry{{ID: id, Status: sn.Task.Status}})
}

// reconciledList lists the tasks after a reconcile pass, listing again
// when the pass changed anything.
func (a *app) reconciledList(ctx context.Context) ([]task.Entry, error) {
	entries, err := a.store.List()
	if err != nil {
		return nil, err
	}
	if a.reconcileBeforeRead(ctx, entries) {
		return a.store.List()
	}
	return entries, nil
}

// reconciler builds the reconciler of this repository from git config:
// lazy.autoResume (default true) and lazy.startGrace (default 30s).
func (a *app) reconciler() (*reconcile.Reconciler, error) {
	timing, policy, turnErr := a.settings().turn()
	auto, err := a.cfg.Bool("lazy.autoResume", true)
	if err != nil {
		return nil, err
	}
	r := &reconcile.Reconciler{
		Env:          wire.New(a.store, session.Env{Actor: machine.System, RepoDir: a.repoDir(), Timing: timing, Policy: policy, TurnConfigErr: turnErr, Launch: a.launchSupervisor}).WithAccept(nil, a.gateReaper()),
		NoAutoResume: !auto,
	}
	r.WorktreeDir, _ = a.cfg.Get("lazy.worktreeDir")
	if v, ok := a.cfg.Get("lazy.startGrace"); ok && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, configkeys.Invalid("lazy.startGrace", v, "is not a duration above 0")
		}
		r.StartGrace = d
	}
	return r, nil
}

// UnblockCmd gives a parked task feedback and starts the next turn.
type UnblockCmd struct {
	Task      string   `arg:"" help:"Slug or id prefix." predictor:"task"`
	Message   *string  `short:"m" name:"message" help:"Feedback for the agent (\"-\" reads stdin). Without -m, piped stdin or $EDITOR is used."`
	Approve   []string `name:"approve-file" help:"Keep this pending file-permission violation (repeatable); every other pending file is reverted to its pre-turn content." placeholder:"PATH"`
	NoApprove bool     `name:"no-approve-files" help:"Revert every pending file-permission violation to its pre-turn content."`
	Budget    string   `help:"Raise the budget that holds the task, then carry on: +N adds N US dollars, N makes N the budget. With it, -m is optional." placeholder:"+N"`
	JSON      bool     `help:"Print the task as JSON."`
	followFlags
}

// Help implements kong's detailed help.
func (c *UnblockCmd) Help() string {
	return `The feedback is delivered to the agent's next turn, which starts at once.

A task parked over budget (lazy show says which budget, and the figures)
carries on once that budget is raised: --budget +N raises it by N dollars,
--budget N sets it to N. A parent's budget holds its subtasks too, and
--budget raises the one that holds. This machine's day budget is raised
with git config lazy.budget.day instead.`
}

// Run implements lazy unblock.
func (c *UnblockCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	if _, err := a.store.Resolve(c.Task); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	feedback, done := "", func() {}
	if c.Budget != "" {
		if feedback, err = raiseBudget(ctx, env, a.io.errOut, c.Task, c.Budget); err != nil {
			return err
		}
	}
	if c.Budget == "" || c.Message != nil {
		if feedback, done, err = textInputOf(a).read(c.Message, "feedback", true); err != nil {
			return err
		}
	}
	logOff := logsOptionsOf(a).logSize(c.Task)
	sn, err := env.Lifecycle().Unblock(ctx, c.Task, feedback, lifecycle.Decisions{Approve: c.Approve, RevertRest: c.NoApprove})
	if sn != nil {
		done() // the feedback is recorded, whatever happened to the launch
	}
	var left *lifecycle.ErrLeftForRunner
	if errors.As(err, &left) {
		return a.sendToRunner(ctx, sn, left)
	}
	if err != nil {
		return err
	}
	a.daemonAfterLaunch(ctx)
	if c.JSON && !c.Wait && !c.Follow {
		return a.io.printJSON(toJSON(&sn.Task))
	}
	fmt.Fprintf(a.io.out, "Unblocked %s: turn %d is running\n", sn.Task.Slug, sn.Session.Turn)
	return a.stay(ctx, c.followFlags, sn, logOff)
}

// raiseBudget applies unblock --budget, says so on errOut, and returns the feedback a turn
// gets when no -m is given.
func raiseBudget(ctx context.Context, env *wire.Env, errOut io.Writer, task, text string) (string, error) {
	owner, limit, err := raise(ctx, env, task, text)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(errOut, "Raised the budget of %s to $%.2f\n", owner, limit)
	return fmt.Sprintf("[lazy] The budget was raised to $%.2f. Carry on with the task where you stopped.", limit), nil
}

// raise reads a --budget value (+N or N) and raises the budget that
// holds task: lazy unblock --budget and watch's B both.
func raise(ctx context.Context, env *wire.Env, task, text string) (owner string, limit float64, err error) {
	add, usd, err := budget.ParseRaise(text)
	if err != nil {
		return "", 0, usageError{err.Error()}
	}
	return env.Spending().RaiseBudget(ctx, task, add, usd)
}

func (a *app) repoDir() string {
	if a.repo.WorkTree != "" {
		return a.repo.WorkTree
	}
	return a.repo.CommonDir
}

// ResumeCmd restarts an interrupted task without new feedback.
type ResumeCmd struct {
	Task string `arg:"" help:"Slug or id prefix." predictor:"task"`
	JSON bool   `help:"Print the task as JSON."`
}

// Run implements lazy resume.
func (c *ResumeCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	sn, err := env.Lifecycle().Resume(ctx, c.Task)
	if err != nil {
		return err
	}
	a.daemonAfterLaunch(ctx)
	if c.JSON {
		return a.io.printJSON(toJSON(&sn.Task))
	}
	fmt.Fprintf(a.io.out, "Resumed %s: turn %d is running\n", sn.Task.Slug, sn.Session.Turn)
	return nil
}

// StopCmd stops a running turn and parks the task.
type StopCmd struct {
	Task    string  `arg:"" help:"Slug or id prefix." predictor:"task"`
	Message *string `short:"m" name:"reason" aliases:"message" help:"Why (optional)."`
	JSON    bool    `help:"Print the task as JSON."`
}

// Run implements lazy stop.
func (c *StopCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	reason := ""
	if c.Message != nil {
		reason = *c.Message
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	sn, err := env.Lifecycle().Stop(ctx, c.Task, reason)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.io.printJSON(toJSON(&sn.Task))
	}
	fmt.Fprintf(a.io.out, "Stopped %s: now %s (work in the worktree is kept)\n", sn.Task.Slug, sn.Task.Status)
	return nil
}

// AskCmd asks a parked task's agent one read-only question.
type AskCmd struct {
	Task    string        `arg:"" help:"Slug or id prefix." predictor:"task"`
	Message *string       `short:"m" name:"message" help:"The question (\"-\" reads stdin). Without -m, piped stdin or $EDITOR is used."`
	Timeout time.Duration `help:"How long to wait for the answer; the task stays working past it and the answer is recorded when it arrives." default:"10m"`
	JSON    bool          `help:"Print the answer turn as JSON."`
}

// Run implements lazy ask.
func (c *AskCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	if _, err := a.store.Resolve(c.Task); err != nil {
		return err
	}
	question, done, err := textInputOf(a).read(c.Message, "question", true)
	if err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	sn, err := env.Conversation().Ask(ctx, c.Task, question)
	if sn != nil {
		done()
	}
	if err != nil {
		return err
	}
	a.daemonAfterLaunch(ctx)
	final, err := a.waitTurn(ctx, sn.Task.ID, c.Timeout)
	if err != nil {
		return err
	}
	turns, err := a.store.Turns(final)
	if err != nil {
		return err
	}
	answer := turns[len(turns)-1]
	if c.JSON {
		return a.io.printJSON(answer)
	}
	fmt.Fprintln(a.io.out, answer.Content)
	if answer.Error != "" {
		return fmt.Errorf("the agent could not answer: %s (the task is %s again)", answer.Error, final.Task.Status)
	}
	return nil
}

// SyncCmd merges upstream into a parked task's branch.
type SyncCmd struct {
	Task    string        `arg:"" help:"Slug or id prefix." predictor:"task"`
	Timeout time.Duration `help:"How long to wait for the merge." default:"2m"`
	JSON    bool          `help:"Print the task as JSON."`
}

// Run implements lazy sync.
func (c *SyncCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	sn, err := env.Conversation().Sync(ctx, c.Task)
	if err != nil {
		return err
	}
	final, err := a.waitTurn(ctx, sn.Task.ID, c.Timeout)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.io.printJSON(toJSON(&final.Task))
	}
	turns, err := a.store.Turns(final)
	if err != nil {
		return err
	}
	last := turns[len(turns)-1]
	if last.Error != "" {
		return fmt.Errorf("sync %s: %s (the task is %s again)", final.Task.Slug, last.Error, final.Task.Status)
	}
	fmt.Fprintf(a.io.out, "Synced %s: %s; now %s\n", final.Task.Slug, last.Content, final.Task.Status)
	return nil
}

// waitTurn waits until task id's turn is recorded or timeout. With a
// daemon it follows the daemon's NDJSON stream: heartbeats prove the
// daemon alive, progress events are echoed to stderr, and a reconcile
// event for the task ends the wait. Without one (or if the stream stops)
// it reconciles the task itself.
func (a *app) waitTurn(ctx context.Context, id string, timeout time.Duration) (*task.Snapshot, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stream <-chan events.Event
	if a.getenv("LAZY_NO_DAEMON") == "" {
		stream, _ = daemon.Dial(a.repo.LazyDir()).Subscribe(ctx)
	}
	deadline := time.After(timeout)
	lastProgress := ""
	for {
		sn, err := a.store.Load(id)
		if err != nil {
			return nil, err
		}
		if sn.Task.Status != machine.Working {
			return sn, nil
		}
		if stream == nil {
			a.reconcileBeforeRead(ctx, []task.Entry{{ID: id, Status: sn.Task.Status}})
		}
		poll := time.After(50 * time.Millisecond)
		if stream != nil {
			poll = time.After(15 * time.Second) // heartbeats arrive every 5 s
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline:
			return nil, fmt.Errorf("no answer within %s; %s stays working and the answer is recorded when it arrives (lazy show %s)", timeout, sn.Task.Slug, sn.Task.Slug)
		case ev, ok := <-stream:
			if !ok {
				stream = nil // the daemon went away: reconcile ourselves
				continue
			}
			if p := ev.Progress; p != nil && p.TaskID == id {
				line := p.Phase
				if p.Retry != "" {
					line = p.Retry
				} else if p.Progress != "" {
					line += ": " + p.Progress
				}
				if line != lastProgress {
					lastProgress = line
					// Inside an MCP call the line is progress for the
					// client; stderr is only for a terminal.
					if !mcp.Report(ctx, sn.Task.Slug+": "+line) {
						a.io.info("%s %s", sn.Task.Slug, line)
					}
				}
			}
		case <-poll:
			if stream != nil {
				stream = nil // no heartbeat for three periods: stop trusting the stream
			}
		}
	}
}

// sendToRunner pushes feedback left for the runner that holds a pooled
// task; it starts the turn after its next fetch.
func (a *app) sendToRunner(ctx context.Context, sn *task.Snapshot, left *lifecycle.ErrLeftForRunner) error {
	remote, err := a.settings().poolRemote(ctx, "")
	if err != nil {
		return err
	}
	spec, _ := a.cfg.Get("lazy.pushRefspec")
	if _, err := a.store.Sync().Push(ctx, remote, spec); err != nil {
		return fmt.Errorf("the feedback for %s is recorded here, but pushing it to %s failed (lazy push sends it): %w", sn.Task.Slug, remote, err)
	}
	fmt.Fprintf(a.io.out, "Left the feedback for runner %s, which holds %s; pushed to %s: the runner starts the turn after its next fetch\n", sanitize.Field(left.Runner), sn.Task.Slug, remote)
	return nil
}
