package cli

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/sandbox"
)

// SandboxForwardCmd is the first process inside a sandbox whose network
// is an allowlist: it serves the agent's HTTPS_PROXY on the sandbox's
// own loopback, relays to the supervisor's egress proxy through a unix
// socket, and runs the agent as its child.
type SandboxForwardCmd struct {
	Listen string   `help:"Address to listen on inside the sandbox." required:""`
	To     string   `help:"The egress proxy's unix socket." required:""`
	Argv   []string `arg:"" passthrough:"" help:"The agent command."`
}

// Run implements lazy sandbox-forward.
func (c *SandboxForwardCmd) Run(ctx context.Context) error {
	argv := c.Argv
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	code, err := sandbox.Forward(ctx, c.Listen, c.To, argv)
	if err != nil {
		return err
	}
	if code != 0 {
		return silentExit{code: code, err: fmt.Errorf("the sandboxed agent exited with status %d", code)}
	}
	return nil
}
