// Command lazy is a git-native orchestrator for AI coding agents: tasks,
// sessions and turns live as commits under refs/lazy/* in the repository.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/lazyorch/lazy/internal/termsafe"
)

// version is stamped at build time (-ldflags "-X main.version=...").
var version = "dev"

// CLI is the command tree.
type CLI struct {
	Dir     string           `short:"C" name:"directory" help:"Run as if lazy was started in DIR." placeholder:"DIR" default:"."`
	Version kong.VersionFlag `help:"Print the version and exit."`
	NoColor bool             `name:"no-color" help:"Never colour the output (NO_COLOR in the environment does the same)."`

	Create     CreateCmd     `cmd:"" group:"tasks" help:"Create a task in backlog."`
	List       ListCmd       `cmd:"" group:"tasks" aliases:"ls" help:"List tasks, subtasks indented under their parent."`
	Blocked    BlockedCmd    `cmd:"" group:"tasks" help:"List tasks waiting for a human (blocked, conflict)."`
	Active     ActiveCmd     `cmd:"" group:"tasks" help:"List tasks with a live worktree (working, interrupted, pairing, merging)."`
	Status     StatusCmd     `cmd:"" group:"tasks" help:"Summarize the tasks: counts by status, the active ones with what they are doing, the daemon."`
	Show       ShowCmd       `cmd:"" group:"tasks" help:"Show a task: details, turns, comments and its status changelog."`
	Comment    CommentCmd    `cmd:"" group:"tasks" help:"Add a comment to a task."`
	Allow      AllowCmd      `cmd:"" group:"tasks" help:"Set, extend or clear a task's allowed-paths policy (files changed outside it become violations)."`
	Reparent   ReparentCmd   `cmd:"" group:"tasks" help:"Move a task under another parent (--parent) or to the top level (--root)."`
	Edit       EditCmd       `cmd:"" group:"tasks" help:"Change a task's title, goal or target branch (recorded in its history)."`
	Close      CloseCmd      `cmd:"" group:"tasks" help:"Abandon a task that will not be done (won't do, duplicate)."`
	Reject     RejectCmd     `cmd:"" group:"tasks" help:"Abandon a task, rejecting its agent's work."`
	Reopen     ReopenCmd     `cmd:"" group:"tasks" help:"Reopen a complete or abandoned task."`
	Start      StartCmd      `cmd:"" group:"turns" help:"Start a backlog task: branch, worktree and an agent turn under a supervisor."`
	Unblock    UnblockCmd    `cmd:"" group:"turns" help:"Give a blocked or interrupted task feedback; upstream is merged, then the next agent turn runs."`
	Resume     ResumeCmd     `cmd:"" group:"turns" help:"Restart an interrupted task without new feedback (re-delivers feedback it never received)."`
	Stop       StopCmd       `cmd:"" group:"turns" help:"Stop a running turn; the task parks as blocked and its work is kept."`
	Ask        AskCmd        `cmd:"" group:"turns" help:"Ask a parked task's agent one read-only question; the task's status is unchanged."`
	Pair       PairCmd       `cmd:"" group:"turns" help:"Take over a parked or interrupted task's worktree with its agent CLI in your terminal; the task parks again when you exit."`
	Chat       ChatCmd       `cmd:"" group:"turns" help:"Talk to a task's agent read-only in your terminal; the status does not change (a finished task's conversation resumes in the project root)."`
	Sync       SyncCmd       `cmd:"" group:"turns" help:"Merge upstream into a parked task's branch."`
	Wait       WaitCmd       `cmd:"" group:"turns" help:"Wait until tasks need a human (blocked, interrupted, ...); the exit code says how they ended."`
	Diff       DiffCmd       `cmd:"" group:"review" help:"Show a task's work: git diff of its branch against the merge base with the branch it merges into."`
	Logs       LogsCmd       `cmd:"" group:"review" help:"Print a task's agent output, rendered (assistant text, tool calls); -f follows a running turn."`
	Watch      WatchCmd      `cmd:"" group:"review" help:"A live view of the tasks and their substates, redrawn as the daemon reports changes."`
	Accept     AcceptCmd     `cmd:"" group:"review" help:"Squash-merge a parked task's work into its parent's or target branch, then remove its worktree and branch (a submitted task merges through the forge)."`
	Submit     SubmitCmd     `cmd:"" group:"review" help:"Push a blocked task's branch and open (or update) its pull request on the forge: blocked -> submitted."`
	Pull       PullCmd       `cmd:"" group:"sync" help:"Fetch another machine's task state from a remote and merge it in, task by task."`
	Push       PushCmd       `cmd:"" group:"sync" help:"Push this machine's task state to a remote (never forced; a rejected push merges and retries)."`
	Init       InitCmd       `cmd:"" group:"setup" help:"Set lazy up in this repository (host id, refspecs for refs/lazy/*)."`
	Demo       DemoCmd       `cmd:"" group:"setup" help:"Run a guided end-to-end tour in a scratch repository."`
	Daemon     DaemonCmd     `cmd:"" group:"setup" help:"Run the repository's daemon (started automatically by commands that launch a turn)."`
	Web        WebCmd        `cmd:"" group:"setup" help:"Print the URL of the daemon's live web view (127.0.0.1, with its token); --actions for one that can act."`
	Doctor     DoctorCmd     `cmd:"" group:"setup" help:"Find and repair what crashes leave behind: stranded merges, dead supervisors, orphaned worktrees and locks."`
	Mcp        McpCmd        `cmd:"" group:"setup" name:"mcp" help:"Serve lazy's tools to a builder agent over MCP on stdio (actor builder)."`
	Completion CompletionCmd `cmd:"" group:"setup" help:"Print a shell completion script: commands, flags and task slugs."`
	Help       HelpCmd       `cmd:"" group:"setup" help:"Show help for a command (lazy help start is lazy start --help)."`
	McpProxy   McpProxyCmd   `cmd:"" name:"mcp-proxy" hidden:"" help:"An agent's MCP server: forwards tool calls to the daemon with the session token."`

	Housekeep HousekeepCmd `cmd:"" hidden:"" help:"Pack loose refs and objects (run in the background by lazy)."`
	Supervise SuperviseCmd `cmd:"" hidden:"" help:"Run one agent turn (started by lazy)."`
	// SandboxForward runs inside a sandbox with a network allowlist.
	SandboxForward SandboxForwardCmd `cmd:"" name:"sandbox-forward" hidden:"" help:"Relay a sandboxed agent's proxy connections to lazy's allowlist proxy and run the agent (started by lazy)."`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process exit, so the exit-code contract is
// testable: 0 ok, 1 error, 2 usage.
func run(args []string, stdin io.Reader, rawStdout, rawStderr io.Writer) int {
	// The one escaping boundary (SECURITY.md rule 2): everything lazy
	// prints goes through termsafe, so text from a record, an agent or a
	// remote cannot drive the terminal. pair and chat hand their pty to the
	// agent through Unwrap, by design.
	stdout, stderr := termsafe.New(rawStdout), termsafe.New(rawStderr)
	defer func() {
		_ = stdout.Flush()
		_ = stderr.Flush()
	}()
	var cli CLI
	exitStatus := -1
	parser, err := kong.New(&cli,
		kong.Name("lazy"),
		kong.Description("A git-native orchestrator for AI coding agents. Task state lives in refs/lazy/* of this repository."),
		// The build id is what lazy daemon --status reports, so the two can
		// be matched.
		kong.Vars{"version": "lazy " + versionString() + "\nbuild id " + versionID()},
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { exitStatus = code }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.ExplicitGroups(commandGroups),
		kong.Help(helpPrinter),
	)
	if err != nil {
		fmt.Fprintf(stderr, "lazy: %v\n", err)
		return 1
	}
	if completeIfAsked(parser) {
		return 0
	}
	kctx, err := parser.Parse(helpArgs(args))
	if exitStatus >= 0 {
		return exitStatus // --help or --version
	}
	if err != nil {
		fmt.Fprintf(stderr, "lazy: %v\n", err)
		hint := "lazy --help"
		var pe *kong.ParseError
		if errors.As(err, &pe) && pe.Context != nil && pe.Context.Command() != "" {
			hint = "lazy " + pe.Context.Command() + " --help"
		}
		fmt.Fprintf(stderr, "Run %q for usage.\n", hint)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{dir: cli.Dir, stdin: stdin, stdout: stdout, stderr: stderr, noColor: cli.NoColor || os.Getenv("NO_COLOR") != ""}
	kctx.BindTo(ctx, (*context.Context)(nil))
	err = kctx.Run(a)
	a.afterWrite()
	var quiet silentExit
	if errors.As(err, &quiet) {
		return quiet.code
	}
	if err != nil {
		fmt.Fprintf(stderr, "lazy: %v\n", err)
		return exitCode(err)
	}
	return 0
}

// silentExit ends a command with an exit status after it has already
// told the user why.
type silentExit struct {
	code int
	err  error
}

func (e silentExit) Error() string { return e.err.Error() }
func (e silentExit) Unwrap() error { return e.err }
