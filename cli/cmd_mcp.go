package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/confine"
	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/link"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/marks"
	"github.com/lazyorch/lazy/mcp"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/sandbox"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// McpCmd serves the builder's MCP tools on stdio.
type McpCmd struct{}

// Run implements lazy mcp.
func (c *McpCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	d := a.dispatcher(a.waitTurn)
	srv, err := mcp.NewServer(mcp.Local{D: d, Caller: mcp.Caller{Actor: machine.Builder}}, false, versionID(a.build.version))
	if err != nil {
		return err
	}
	// The protocol's stream is JSON-RPC, not text for a terminal: it goes
	// out raw, past the escaper.
	err = srv.Serve(ctx, a.io.in, rawWriter(a.io.out))
	d.Drain(ctx) // an accept the client stopped waiting for still finishes
	return err
}

// McpProxyCmd is the agent's stdio MCP server: every call goes to the
// daemon with the session token from the environment.
type McpProxyCmd struct{}

// Run implements lazy mcp-proxy.
func (c *McpProxyCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	token := a.getenv(link.TokenEnv)
	if token == "" {
		return errors.New("lazy mcp-proxy is started by an agent lazy runs: " + link.TokenEnv + " is not set")
	}
	if a.getenv("LAZY_NO_DAEMON") == "" {
		if _, err := a.ensureDaemon(ctx); err != nil {
			fmt.Fprintf(a.io.errOut, "lazy mcp-proxy: %v\n", err)
		}
	}
	srv, err := mcp.NewServer(mcp.NewRemote(a.repo.LazyDir(), token), true, versionID(a.build.version))
	if err != nil {
		return err
	}
	return srv.Serve(ctx, a.io.in, rawWriter(a.io.out))
}

// dispatcher builds the MCP dispatcher of this repository; wait is how a
// call waits for a turn.
func (a *app) dispatcher(wait func(ctx context.Context, id string, timeout time.Duration) (*task.Snapshot, error)) *mcp.Dispatcher {
	timing, policy, turnErr := a.settings().turn()
	d := &mcp.Dispatcher{
		Store: a.store,
		Marks: &marks.Marks{LazyDir: a.repo.LazyDir(), PID: os.Getpid(), Host: a.store.Host()},
		Hooks: mcp.Hooks{
			Env: func(actor machine.Actor, caller string) (*wire.Env, error) {
				return wire.New(a.store, session.Env{Actor: actor, RepoDir: a.repoDir(), Timing: timing, Policy: policy, TurnConfigErr: turnErr, CallerTask: caller, Launch: a.launchSupervisor}).WithAccept(a.crash, a.gateReaper()), nil
			},
			// Read afresh: work an agent starts is confined by today's
			// lazy.sandbox, not the one this long-lived process began with.
			StartInput: func(agentName, command string) (session.StartInput, error) {
				return a.freshSettings().startInput(agentName, command)
			},
			Wait: wait,
		},
	}
	d.Hooks.Accept = func() landing.AcceptOptions {
		opts := landing.AcceptOptions{Reconcile: a.reconcileTask}
		// Read afresh: lazy mcp and the daemon live long, and a config
		// change must apply to the next accept, not the next restart.
		cfg := a.freshSettings().cfg
		if v, ok := cfg.Get("lazy.accept.preTurn"); ok {
			opts.PreTurn = v
		}
		// The gate runs confined as agents do when lazy.sandbox is on. A
		// sandbox setting lazy cannot read never lets the gate out: it
		// runs in the tightest sandbox (no network) instead.
		sb, err := sandbox.FromConfig(cfg, "")
		if err != nil {
			sb = &proto.Sandbox{Network: confine.NetworkOff}
		}
		opts.Sandbox = sb
		return opts
	}
	return d
}

// turnPoll waits for a task's turn inside the daemon, in its store; it
// reconciles the task itself between polls rather than wait for the next
// tick.
type turnPoll struct {
	store     *gitstore.Store
	reconcile func(ctx context.Context, entries []task.Entry) bool
}

// wait waits up to timeout for task id's turn to end.
func (p turnPoll) wait(ctx context.Context, id string, timeout time.Duration) (*task.Snapshot, error) {
	deadline := time.Now().Add(timeout)
	for {
		sn, err := p.store.Load(id)
		if err != nil {
			return nil, err
		}
		if sn.Task.Status != machine.Working {
			return sn, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no answer within %s; %s stays working and the answer is recorded when it arrives", timeout, sn.Task.Slug)
		}
		p.reconcile(ctx, []task.Entry{{ID: id, Status: sn.Task.Status}})
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
