package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/pool"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/runner"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// RunnerCmd runs this clone as a runner of the pool.
type RunnerCmd struct {
	Remote   string        `help:"The remote the pool lives on (default: git config lazy.pool.remote, else the default remote)." placeholder:"NAME"`
	Label    []string      `help:"A label this runner offers (gpu, linux-arm64); a task asking for labels goes only to a runner with all of them (repeatable)."`
	MaxTasks int           `name:"max-tasks" help:"How many turns this runner runs at once." default:"1"`
	Once     bool          `help:"Stop once nothing runs here and nothing is left to claim (for CI jobs)."`
	Lease    time.Duration `help:"How long a claim holds without renewal; another runner takes a task over after it runs out." default:"2m"`
	Poll     time.Duration `help:"How often the runner fetches and looks for work (at most a third of --lease)." default:"10s"`
	Grace    time.Duration `help:"On SIGTERM or SIGINT, how long a running turn may take to finish before the runner stops it and hands its claim back (0: at once)." default:"30s"`
}

// Help implements kong's detailed help.
func (c *RunnerCmd) Help() string {
	return `The runner renews its leases on a timer of its own (every quarter of
--lease), so no fetch, push or start of a turn, however long, lets a
lease run out while it holds the task; a renewal that finds the claim
taken (a human's lazy pool release, or another runner after the lease ran
out) ends that task's turn here at once.

On SIGTERM or SIGINT the runner takes no new task, and gives a running
turn --grace to finish and park; then it stops the turn the way lazy stop
does (its work kept in the worktree and branch), pushes each task's
record and branch and releases its claim, each push fenced by the claim
it holds (a runner that lost a claim cannot release the new holder's),
and exits 0. It exits 1, naming them, when a claim could not be handed
back: that task waits for its lease to run out. A second signal ends the
runner at once. Give the pod or service a stop timeout longer than --grace.`
}

// Run implements lazy runner.
func (c *RunnerCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	remote, err := a.settings().poolRemote(ctx, c.Remote)
	if err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	for _, l := range c.Label {
		if !task.PoolLabel.MatchString(l) {
			return usageError{fmt.Sprintf("--label %q: a label is lower-case letters, digits, '.', '_' and '-' (gpu, linux-arm64)", l)}
		}
	}
	maxLease, err := a.settings().poolMaxLease()
	if err != nil {
		return err
	}
	if c.Grace < 0 {
		return usageError{fmt.Sprintf("--grace %s is negative; give 0 to stop a running turn at once", c.Grace)}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// The first signal starts the hand-back; a second one ends the
		// runner the default way, at once.
		<-ctx.Done()
		stop()
	}()
	say := func(msg string) {
		fmt.Fprintf(a.io.errOut, "%s runner %s: %s\n", time.Now().Format("15:04:05"), env.Runner().PoolRunnerID(), sanitize.Field(msg))
	}
	say(fmt.Sprintf("on %s, %s, agents %s, up to %s at once", remote, labelsOf(c.Label), words.List(a.settings().runnerAgents(), "none"), words.Count(c.MaxTasks, "turn", "turns")))
	return env.Runner().RunPool(ctx, runner.Options{
		Remote: remote, Labels: c.Label, MaxTasks: c.MaxTasks, Once: c.Once, Lease: c.Lease, Poll: c.Poll, MaxLease: maxLease, Grace: c.Grace,
		Agents: a.settings().runnerAgents(),
		Input: func(agentName string) (session.StartInput, error) {
			// The agent's command and posture come from this machine's
			// configuration, never from the task record.
			return a.settings().startInput(agentName, "")
		},
		Reconcile: a.reconcileTask,
		Say:       say,
	})
}

// PoolCmd shows the runner pool, or releases a claim.
type PoolCmd struct {
	Action     string `arg:"" optional:"" enum:"show,release" default:"show" help:"show (the default): the runners, live claims, waiting tasks and the refs lazy skipped; release TASK: free the task's claim (a human's decision)."`
	Task       string `arg:"" optional:"" help:"The task whose claim lazy pool release frees (its slug or id, or the id of a claim for a task not here)."`
	Remote     string `help:"The remote the pool lives on (default: git config lazy.pool.remote, else the default remote)." placeholder:"NAME"`
	JSON       bool   `help:"Print the pool (or what release did) as JSON."`
	Count      bool   `help:"Print only the number of pooled tasks waiting for a runner (unclaimed and runnable): the figure a scaler reads."`
	Local      bool   `help:"Show the pool as last fetched, without fetching."`
	Force      bool   `help:"release: free a claim a runner holds live; that runner ends the task's turn at its next round and pushes nothing more of it."`
	Generation uint64 `help:"release: only if the claim is still at this generation (as lazy pool showed it)." placeholder:"N"`
}

