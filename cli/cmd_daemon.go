package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lazyorch/lazy/daemon"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/link"
	"github.com/lazyorch/lazy/mcp"
	"github.com/lazyorch/lazy/runner"
)

// DaemonCmd runs or manages the repository's daemon.
type DaemonCmd struct {
	Ensure bool          `help:"Start the daemon in the background unless one of this version runs (restarting one of another version), then exit." xor:"mode"`
	Status bool          `help:"Print the running daemon's pid and version as JSON." xor:"mode"`
	Stop   bool          `help:"Ask the running daemon to exit." xor:"mode"`
	Events bool          `help:"Stream the running daemon's events (NDJSON: heartbeats, reconcile actions) until interrupted." xor:"mode"`
	Tick   time.Duration `help:"Reconcile period." default:"2s"`
	Idle   time.Duration `help:"Exit after this long with no active task (0 = never)." default:"30m"`
}

// versionID names this exact build: the version plus the executable's
// size and modification time, so two dev builds differ too.
func versionID(version string) string {
	exe, err := os.Executable()
	if err != nil {
		return version
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return version
	}
	return fmt.Sprintf("%s+%d-%d", version, fi.Size(), fi.ModTime().UnixNano())
}

// Run implements lazy daemon.
func (c *DaemonCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	client := daemon.Dial(a.repo.LazyDir())
	switch {
	case c.Status:
		info, err := client.Info(ctx)
		if err != nil {
			return noDaemon(err)
		}
		return a.io.printJSON(info)
	case c.Stop:
		if err := client.Shutdown(ctx); err != nil {
			return noDaemon(err)
		}
		fmt.Fprintln(a.io.out, "Asked the daemon to exit.")
		return nil
	case c.Events:
		if err := client.Events(ctx, a.io.out); err != nil {
			return noDaemon(err)
		}
		return nil
	case c.Ensure:
		info, err := a.ensureDaemon(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.io.out, "daemon running: pid %d, version %s\n", info.PID, info.Version)
		return nil
	}
	rec, err := a.reconciler()
	if err != nil {
		return err
	}
	defer func() { _ = rec.Close() }()
	rec.PickAttempts = true
	if rec.Forge, err = a.settings().forgeSync(); err != nil {
		return err
	}
	d := a.dispatcher(turnPoll{store: a.store, reconcile: a.reconcileBeforeRead}.wait)
	var srv *daemon.Server
	srv = &daemon.Server{
		Store:     a.store,
		Reconcile: rec,
		MCP:       mcp.Handler(a.repo.LazyDir(), d, liveToken(a.store)),
		Web: func(addr string) (http.Handler, daemon.WebInfo) {
			return a.webView(addr, srv)
		},
		OnActions: notifyOptionsOf(a).command,
		AfterPass: afterPass(a.queueWork(), notifyOptionsOf(a).work(rec)),
		Version:   versionID(a.build.version), Tick: c.Tick, Heartbeat: 5 * time.Second, IdleExit: c.Idle,
	}
	err = srv.Run(ctx)
	d.Marks.ClearOwned()
	if errors.Is(err, daemon.ErrRunning) {
		fmt.Fprintln(a.io.errOut, "lazy: a daemon is already running for this repository")
		return nil
	}
	return err
}

// liveToken accepts a token only while the turn it was minted for runs
// (link.Identity.Live), as store records it.
func liveToken(store *gitstore.Store) func(id link.Identity) error {
	return func(id link.Identity) error {
		sn, err := store.Load(id.Task)
		if err != nil {
			return err
		}
		return id.Live(sn)
	}
}

// ensureDaemon makes sure a daemon of this build serves the repository:
// it starts one, or replaces one of another version.
func (a *app) ensureDaemon(ctx context.Context) (daemon.Info, error) {
	client := daemon.Dial(a.repo.LazyDir())
	want := versionID(a.build.version)
	if info, err := client.Info(ctx); err == nil {
		if info.Version == want {
			return info, nil
		}
		_ = client.Shutdown(ctx)
		if !waitFor(func() bool { return syscall.Kill(info.PID, 0) != nil }) {
			return info, fmt.Errorf("the daemon of another lazy version (pid %d, %s) did not exit", info.PID, info.Version)
		}
	}
	if err := spawnerOf(a).detached(nil, "daemon"); err != nil {
		return daemon.Info{}, fmt.Errorf("start the daemon: %w", err)
	}
	var info daemon.Info
	if !waitFor(func() bool {
		i, err := client.Info(ctx)
		info = i
		return err == nil && i.Version == want
	}) {
		return info, errors.New("the daemon did not come up within 5s")
	}
	return info, nil
}

func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// daemonAfterLaunch starts the daemon after a turn was launched, so the
// turn is recorded even if nobody runs another command. It never fails
// the command: the next read reconciles anyway. LAZY_NO_DAEMON=1 turns
// it off.
func (a *app) daemonAfterLaunch(ctx context.Context) {
	if a.getenv("LAZY_NO_DAEMON") != "" {
		return
	}
	if _, err := a.ensureDaemon(ctx); err != nil {
		fmt.Fprintf(a.io.errOut, "lazy: warning: %v (the turn runs anyway; lazy list records it)\n", err)
		return
	}
	_ = daemon.Dial(a.repo.LazyDir()).Poke(ctx) // watchers see the turn start now
}

// noDaemon says there is no daemon, keeping the dial error for %w but
// out of the sentence: a socket path and "connect: no such file" help
// nobody.
func noDaemon(err error) error {
	return &noDaemonError{err}
}

type noDaemonError struct{ err error }

func (e *noDaemonError) Error() string {
	return "no daemon is running for this repository; it starts with the next turn, or run lazy daemon --ensure"
}

func (e *noDaemonError) Unwrap() error { return e.err }

// queueWork returns the daemon's hook that starts the tasks kept to
// start once the tasks they wait for are complete (lazy start of a task
// created with --after), and puts back into their merge queue the tasks
// whose agent has had its turn to fix a failed gate (lazy.gate.autoFix):
// one at a time, in the background.
func (a *app) queueWork() func(ctx context.Context) {
	var busy atomic.Bool
	return func(ctx context.Context) {
		if !busy.CompareAndSwap(false, true) {
			return
		}
		go func() {
			defer busy.Store(false)
			env, err := a.env()
			if err != nil {
				return
			}
			env.Runner().StartDeferred(ctx, func(ctx context.Context, d runner.DeferredStart) error {
				in, err := a.freshSettings().startInput(d.Agent, strings.Join(d.Command, " "))
				if err != nil {
					return err
				}
				in.Model = d.Model
				if d.SandboxExplicit {
					in.Sandbox, in.SandboxExplicit = d.Sandbox, true
				}
				_, err = env.Lifecycle().Start(ctx, d.Task, in)
				return err
			})
			for _, r := range env.Queue().ReadyToRequeue() {
				opts, err := (&AcceptCmd{Timeout: landing.DefaultPreTurnTimeout}).options(a)
				if err != nil {
					return
				}
				opts.FixRound, opts.ViaForge = r.Round, r.ViaForge
				_, _ = env.Landing().Accept(ctx, r.Task, nil, opts)
			}
		}()
	}
}
