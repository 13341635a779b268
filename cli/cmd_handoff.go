package cli

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/handoff"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/wire"
)

// HandoffCmd gives a parked task to another agent.
type HandoffCmd struct {
	Task    string  `arg:"" help:"Slug or id prefix." predictor:"task"`
	To      string  `help:"The agent that takes over: claude, codex or exec." predictor:"agent" placeholder:"AGENT"`
	Command string  `help:"With --to exec: the exec agent's command line." placeholder:"CMD"`
	Model   string  `help:"The model the new agent runs (its CLI's --model); default: the CLI's own." placeholder:"MODEL"`
	Message *string `short:"m" name:"message" help:"The next step, as you want it done (default: carry on with the goal, pending feedback first)."`
	Print   bool    `help:"Print the handoff record and change nothing (what a human taking over with lazy pair reads)."`
	JSON    bool    `help:"Print the task as JSON (with --print: the record in a JSON object, key record)."`
	followFlags
}

// Help implements kong's detailed help.
func (c *HandoffCmd) Help() string {
	return `The new agent starts its own conversation in the same worktree, on the
same branch, with a handoff record as its first prompt: the goal, the
branch's commits and files, what the previous agent said last, the
human's decisions, what was tried and failed, the feedback still
pending, the last merge-gate result and the next step. The record is
kept in the task as that turn (lazy show), and in
.git/lazy/handoff/<task id>.md on this machine.

lazy start TASK --agent AGENT on a parked task that another agent worked
does the same.`
}

// Run implements lazy handoff.
func (c *HandoffCmd) Run(a *app, ctx context.Context) error {
	if c.Print {
		return c.print(a, ctx)
	}
	if c.To == "" {
		return usageError{"say who takes over with --to claude, codex or exec (or --print to read the record)"}
	}
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	in, err := a.settings().startInput(c.To, c.Command)
	if err != nil {
		return err
	}
	in.Model = sanitize.Field(c.Model)
	note := ""
	if c.Message != nil {
		if note, _, err = textInputOf(a).read(c.Message, "next step", false); err != nil {
			return err
		}
	}
	return a.handoff(ctx, env, c.Task, handoff.Input{StartInput: in, Note: note}, c.JSON, c.followFlags)
}

// handoff runs a handoff and reports it as start and unblock do.
func (a *app) handoff(ctx context.Context, env *wire.Env, task string, in handoff.Input, asJSON bool, ff followFlags) error {
	logOff := logsOptionsOf(a).logSize(task)
	sn, err := env.Handoff().HandOff(ctx, task, in)
	if err != nil {
		return err
	}
	a.daemonAfterLaunch(ctx)
	if asJSON && !ff.Wait && !ff.Follow {
		return a.io.printJSON(toJSON(&sn.Task))
	}
	fmt.Fprintf(a.io.out, "Handed %s to %s: turn %d is running in %s (the record: lazy show %s)\n", sn.Task.Slug, sn.Session.Agent, sn.Session.Turn, sn.Session.Worktree, sn.Task.Slug)
	return a.stay(ctx, ff, sn, logOff)
}

func (c *HandoffCmd) print(a *app, ctx context.Context) error {
	sn, err := a.openTask(c.Task)
	if err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	note := ""
	if c.Message != nil {
		note = *c.Message
	}
	record, err := env.Handoff().Record(ctx, sn, c.To, note)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.io.printJSON(map[string]string{"record": record})
	}
	fmt.Fprint(a.io.out, termsafe.String(record))
	return nil
}

// handsOff says whether lazy start on sn's task with agentName is a
// handoff: a parked task whose session ran another agent.
func handsOff(status machine.Status, sessionAgent, agentName string) bool {
	switch status {
	case machine.Blocked, machine.Conflict, machine.Interrupted:
		return sessionAgent != "" && agentName != "" && agentName != sessionAgent
	}
	return false
}