// Help implements kong's detailed help.
func (c *PoolCmd) Help() string {
	return `A claim or runner record on the remote that lazy does not accept (not a
commit, no JSON of a claim, over 64 KiB, a claim naming another task, a
generation out of range, a lease longer than lazy.pool.maxLease from now)
is skipped and listed under "Skipped"; a skipped claim holds nothing, and
a runner takes its task over.

lazy pool release frees a claim, for a human only: it is replaced by a
released claim at the next generation, pushed leased on the claim lazy
just fetched, so a runner that renewed or took the claim meanwhile makes
it fail and nothing changes. A claim a runner holds live needs --force;
that runner is then fenced: its next renewal fails, it ends the turn and
pushes nothing more of it.`
}

// poolView is lazy pool's JSON.
type poolView struct {
	Remote  string        `json:"remote"`
	Runners []pool.Runner `json:"runners"`
	Claims  []pool.Held   `json:"claims"`
	Waiting []poolWaiting `json:"waiting"`
	// Skipped are the pool refs lazy did not accept, and why.
	Skipped []pool.Problem `json:"skipped"`
	// WaitingCount is the number of waiting tasks a runner could claim
	// now (lazy pool --count): the figure a scaler reads.
	WaitingCount int `json:"waiting_count"`
}

// poolWaiting is a pooled task no live claim holds, and why.
type poolWaiting struct {
	Task     string   `json:"task"`
	Slug     string   `json:"slug"`
	Status   string   `json:"status"`
	Labels   []string `json:"labels"`
	Agent    string   `json:"agent,omitempty"`
	Priority int      `json:"priority"`
	Why      string   `json:"why"`
}

// Run implements lazy pool.
func (c *PoolCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	remote, err := a.settings().poolRemote(ctx, c.Remote)
	if err != nil {
		return err
	}
	maxLease, err := a.settings().poolMaxLease()
	if err != nil {
		return err
	}
	if c.Action == "release" {
		return c.release(a, ctx, remote, maxLease)
	}
	if c.Task != "" || c.Force || c.Generation != 0 {
		return usageError{"lazy pool shows the whole pool; TASK, --force and --generation go with lazy pool release TASK"}
	}
	if c.Count && c.JSON {
		return usageError{"--count prints one number and --json the whole pool (its waiting_count is the same number): give one of them"}
	}
	p, err := pool.New(a.repoDir(), remote)
	if err != nil {
		return err
	}
	p.MaxLease = maxLease
	if !c.Local {
		if _, err := a.store.Sync().Pull(ctx, remote); err != nil {
			return err
		}
		if err := p.Fetch(ctx); err != nil {
			return err
		}
	}
	if c.Count {
		n, err := c.count(ctx, a, p)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(a.io.out, n)
		return err
	}
	v, err := c.fetch(ctx, a, p, remote)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.io.printJSON(v)
	}
	renderPool(a.io.out, v, a.now())
	return nil
}

// release runs lazy pool release TASK.
func (c *PoolCmd) release(a *app, ctx context.Context, remote string, maxLease time.Duration) error {
	if c.Task == "" {
		return usageError{"lazy pool release needs the task whose claim it frees: lazy pool release TASK"}
	}
	if c.Local {
		return usageError{"lazy pool release fetches the claim it frees; --local does not go with it"}
	}
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	res, err := env.Runner().ReleaseClaim(ctx, c.Task, runner.ReleaseOptions{Remote: remote, MaxLease: maxLease, Force: c.Force, Generation: c.Generation})
	if err != nil {
		return err
	}
	if c.JSON {
		return a.io.printJSON(res)
	}
	name := res.Task
	if res.Slug != "" {
		name = res.Slug
	}
	was := fmt.Sprintf("runner %s's claim (generation %d)", sanitize.Field(res.Was.Runner), res.Was.Generation)
	if res.Was.Problem != "" {
		was = "a claim lazy does not accept (" + sanitize.Field(res.Was.Problem) + ")"
	}
	_, err = fmt.Fprintf(a.io.out, "Released %s on %s: %s is replaced by a released claim at generation %d; any runner may take it now\n",
		sanitize.Field(name), sanitize.Field(remote), was, res.Now.Generation)
	return err
}

// count is lazy pool --count: the claims as fetched and the local
// records, no runner records (a scaler polls it).
func (c *PoolCmd) count(ctx context.Context, a *app, p *pool.Remote) (int, error) {
	now := a.now()
	claims, _, err := p.Claims(ctx, now)
	if err != nil {
		return 0, err
	}
	env, err := a.env()
	if err != nil {
		return 0, err
	}
	return env.Runner().WaitingCount(claims, now)
}

