package supervise

import (
	"context"

	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/sandbox"
)

// confine wraps an agent's argv in the sandbox the command asks for; an
// ask runs with the worktree read-only. The paths it confines to are
// worked out from the worktree on disk, not taken from the command. With
// a network allowlist it also starts the turn's egress proxy; cleanup
// stops it when the agent is done.
func confine(ctx context.Context, cmd *proto.Command, argv []string) (out []string, cleanup func(), err error) {
	if cmd.Sandbox == nil {
		return argv, func() {}, nil
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
