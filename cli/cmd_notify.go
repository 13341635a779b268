package cli

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/notify"
	"github.com/lazyorch/lazy/reconcile"
	"github.com/lazyorch/lazy/task"
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

// Run implements lazy notify.
func (c *NotifyCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	cfg, err := a.store.Repo().Config()
	if err != nil {
		return fmt.Errorf("read git config: %w", err)
	}
	s := notify.Load(cfg, a.notifyDir())
	for _, p := range s.Problems {
		fmt.Fprintf(a.io.errOut, "lazy: %s\n", sanitize.Field(p))
	}
	if c.Action == "test" {
		return c.test(a, ctx, s)
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
		if err := a.io.printJSON(map[string]any{"targets": out, "per_minute": s.PerMinute, "events": eventKinds(s), "problems": problems}); err != nil {
			return err
		}
		return notifyProblems(s)
	}
	switch {
	case len(s.Targets) == 0 && len(s.Problems) > 0:
		fmt.Fprintln(a.io.out, "No valid notification targets: fix the values above with lazy config lazy.notify (lazy help notify).")
	case len(s.Targets) == 0:
		fmt.Fprintln(a.io.out, "No notification targets: add one with git config --add lazy.notify VALUE (lazy help notify).")
	default:
		for _, t := range s.Targets {
			fmt.Fprintln(a.io.out, sanitize.Field(t.String()))
		}
		fmt.Fprintf(a.io.out, "at most %d events a minute per target; announcing %s\n", s.PerMinute, kindList(eventKinds(s)))
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
		if s.Events == nil || s.Events[k] {
			out = append(out, k)
		}
	}
	return out
}

func (c *NotifyCmd) test(a *app, ctx context.Context, s notify.Settings) error {
	if len(s.Targets) == 0 {
		return errors.New("no notification targets to test: add one with git config --add lazy.notify VALUE (lazy help notify)")
	}
	results := notify.Test(ctx, s.Targets, a.repo.Name(), a.now())
	failed := 0
	for _, r := range results {
		if !r.OK {
			failed++
		}
	}
	if c.JSON {
		if err := a.io.printJSON(map[string]any{"results": results}); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			switch {
			case r.OK:
				fmt.Fprintf(a.io.out, "ok      %s\n", sanitize.Field(r.Target))
			case r.Skipped:
				fmt.Fprintf(a.io.out, "skipped %s: %s\n", sanitize.Field(r.Target), sanitize.Field(r.Error))
			default:
				fmt.Fprintf(a.io.out, "failed  %s: %s\n", sanitize.Field(r.Target), sanitize.Field(r.Error))
			}
		}
	}
	if failed > 0 {
		return silentExit{code: 1, err: fmt.Errorf("%d of %d notification targets failed", failed, len(results))}
	}
	return nil
}

// notifyDir is where a notification command runs: the top of the
// repository's main worktree, also for the daemon (which runs in the git
// directory), or the git directory of a bare repository.
func (a *app) notifyDir() string {
	if top := a.repo.Top(); top != "" {
		return top
	}
	return a.repo.CommonDir
}

// notifyWork returns the daemon's hook that announces, after a pass, the
// tasks that came to need a human or finished, to the targets of git
// config lazy.notify. Each pass it reads the targets: with none it
// forgets what it announced (turned on again, notifications start from a
// new baseline); newly on, it takes the baseline at once, so what
// happens from then on is announced and nothing before. It derives
// events when the pass's listing is new (a task ref moved), and sends
// when there are events or the rate limit holds some back, in the
// background, one round at a time, so a slow webhook never delays a
// pass.
func (a *app) notifyWork(rec *reconcile.Reconciler) func(ctx context.Context) {
	n := &notify.Notifier{Dir: a.repo.LazyDir("notify"), Repo: a.repo.Name()}
	var busy atomic.Bool
	var lastGen uint64 // only the goroutine busy admits touches it
	return func(ctx context.Context) {
		entries, gen := rec.Listing()
		if entries == nil || !busy.CompareAndSwap(false, true) {
			return
		}
		go func() {
			defer busy.Store(false)
			cfg, err := a.store.Repo().Config()
			if err != nil {
				return
			}
			s := notify.Load(cfg, a.notifyDir())
			if len(s.Targets) == 0 {
				if err := n.Off(); err != nil {
					fmt.Fprintf(a.io.errOut, "lazy: notifications: %v\n", err)
				}
				return
			}
			var evs []notify.Event
			switch {
			case gen != lastGen || !n.Active():
				policy := notify.Policy{BreakerAt: lifecycle.MaxConsecutiveInterruptions, NoAutoResume: rec.NoAutoResume, Secrets: s.Secrets}
				if env, err := a.env(); err == nil {
					if gs, err := env.Landing().Gates().GateSettings(); err == nil && gs.AutoFix {
						policy.GateFixRounds = gs.MaxAttempts
					}
				}
				evs, err = n.Pass(entries, policy, s.Events, a.observeTask)
				if err != nil {
					fmt.Fprintf(a.io.errOut, "lazy: notifications: %v\n", err)
					return
				}
				lastGen = gen
			case !n.Pending():
				return
			}
			for _, r := range n.Deliver(ctx, s.Targets, s.PerMinute, evs) {
				if !r.OK && !r.Skipped {
					fmt.Fprintf(a.io.errOut, "lazy: notify %s: %s\n", r.Target, r.Error)
				}
			}
		}()
	}
}

// observeTask reads what notifications look at of a listed task: its
// summary and, for a parked or interrupted task, its session (which
// turn parked it, the circuit breaker's count) at the listed commit,
// and for an ask that ended, whether it ended with an answer.
func (a *app) observeTask(e *task.Entry) (notify.Observation, error) {
	s, err := e.Summary()
	if err != nil {
		return notify.Observation{}, err
	}
	o := notify.Observe(s)
	if !notify.NeedsSession(s.Status) {
		return o, nil
	}
	sn, err := a.store.LoadEntry(e)
	if err != nil {
		return o, err
	}
	o.AddSession(sn.Session)
	if o.TurnKind == "ask" && s.Status.IsBlocked() {
		// The answer is the agent's turn right after the question.
		answer, err := a.store.Turn(sn, o.Turn+1)
		if err != nil {
			return o, err
		}
		o.AnswerFailed = answer == nil || answer.Role != task.RoleAgent || answer.Error != ""
	}
	return o, nil
}

// afterPass runs each hook after a pass.
func afterPass(hooks ...func(ctx context.Context)) func(ctx context.Context) {
	return func(ctx context.Context) {
		for _, h := range hooks {
			h(ctx)
		}
	}
}
