package cli

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/pair"
)

// ChatCmd opens a read-only conversation with a task's agent.
type ChatCmd struct {
	Task string `arg:"" help:"Slug or id prefix." predictor:"task"`
}

// Run implements lazy chat.
func (c *ChatCmd) Run(a *app, ctx context.Context) error {
	in, env, err := a.interactive()
	if err != nil {
		return err
	}
	ch, err := env.Conversation().BeginChat(ctx, c.Task)
	if err != nil {
		return err
	}
	switch {
	case ch.Sandboxed:
		fmt.Fprintf(a.io.errOut, "· read-only chat with %s's agent in %s (sandboxed: the worktree is mounted read-only); the task stays %s\n", ch.Snapshot.Task.Slug, ch.Dir, ch.Snapshot.Task.Status)
	case ch.Snapshot.Session.Agent == "exec":
		// An exec agent's chat is the user's shell: nothing makes it
		// read-only without the sandbox, so say so plainly.
		fmt.Fprintf(a.io.errOut, "· chat with %s in %s: this is a writable shell (the exec agent has no read-only mode; set lazy.sandbox on to enforce one); the task stays %s\n", ch.Snapshot.Task.Slug, ch.Dir, ch.Snapshot.Task.Status)
	default:
		fmt.Fprintf(a.io.errOut, "· read-only chat with %s's agent in %s (the agent CLI's own read-only mode); the task stays %s\n", ch.Snapshot.Task.Slug, ch.Dir, ch.Snapshot.Task.Status)
	}
	code, runErr := pair.Run(context.WithoutCancel(ctx), ch.Argv, ch.Dir, ch.Env, in, rawWriter(a.io.out))
	if runErr != nil {
		code = -1
	}
	if _, err := env.Conversation().EndChat(context.WithoutCancel(ctx), ch, code); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("chat ended: %w", runErr)
	}
	return nil
}
