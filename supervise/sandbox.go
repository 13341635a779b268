package supervise

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/lazyorch/lazy/link"

	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/sandbox"
)

// confine wraps an agent's argv in the sandbox the command asks for; an
// ask runs with the worktree read-only. The paths it confines to are
// worked out from the worktree on disk, not taken from the command. With
// a network allowlist it also starts the turn's egress proxy; cleanup
// stops it when the agent is done.
func confine(ctx context.Context, dir proto.Dir, cmd *proto.Command, argv []string) (out []string, cleanup func(), err error) {
	if cmd.Sandbox == nil {
		return argv, func() {}, nil
	}
	if cmd.MCP != nil && os.Getenv("LAZY_NO_DAEMON") == "" {
		// The agent reaches lazy's MCP tools through the daemon's socket,
		// which the sandbox can bind only if it exists when the sandbox is
		// built; the command that launched this turn starts the daemon
		// after the launch, so a first turn may get here before it listens.
		awaitFile(ctx, filepath.Join(dir.LazyDir(), link.SocketFile), daemonSocketWait)
	}
	p, cleanup, err := sandbox.Prepare(ctx, cmd.Worktree, cmd.Agent, argv[0], cmd.Kind == "ask", cmd.Sandbox)
	if err != nil {
		return nil, cleanup, err
	}
	out, err = sandbox.Wrap(argv, p)
	if err != nil {
		cleanup()
		return nil, func() {}, err
	}
	return out, cleanup, nil
}

// daemonSocketWait bounds how long a sandboxed turn waits for the daemon's
// socket: past it the turn runs, and its MCP calls say the daemon is not
// reachable.
const daemonSocketWait = 10 * time.Second

// awaitFile waits until path exists, for at most wait.
func awaitFile(ctx context.Context, path string, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for {
		if _, err := os.Stat(path); err == nil || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}
