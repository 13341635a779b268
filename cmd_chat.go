package main

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/pair"
)

// ChatCmd opens a read-only conversation with a task's agent.
type ChatCmd struct {
	Task string `arg:"" help:"Slug or id prefix."`
}

// Run implements lazy chat.
func (c *ChatCmd) Run(a *app, ctx context.Context) error {
	in, env, err := a.interactive()
	if err != nil {
		return err
	}
	ch, err := env.BeginChat(ctx, c.Task)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "lazy: read-only chat with %s's agent in %s; the task stays %s\n", ch.Snapshot.Task.Slug, ch.Dir, ch.Snapshot.Task.Status)
	code, runErr := pair.Run(context.WithoutCancel(ctx), ch.Argv, ch.Dir, ch.Env, in, a.stdout)
	if runErr != nil {
		code = -1
	}
	if _, err := env.EndChat(context.WithoutCancel(ctx), ch, code); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("chat ended: %w", runErr)
	}
	return nil
}
