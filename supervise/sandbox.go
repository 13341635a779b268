package supervise

import (
	"context"

	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/sandbox"
)

// confine wraps an agent's argv in the sandbox the command asks for; an
// ask runs with the worktree read-only. The paths it confines to are
// worked out from the worktree on disk, not taken from the command.
func confine(ctx context.Context, cmd *proto.Command, argv []string) ([]string, error) {
	if cmd.Sandbox == nil {
		return argv, nil
	}
	p, err := sandbox.For(ctx, cmd.Worktree, cmd.Agent, argv[0], cmd.Kind == "ask", cmd.Sandbox)
	if err != nil {
		return nil, err
	}
	return sandbox.Wrap(argv, p)
}
