package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/inbox"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/notify"
	"github.com/lazyorch/lazy/reconcile"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// NotifyCmd lists the notification targets, or tests them.
type NotifyCmd struct {
	Action string `arg:"" optional:"" enum:"list,test" default:"list" help:"list: the targets of git config lazy.notify (secrets hidden); test: send each a sample event and say how it went."`
	JSON   bool   `help:"Print the result as JSON."`
}

// notifyTargetView is one target in lazy notify --json.
type notifyTargetView struct {
	Target string `json:"target"`
	Kind   string `json:"kind"`
}

// notifyOptions are what lazy notify, the daemon's notifier and
// lazy.notify.command consume (gh's Options): the streams, the store
// (whose git config is read afresh for the targets), the wire env, the
// clock, and where a notification runs. notifyOptionsOf fills them from
// a run; a test gives its own.
type notifyOptions struct {
	io    ioStreams
	store *gitstore.Store
	env   func() (*wire.Env, error)
	now   func() time.Time
	// cfg is the git config the run read: lazy.notify.command's.
	cfg *gitrepo.Config
	// dir is where a notification command runs: the top of the
	// repository's main worktree, also for the daemon (which runs in the
	// git directory), or the git directory of a bare repository.
	dir string
	// stateDir keeps what the daemon announced; repoName names the
	// repository in what it sends.
	stateDir, repoName string
	// repoDir is where lazy.notify.command runs.
	repoDir string
	// gitDir is the repository's git directory: the shared markers'
	// pushes run there.
	gitDir string
}

// notifyOptionsOf fills notifyOptions from an opened run.
func notifyOptionsOf(a *app) notifyOptions {
	dir := a.repo.Top()
	if dir == "" {
		dir = a.repo.CommonDir
	}
	return notifyOptions{io: a.io, store: a.store, env: a.env, now: a.now, cfg: a.cfg, dir: dir,
		stateDir: a.repo.LazyDir("notify"), repoName: a.repo.Name(), repoDir: a.repoDir(), gitDir: a.repo.CommonDir}
}

// Run implements lazy notify.
func (c *NotifyCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	return c.run(ctx, notifyOptionsOf(a))
}

// run is lazy notify on what o gives it.
func (c *NotifyCmd) run(ctx context.Context, o notifyOptions) error {
	cfg, err := o.store.Repo().Config()
	if err != nil {
		return fmt.Errorf("read git config: %w", err)
	}
	s := notify.Load(cfg, o.dir)
	for _, p := range s.Problems {
		fmt.Fprintf(o.io.errOut, "lazy: %s\n", sanitize.Field(p))
	}
	if c.Action == "test" {
		return c.test(ctx, o, s)
	}
	if c.JSON {
		out := []notifyTargetView{}
		for _, t := range s.Targets {
			out = append(out, notifyTargetView{Target: t.String(), Kind: t.Kind})
		}
		problems := []string{}
		for _, p := range s.Problems {
			problems = append(problems, sanitize.Field(p))
		}
		if err := o.io.printJSON(map[string]any{"targets": out, "per_minute": s.PerMinute, "events": eventKinds(s), "problems": problems}); err != nil {
			return err
		}
		return notifyProblems(s)
	}
	switch {
	case len(s.Targets) == 0 && len(s.Problems) > 0:
		fmt.Fprintln(o.io.out, "No valid notification targets: fix the values above with lazy config lazy.notify (lazy help notify).")
	case len(s.Targets) == 0:
		fmt.Fprintln(o.io.out, "No notification targets: add one with git config --add lazy.notify VALUE (lazy help notify).")
	default:
		for _, t := range s.Targets {
			fmt.Fprintln(o.io.out, sanitize.Field(t.String()))
		}
		fmt.Fprintf(o.io.out, "at most %d events a minute per target; announcing %s\n", s.PerMinute, kindList(eventKinds(s)))
	}
	return notifyProblems(s)
}

// notifyProblems is the exit of a listing that found settings it cannot
// use (each printed on stderr): when not one target is left, a script
// checking its setup must not read a status of 0 while its notifications
// go nowhere. With valid targets beside them they are warnings.
func notifyProblems(s notify.Settings) error {
	if len(s.Problems) == 0 || len(s.Targets) > 0 {
		return nil
	}
	return silentExit{code: 1, err: fmt.Errorf("%s not valid", words.Count(len(s.Problems), "notification setting is", "notification settings are"))}
}

// kindList names event kinds as a list a person reads: "blocked,
// conflict and complete", or "no events".
func kindList(kinds []notify.Kind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return words.List(names, "no events")
}

