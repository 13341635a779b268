package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/notify"
	"github.com/lazyorch/lazy/ops"
	"github.com/lazyorch/lazy/reconcile"
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
	s := notify.Load(cfg, a.repoDir())
	for _, p := range s.Problems {
		fmt.Fprintf(a.stderr, "lazy: %s\n", sanitize.Field(p))
	}
	if c.Action == "test" {
		return c.test(a, ctx, s)
	}
	if c.JSON {
		out := []notifyTargetView{}
		for _, t := range s.Targets {
			out = append(out, notifyTargetView{Target: t.String(), Kind: t.Kind})
		}
		return a.printJSON(map[string]any{"targets": out, "per_minute": s.PerMinute, "events": eventKinds(s)})
	}
	if len(s.Targets) == 0 {
		fmt.Fprintln(a.stdout, "No notification targets: add one with git config --add lazy.notify VALUE (lazy help notify).")
		return nil
	}
	for _, t := range s.Targets {
		fmt.Fprintln(a.stdout, sanitize.Field(t.String()))
	}
	fmt.Fprintf(a.stdout, "at most %d events a minute per target; announcing %s\n", s.PerMinute, kindList(eventKinds(s)))
	return nil
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
	results := notify.Test(ctx, s.Targets, filepath.Base(a.repoDir()), time.Now())
	failed := 0
	for _, r := range results {
		if !r.OK {
			failed++
		}
	}
	if c.JSON {
		if err := a.printJSON(map[string]any{"results": results}); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			switch {
			case r.OK:
				fmt.Fprintf(a.stdout, "ok      %s\n", sanitize.Field(r.Target))
			case r.Skipped:
				fmt.Fprintf(a.stdout, "skipped %s: %s\n", sanitize.Field(r.Target), sanitize.Field(r.Error))
			default:
				fmt.Fprintf(a.stdout, "failed  %s: %s\n", sanitize.Field(r.Target), sanitize.Field(r.Error))
			}
		}
	}
	if failed > 0 {
		return silentExit{code: 1, err: fmt.Errorf("%d of %d notification targets failed", failed, len(results))}
	}
	return nil
}

// notifyWork returns the daemon's hook that announces, after a pass, the
// tasks that came to need a human or finished, to the targets of git
// config lazy.notify. It looks only when the pass's listing is new (a
// task ref moved) or the rate limit holds events back, and it sends in
// the background, one round at a time, so a slow webhook never delays a
// pass.
func (a *app) notifyWork(rec *reconcile.Reconciler) func(ctx context.Context) {
	n := &notify.Notifier{Dir: a.repo.LazyDir("notify"), Repo: filepath.Base(a.repoDir()), Since: time.Now()}
	var busy atomic.Bool
	var mu sync.Mutex
	var lastGen uint64
	return func(ctx context.Context) {
		entries, gen := rec.Listing()
		mu.Lock()
		fresh := gen != lastGen
		mu.Unlock()
		if entries == nil || (!fresh && !n.Pending()) {
			return
		}
		if !busy.CompareAndSwap(false, true) {
			return
		}
		go func() {
			defer busy.Store(false)
			cfg, err := a.store.Repo().Config()
			if err != nil {
				return
			}
			s := notify.Load(cfg, a.repoDir())
			if len(s.Targets) == 0 {
				return
			}
			var evs []notify.Event
			if fresh {
				policy := notify.Policy{BreakerAt: ops.MaxConsecutiveInterruptions, NoAutoResume: rec.NoAutoResume, Secrets: s.Secrets}
				if env, err := a.env(); err == nil {
					if gs, err := env.GateSettings(); err == nil && gs.AutoFix {
						policy.GateFixRounds = gs.MaxAttempts
					}
				}
				evs, err = n.Pass(entries, policy, s.Events, a.observeTask)
				if err != nil {
					fmt.Fprintf(a.stderr, "lazy: notifications: %v\n", err)
					return
				}
				mu.Lock()
				lastGen = gen
				mu.Unlock()
			}
			for _, r := range n.Deliver(ctx, s.Targets, s.PerMinute, evs) {
				if !r.OK && !r.Skipped {
					fmt.Fprintf(a.stderr, "lazy: notify %s: %s\n", r.Target, r.Error)
				}
			}
		}()
	}
}

// observeTask reads what notifications look at of a listed task: its
// summary, and the session of an interrupted one (the circuit breaker's
// count).
func (a *app) observeTask(e *gitstore.Entry) (notify.Observation, error) {
	s, err := e.Summary()
	if err != nil {
		return notify.Observation{}, err
	}
	o := notify.Observe(s)
	if s.Status == machine.Interrupted {
		sn, err := a.store.Load(e.ID)
		if err != nil {
			return o, err
		}
		o.AddSession(sn.Session)
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
