package main

import (
	"context"
	"fmt"
	"os"

	"github.com/lazyorch/lazy/ops"
	"github.com/lazyorch/lazy/pair"
)

// interactive opens the repository for a command that hands the human's
// terminal to an agent (pair, chat), refusing before anything changes
// when stdin is not a terminal.
func (a *app) interactive() (*os.File, *ops.Env, error) {
	if err := a.openForWrite(); err != nil {
		return nil, nil, err
	}
	in, ok := a.stdin.(*os.File)
	if !ok || !isTerminal(in) {
		return nil, nil, pair.ErrNoTerminal
	}
	env, err := a.env()
	return in, env, err
}

// PairCmd hands the terminal to the task's agent in its worktree.
type PairCmd struct {
	Task string `arg:"" help:"Slug or id prefix." predictor:"task"`
}

// Run implements lazy pair.
func (c *PairCmd) Run(a *app, ctx context.Context) error {
	in, env, err := a.interactive()
	if err != nil {
		return err
	}
	p, err := env.BeginPair(ctx, c.Task)
	if err != nil {
		return err
	}
	s := p.Snapshot
	fmt.Fprintf(a.stderr, "· pairing on %s in %s (%s); exit the agent to hand the task back\n", s.Task.Slug, s.Session.Worktree, p.Argv[0])
	environ := append(os.Environ(), "LAZY_TASK_ID="+s.Task.ID, "LAZY_WORKTREE="+s.Session.Worktree, "LAZY_PAIRING=1")
	code, runErr := pair.Run(context.WithoutCancel(ctx), p.Argv, s.Session.Worktree, environ, in, a.stdout)
	if runErr != nil {
		code = -1
	}
	// Whatever happened to the agent, the task is handed back.
	sn, err := env.EndPair(context.WithoutCancel(ctx), p, code)
	if err != nil {
		return err
	}
	turns, _ := a.store.Turns(sn)
	summary := ""
	if len(turns) > 0 {
		summary = turns[len(turns)-1].Content
	}
	fmt.Fprintf(a.stderr, "· %s; %s is now %s\n", summary, sn.Task.Slug, sn.Task.Status)
	if runErr != nil {
		return fmt.Errorf("pairing ended: %w", runErr)
	}
	return nil
}