func eventKinds(s notify.Settings) []notify.Kind {
	var out []notify.Kind
	for _, k := range notify.Kinds() {
		if s.Announces(k) {
			out = append(out, k)
		}
	}
	return out
}

func (c *NotifyCmd) test(ctx context.Context, o notifyOptions, s notify.Settings) error {
	if len(s.Targets) == 0 {
		return errors.New("no notification targets to test: add one with git config --add lazy.notify VALUE (lazy help notify)")
	}
	results := notify.Test(ctx, s.Targets, o.repoName, o.now())
	failed := 0
	for _, r := range results {
		if !r.OK {
			failed++
		}
	}
	if c.JSON {
		if err := o.io.printJSON(map[string]any{"results": results}); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			switch {
			case r.OK:
				fmt.Fprintf(o.io.out, "ok      %s\n", sanitize.Field(r.Target))
			case r.Skipped:
				fmt.Fprintf(o.io.out, "skipped %s: %s\n", sanitize.Field(r.Target), sanitize.Field(r.Error))
			default:
				fmt.Fprintf(o.io.out, "failed  %s: %s\n", sanitize.Field(r.Target), sanitize.Field(r.Error))
			}
		}
	}
	if failed > 0 {
		return silentExit{code: 1, err: fmt.Errorf("%d of %d notification targets failed", failed, len(results))}
	}
	return nil
}

// work returns the daemon's hook that announces, after a pass, the
// tasks that came to need a human or finished, to the targets of git
// config lazy.notify. Each pass it reads the targets: with none it
// forgets what it announced (turned on again, notifications start from a
// new baseline); newly on, it takes the baseline at once, so what
// happens from then on is announced and nothing before. It derives
// events when the pass's listing is new (a task ref moved), and sends
// when there are events or the rate limit holds some back, in the
// background, one round at a time, so a slow webhook never delays a
// pass.
func (o notifyOptions) work(rec *reconcile.Reconciler) func(ctx context.Context) {
	n := &notify.Notifier{Dir: o.stateDir, Repo: o.repoName}
	var busy atomic.Bool
	var lastGen uint64 // only the goroutine busy admits touches it
	var said string    // the shared remote's last problem said, likewise
	return func(ctx context.Context) {
		entries, gen := rec.Listing()
		if entries == nil || !busy.CompareAndSwap(false, true) {
			return
		}
		go func() {
			defer busy.Store(false)
			cfg, err := o.store.Repo().Config()
			if err != nil {
				return
			}
			s := notify.Load(cfg, o.dir)
			if len(s.Targets) == 0 {
				if err := n.Off(); err != nil {
					fmt.Fprintf(o.io.errOut, "lazy: notifications: %v\n", err)
				}
				return
			}
			var evs []notify.Event
			switch {
			case gen != lastGen || !n.Active():
				policy := notify.Policy{BreakerAt: lifecycle.MaxConsecutiveInterruptions, NoAutoResume: rec.NoAutoResume, Secrets: s.Secrets}
				var ib *inbox.Service // the inbox's rule for a pick by the gate; nil: every task on its own
				if env, err := o.env(); err == nil {
					if gs, err := env.Landing().Gates().GateSettings(); err == nil && gs.AutoFix {
						policy.GateFixRounds = gs.MaxAttempts
					}
					ib, _ = env.Inbox()
				}
				evs, err = n.Pass(entries, policy, s.Events, func(e *task.Entry) (notify.Observation, error) {
					return o.observeTask(ctx, ib, e)
				})
				if err != nil {
					fmt.Fprintf(o.io.errOut, "lazy: notifications: %v\n", err)
					return
				}
				lastGen = gen
			case !n.Pending():
				return
			}
			if shared := o.shared(ctx, cfg); shared != nil && len(evs) > 0 {
				evs, err = n.Once(ctx, shared, evs)
				said = sayOnce(o.io.errOut, said, err, "lazy: notifications: %v; announced here")
				if _, err := n.Prune(ctx, shared, entries); err != nil {
					said = sayOnce(o.io.errOut, said, err, "lazy: notifications: %v")
				}
			}
			for _, r := range n.Deliver(ctx, s.Targets, s.PerMinute, evs) {
				if !r.OK && !r.Skipped {
					fmt.Fprintf(o.io.errOut, "lazy: notify %s: %s\n", r.Target, r.Error)
				}
			}
		}()
	}
}