func (c *PoolCmd) fetch(ctx context.Context, a *app, p *pool.Remote, remote string) (*poolView, error) {
	now := a.now()
	runners, rp, err := p.Runners(ctx, now)
	if err != nil {
		return nil, err
	}
	claims, cp, err := p.Claims(ctx, now)
	if err != nil {
		return nil, err
	}
	env, err := a.env()
	if err != nil {
		return nil, err
	}
	v := &poolView{Remote: remote, Runners: nonNilRunners(runners), Claims: []pool.Held{}, Waiting: []poolWaiting{}, Skipped: append(append([]pool.Problem{}, cp...), rp...)}
	for _, h := range claims {
		if h.Live(now) {
			v.Claims = append(v.Claims, h)
		}
	}
	sort.Slice(v.Claims, func(i, j int) bool { return v.Claims[i].Task < v.Claims[j].Task })
	entries, err := a.store.List()
	if err != nil {
		return nil, err
	}
	for i := range entries {
		en := &entries[i]
		if en.Err != nil || en.Status.IsTerminal() {
			continue
		}
		if h, ok := claims[en.ID]; ok && h.Live(now) {
			continue
		}
		sn, err := a.store.Load(en.ID)
		if err != nil || sn.Task.Pool == nil {
			continue
		}
		w := poolWaiting{Task: en.ID, Slug: sn.Task.Slug, Status: string(sn.Task.Status), Labels: nonNil(sn.Task.Pool.Labels), Agent: sn.Task.Pool.Agent, Priority: sn.Task.Pool.Priority,
			Why: waitingWhy(env, sn, runners, now)}
		v.Waiting = append(v.Waiting, w)
		if env.Runner().WaitsForRunner(sn, claims, now) {
			v.WaitingCount++
		}
	}
	return v, nil
}

// waitingWhy says what a pooled task that no runner holds waits for.
func waitingWhy(env *wire.Env, sn *task.Snapshot, runners []pool.Runner, now time.Time) string {
	if !env.Runner().PoolWork(sn) {
		return "waits for you: review it (lazy diff " + sn.Task.Slug + "), then lazy unblock or lazy accept"
	}
	var we *lifecycle.WaitingError
	if err := lifecycle.DepsDone(env.Store, sn); errors.As(err, &we) {
		return "waits for " + strings.Join(we.On, ", ")
	}
	for _, r := range runners {
		if r.Stopped || now.Sub(r.Seen) > 10*time.Minute {
			continue
		}
		fits := true
		for _, l := range sn.Task.Pool.Labels {
			fits = fits && slices.Contains(r.Labels, l)
		}
		if fits && (sn.Task.Pool.Agent == "" || slices.Contains(r.Agents, sn.Task.Pool.Agent)) {
			return "ready: runner " + r.ID + " can take it"
		}
	}
	return "no live runner has labels [" + strings.Join(sn.Task.Pool.Labels, " ") + "] and the agent it asks for"
}

func nonNilRunners(r []pool.Runner) []pool.Runner {
	if r == nil {
		return []pool.Runner{}
	}
	return r
}

// labelsOf is a runner's labels as a person reads them: "labels gpu,
// linux" or "no labels".
func labelsOf(labels []string) string {
	if len(labels) == 0 {
		return "no labels"
	}
	return "labels " + strings.Join(labels, ", ")
}

// renderPool prints the runners, the claims and what waits.
func renderPool(w io.Writer, v *poolView, now time.Time) {
	fmt.Fprintf(w, "Pool on %s\n\nRunners (%d):\n", sanitize.Field(v.Remote), len(v.Runners))
	for _, r := range v.Runners {
		state := "seen " + ago(now, r.Seen)
		if r.Stopped {
			state = "stopped " + ago(now, r.Seen)
		}
		fmt.Fprintf(w, "  %s %s  agents %s  up to %d  holding %d  %s\n", render.PadWidth(sanitize.Field(r.ID), 20), sanitize.Field(labelsOf(r.Labels)),
			sanitize.Field(words.List(r.Agents, "none")), r.MaxTasks, len(r.Holding), state)
	}
	fmt.Fprintf(w, "\nClaims (%d):\n", len(v.Claims))
	for _, h := range v.Claims {
		fmt.Fprintf(w, "  %s  runner %s generation %d  lease %s left\n", h.Task, render.PadWidth(sanitize.Field(h.Runner), 20), h.Generation, h.Expires.Sub(now).Round(time.Second))
	}
	fmt.Fprintf(w, "\nWaiting (%d):\n", len(v.Waiting))
	for _, t := range v.Waiting {
		fmt.Fprintf(w, "  %-28s %-9s priority %d  %s\n", sanitize.Field(t.Slug), t.Status, t.Priority, sanitize.Field(t.Why))
	}
	if len(v.Skipped) == 0 {
		return
	}
	fmt.Fprintf(w, "\nSkipped (%d): refs on the remote lazy does not accept; a skipped claim holds nothing (lazy pool release TASK replaces it)\n", len(v.Skipped))
	for _, p := range v.Skipped {
		fmt.Fprintf(w, "  %s: %s\n", sanitize.Field(p.Ref), sanitize.Field(p.Reason))
	}
}
