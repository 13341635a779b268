package supervise

import (
	"context"
	"os"
	"path/filepath"

	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/sandbox"
)

// confine wraps an agent's argv in the sandbox the command asks for; an
// ask runs with the worktree read-only. The paths it confines to are
// worked out from the worktree on disk, not taken from the command. With
// a network allowlist it also starts the turn's egress proxy; cleanup
// stops it when the agent is done.
func confine(ctx context.Context, cmd *proto.Command, argv []string) (out []string, cleanup func(), err error) {
	cleanup = func() {}
	if cmd.Sandbox == nil {
		return argv, cleanup, nil
	}
	p, err := sandbox.For(ctx, cmd.Worktree, cmd.Agent, argv[0], cmd.Kind == "ask", cmd.Sandbox)
	if err != nil {
		return nil, cleanup, err
	}
	if p.Network == sandbox.NetworkAllow {
		// A short path: unix socket names are limited to 108 bytes.
		dir, err := os.MkdirTemp("", "lazy-egress-")
		if err != nil {
			return nil, cleanup, err
		}
		eg, err := sandbox.StartEgress(filepath.Join(dir, "s"), cmd.Sandbox.Allow)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, cleanup, err
		}
		cleanup = func() { eg.Close(); _ = os.RemoveAll(dir) }
		p.Egress = filepath.Join(dir, "s")
		if p.Forwarder, err = os.Executable(); err != nil {
			cleanup()
			return nil, func() {}, err
		}
	}
	out, err = sandbox.Wrap(argv, p)
	if err != nil {
		cleanup()
		return nil, func() {}, err
	}
	return out, cleanup, nil
}