// shared is the remote the notifier claims its events on, so each fires
// once across the machines sharing it: git config lazy.notify.remote,
// else lazy.pool.remote, else the repository's default remote; nil for
// "none" or a repository with no remote (the dedup stays on this host).
func (o notifyOptions) shared(ctx context.Context, cfg *gitrepo.Config) notify.Shared {
	name, _ := cfg.Get(notify.KeyRemote)
	if name = strings.TrimSpace(name); name == "none" || o.gitDir == "" {
		return nil
	}
	if name == "" {
		name, _ = cfg.Get("lazy.pool.remote")
	}
	remote, err := defaultRemote(ctx, o.gitDir, strings.TrimSpace(name))
	if err != nil {
		return nil
	}
	return &notify.GitShared{Dir: o.gitDir, Remote: remote, Host: o.store.Host(), Now: o.now}
}

// sayOnce prints err (formatted) unless it is what was said last, and
// returns what was said: a remote that stays offline is said once.
func sayOnce(w io.Writer, said string, err error, format string) string {
	if err == nil {
		return ""
	}
	msg := sanitize.Field(fmt.Sprintf(format, err))
	if msg != said {
		fmt.Fprintln(w, msg)
	}
	return msg
}

// observeTask reads what notifications look at of a listed task: its
// summary and, for a parked or interrupted task, its session (which
// turn parked it, the circuit breaker's count) at the listed commit,
// and for an ask that ended, whether it ended with an answer; and what
// the inbox's rule for a pick by the gate (ib, when set) makes of a
// parked attempt or of an open attempt group whose pick has no step
// left (inbox.Service.Notice).
func (o notifyOptions) observeTask(ctx context.Context, ib *inbox.Service, e *task.Entry) (notify.Observation, error) {
	s, err := e.Summary()
	if err != nil {
		return notify.Observation{}, err
	}
	obs := notify.Observe(s)
	group := ib != nil && len(s.Attempts) > 0 && !s.Picking && !s.Status.IsTerminal()
	if !notify.NeedsSession(s.Status) && !group {
		return obs, nil
	}
	sn, err := o.store.LoadEntry(e)
	if err != nil {
		return obs, err
	}
	if ib != nil {
		ib.Notice(ctx, sn, &obs)
	}
	if !notify.NeedsSession(s.Status) {
		return obs, nil
	}
	obs.AddSession(sn.Session)
	if obs.TurnKind == "ask" && s.Status.IsBlocked() {
		// The answer is the agent's turn right after the question.
		answer, err := o.store.Turn(sn, obs.Turn+1)
		if err != nil {
			return obs, err
		}
		obs.AnswerFailed = answer == nil || answer.Role != task.RoleAgent || answer.Error != ""
	}
	return obs, nil
}

// afterPass runs each hook after a pass.
func afterPass(hooks ...func(ctx context.Context)) func(ctx context.Context) {
	return func(ctx context.Context) {
		for _, h := range hooks {
			h(ctx)
		}
	}
}

// command runs git config lazy.notify.command for every task an action
// parked for a human, but for an attempt its group's pick by the gate
// answers (as the inbox and the notifications do). The command is the
// local user's own (trusted); what the task says travels in environment
// variables, never in the command line, so a title cannot inject shell. It runs detached and is never
// waited on by the command that triggered it.
func (o notifyOptions) command(actions []reconcile.Action) {
	if o.cfg == nil {
		return
	}
	command, ok := o.cfg.Get("lazy.notify.command")
	if !ok || strings.TrimSpace(command) == "" {
		return
	}
	sort.SliceStable(actions, func(i, j int) bool { return actions[i].Slug < actions[j].Slug })
	var ib *inbox.Service
	for _, act := range actions {
		if !needsHuman(act) {
			continue
		}
		if ib == nil && o.env != nil {
			if env, err := o.env(); err == nil {
				ib, _ = env.Inbox()
			}
		}
		if ib != nil && ib.Folded(context.Background(), act.TaskID) {
			continue // an attempt its group's pick by the gate answers: the pick is the news
		}
		cmd := exec.Command("sh", "-c", command)
		cmd.Dir = o.repoDir
		cmd.Env = append(os.Environ(), "LAZY_TASK_ID="+act.TaskID, "LAZY_TASK_SLUG="+act.Slug, "LAZY_STATUS="+string(act.To),
			"LAZY_FROM="+string(act.From), "LAZY_WHY="+act.Why,
			"LAZY_MESSAGE="+fmt.Sprintf("lazy: %s is %s and needs you (lazy show %s)", act.Slug, act.To, act.Slug))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(o.io.errOut, "lazy: lazy.notify.command could not start: %v\n", err)
			continue
		}
		go func() { _ = cmd.Wait() }()
	}
}
