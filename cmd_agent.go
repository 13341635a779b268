package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/ops"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/reconcile"
	"github.com/lazyorch/lazy/supervise"
)

// StartCmd starts a backlog task.
type StartCmd struct {
	Task    string `arg:"" help:"Slug or id prefix."`
	Agent   string `help:"Agent CLI to run: claude, codex or exec. Default: exec when --command is given, else git config lazy.agent, else claude."`
	Command string `help:"The exec agent's command line (split on spaces; the prompt is appended as the last argument and set in LAZY_PROMPT). Default: git config lazy.exec.command." placeholder:"CMD"`
	JSON    bool   `help:"Print the task as JSON."`
}

// Run implements lazy start.
func (c *StartCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	command := c.Command
	if command == "" {
		command, _ = a.cfg.Get("lazy.exec.command")
	}
	agentName := c.Agent
	if agentName == "" {
		if c.Command != "" {
			agentName = "exec"
		} else if v, ok := a.cfg.Get("lazy.agent"); ok && v != "" {
			agentName = v
		} else {
			agentName = "claude"
		}
	}
	mode, ok := a.cfg.Get("lazy.claude.permissionMode")
	if !ok {
		mode = "acceptEdits"
	}
	in := ops.StartInput{Agent: agentName, ExecCommand: strings.Fields(command), PermissionMode: mode, RepoDir: a.repoDir()}
	if dir, ok := a.cfg.Get("lazy.worktreeDir"); ok && dir != "" {
		in.WorktreeDir = dir
	}
	sn, err := env.Start(ctx, c.Task, in, a.launchSupervisor)
	if err != nil {
		return err
	}
	a.daemonAfterLaunch(ctx)
	if c.JSON {
		return a.printJSON(toJSON(&sn.Task))
	}
	fmt.Fprintf(a.stdout, "Started %s: working in %s (branch %s)\n", sn.Task.Slug, sn.Session.Worktree, sn.Session.Branch)
	return nil
}

// launchSupervisor starts `lazy supervise` detached, in its own session,
// so that nothing that happens to this command (or a daemon) kills the
// agent.
func (a *app) launchSupervisor(taskID string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the lazy binary: %w", err)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer func() { _ = devnull.Close() }()
	cmd := exec.Command(exe, "-C", a.repo.CommonDir, "supervise", taskID)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start supervisor: %w", err)
	}
	return cmd.Process.Release()
}

// SuperviseCmd runs one turn (started by lazy itself).
type SuperviseCmd struct {
	Task string `arg:"" help:"Full task id."`
}

// Run implements lazy supervise.
func (c *SuperviseCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	if !gitstore.ValidID(c.Task) {
		return usageError{fmt.Sprintf("supervise needs a full task id, not %q", c.Task)}
	}
	return supervise.Run(ctx, proto.ForTask(a.repo.LazyDir(), c.Task))
}

// reconcileBeforeRead runs the working-task sweep so that a read shows
// turns that ended since the last command. Failures are reported, never
// fatal to the read.
func (a *app) reconcileBeforeRead(ctx context.Context, entries []gitstore.Entry) bool {
	working := false
	for _, e := range entries {
		if e.Status == machine.Working {
			working = true
			break
		}
	}
	if !working {
		return false
	}
	r := &reconcile.Reconciler{Env: &ops.Env{Store: a.store, Actor: machine.System}}
	actions, err := r.Sweep(ctx, entries)
	if err != nil {
		fmt.Fprintf(a.stderr, "lazy: reconcile: %v\n", err)
	}
	if len(actions) > 0 {
		a.wrote = true
	}
	return len(actions) > 0
}

// UnblockCmd gives a parked task feedback and starts the next turn.
type UnblockCmd struct {
	Task    string  `arg:"" help:"Slug or id prefix."`
	Message *string `short:"m" name:"message" help:"Feedback for the agent (\"-\" reads stdin). Without -m, piped stdin or $EDITOR is used."`
	JSON    bool    `help:"Print the task as JSON."`
}

// Run implements lazy unblock.
func (c *UnblockCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	if _, err := a.store.Resolve(c.Task); err != nil {
		return err
	}
	feedback, done, err := a.readText(c.Message, "feedback", true)
	if err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	sn, err := env.Unblock(ctx, c.Task, feedback, a.launchSupervisor)
	if sn != nil {
		done() // the feedback is recorded, whatever happened to the launch
	}
	if err != nil {
		return err
	}
	a.daemonAfterLaunch(ctx)
	if c.JSON {
		return a.printJSON(toJSON(&sn.Task))
	}
	fmt.Fprintf(a.stdout, "Unblocked %s: turn %d is running\n", sn.Task.Slug, sn.Session.Turn)
	return nil
}

func (a *app) repoDir() string {
	if a.repo.WorkTree != "" {
		return a.repo.WorkTree
	}
	return a.repo.CommonDir
}

// ResumeCmd restarts an interrupted task without new feedback.
type ResumeCmd struct {
	Task string `arg:"" help:"Slug or id prefix."`
	JSON bool   `help:"Print the task as JSON."`
}

// Run implements lazy resume.
func (c *ResumeCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	sn, err := env.Resume(ctx, c.Task, a.launchSupervisor)
	if err != nil {
		return err
	}
	a.daemonAfterLaunch(ctx)
	if c.JSON {
		return a.printJSON(toJSON(&sn.Task))
	}
	fmt.Fprintf(a.stdout, "Resumed %s: turn %d is running\n", sn.Task.Slug, sn.Session.Turn)
	return nil
}

// StopCmd stops a running turn and parks the task.
type StopCmd struct {
	Task    string  `arg:"" help:"Slug or id prefix."`
	Message *string `short:"m" name:"reason" aliases:"message" help:"Why (optional)."`
	JSON    bool    `help:"Print the task as JSON."`
}

// Run implements lazy stop.
func (c *StopCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	reason := ""
	if c.Message != nil {
		reason = *c.Message
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	sn, err := env.Stop(ctx, c.Task, reason)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.printJSON(toJSON(&sn.Task))
	}
	fmt.Fprintf(a.stdout, "Stopped %s: now %s (work in the worktree is kept)\n", sn.Task.Slug, sn.Task.Status)
	return nil
}
