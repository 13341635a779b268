// Package cli is lazy's command line: one file per command group, the
// command table here, and Run, which main calls.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lazyorch/lazy/landing"

	"github.com/alecthomas/kong"

	"github.com/lazyorch/lazy/internal/termsafe"
)

// Globals are the flags every command takes, before or after its name.
type Globals struct {
	Dir     string      `short:"C" name:"directory" help:"Run as if lazy was started in DIR." placeholder:"DIR" default:"."`
	Version versionFlag `help:"Print the version and exit."`
	NoColor bool        `name:"no-color" help:"Never colour the output (NO_COLOR in the environment does the same)."`
}

// command is one entry of the command tree. The tree is a table rather
// than one struct of every command so that a run builds only the command
// it invokes: kong builds and interpolates a node per flag by reflection,
// and the whole tree was a fifth of every lazy process's start-up.
type command struct {
	name    string
	group   string // a key of commandGroups; none for hidden commands
	aliases []string
	hidden  bool
	help    string
	new     func() any // a zero value of the command's struct
}

// commands is lazy's command tree in the order lazy --help lists it.
var commands = []command{
	{name: "create", group: "tasks", help: "Create a task in backlog.",
		new: func() any { return &CreateCmd{} }},
	{name: "list", group: "tasks", aliases: []string{"ls"}, help: "List tasks, subtasks indented under their parent.",
		new: func() any { return &ListCmd{} }},
	{name: "blocked", group: "tasks", help: "List tasks waiting for a human (blocked, conflict).",
		new: func() any { return &BlockedCmd{} }},
	{name: "inbox", group: "tasks", help: "List every task that waits on a human, from every clone and runner the remote brought here: where, since when, and the one command that answers it.",
		new: func() any { return &InboxCmd{} }},
	{name: "active", group: "tasks", help: "List tasks with a live worktree (working, interrupted, pairing, merging).",
		new: func() any { return &ActiveCmd{} }},
	{name: "status", group: "tasks", help: "Summarize the tasks: counts by status, the active ones with what they are doing, the daemon.",
		new: func() any { return &StatusCmd{} }},
	{name: "cost", group: "tasks", help: "Report what agent turns cost, by task, agent, model, day or outcome (thrown-away work included).",
		new: func() any { return &CostCmd{} }},
	{name: "show", group: "tasks", help: "Show a task: details, turns, comments and its status changelog.",
		new: func() any { return &ShowCmd{} }},
	{name: "comment", group: "tasks", help: "Add a comment to a task.",
		new: func() any { return &CommentCmd{} }},
	{name: "allow", group: "tasks", help: "Set, extend or clear a task's allowed-paths policy (files changed outside it become violations).",
		new: func() any { return &AllowCmd{} }},
	{name: "reparent", group: "tasks", help: "Move a task under another parent (--parent) or to the top level (--root).",
		new: func() any { return &ReparentCmd{} }},
	{name: "edit", group: "tasks", help: "Change a task's title, goal, target branch or budget (recorded in its history).",
		new: func() any { return &EditCmd{} }},
	{name: "close", group: "tasks", help: "Abandon a task that will not be done (won't do, duplicate).",
		new: func() any { return &CloseCmd{} }},
	{name: "reject", group: "tasks", help: "Abandon a task, rejecting its agent's work.",
		new: func() any { return &RejectCmd{} }},
	{name: "reopen", group: "tasks", help: "Reopen a complete or abandoned task.",
		new: func() any { return &ReopenCmd{} }},
	{name: "start", group: "turns", help: "Start a backlog task: branch, worktree and an agent turn under a supervisor.",
		new: func() any { return &StartCmd{} }},
	{name: "unblock", group: "turns", help: "Give a blocked or interrupted task feedback; upstream is merged, then the next agent turn runs.",
		new: func() any { return &UnblockCmd{} }},
	{name: "resume", group: "turns", help: "Restart an interrupted task without new feedback (re-delivers feedback it never received).",
		new: func() any { return &ResumeCmd{} }},
	{name: "stop", group: "turns", help: "Stop a running turn; the task parks as blocked and its work is kept.",
		new: func() any { return &StopCmd{} }},
	{name: "handoff", group: "turns", help: "Give a parked task to another agent (or print the record a human taking over reads): a new session on the same branch, told what was done.",
		new: func() any { return &HandoffCmd{} }},
	{name: "ask", group: "turns", help: "Ask a parked task's agent one read-only question; the task's status is unchanged.",
		new: func() any { return &AskCmd{} }},
	{name: "pair", group: "turns", help: "Take over a parked or interrupted task's worktree with its agent CLI in your terminal; the task parks again when you exit.",
		new: func() any { return &PairCmd{} }},
	{name: "chat", group: "turns", help: "Talk to a task's agent read-only in your terminal; the status does not change (a finished task's conversation resumes in the project root).",
		new: func() any { return &ChatCmd{} }},
	{name: "sync", group: "turns", help: "Merge upstream into a parked task's branch.",
		new: func() any { return &SyncCmd{} }},
	{name: "wait", group: "turns", help: "Wait until tasks need a human (blocked, interrupted, ...); the exit code says how they ended.",
		new: func() any { return &WaitCmd{} }},
	{name: "diff", group: "review", help: "Show a task's work: git diff of its branch against the merge base with the branch it merges into.",
		new: func() any { return &DiffCmd{} }},
	{name: "logs", group: "review", help: "Print a task's agent output, rendered (assistant text, tool calls); -f follows a running turn.",
		new: func() any { return &LogsCmd{} }},
	{name: "watch", group: "review", help: "A live view of the tasks and their substates, redrawn as the daemon reports changes.",
		new: func() any { return &WatchCmd{} }},
	{name: "accept", group: "review", help: "Squash-merge a parked task's work into its parent's or target branch, then remove its worktree and branch (a submitted task merges through the forge).",
		new: func() any { return &AcceptCmd{} }},
	{name: "gate", group: "review", help: "Run the merge gate (lazy.gate, .lazy/gate) now on the tree an accept of the task would land, and record it; lands nothing.",
		new: func() any { return &GateCmd{} }},
	{name: "queue", group: "review", help: "Show this machine's merge queues: what waits to land in each target branch, what its gate is doing, and why entries left.",
		new: func() any { return &QueueCmd{} }},
	{name: "stash", group: "review", help: "List the uncommitted changes of yours that interrupted accepts kept (one stash per checkout, oldest first), or give them back (lazy stash restore).",
		new: func() any { return &StashCmd{} }},
	{name: "submit", group: "review", help: "Push a blocked task's branch and open (or update) its pull request on the forge: blocked -> submitted.",
		new: func() any { return &SubmitCmd{} }},
	{name: "pool", group: "sync", help: "Show the runner pool on the remote: runners with their labels, claims with their leases, and the pooled tasks that wait, with why.",
		new: func() any { return &PoolCmd{} }},
	{name: "runner", group: "sync", help: "Run this clone as a runner of the pool: claim pooled tasks through the remote, run their turns here, push the results.",
		new: func() any { return &RunnerCmd{} }},
	{name: "pull", group: "sync", help: "Fetch another machine's task state from a remote and merge it in, task by task.",
		new: func() any { return &PullCmd{} }},
	{name: "push", group: "sync", help: "Push this machine's task state to a remote (never forced; a rejected push merges and retries).",
		new: func() any { return &PushCmd{} }},
	{name: "init", group: "setup", help: "Set lazy up in this repository (host id, refspecs for refs/lazy/*).",
		new: func() any { return &InitCmd{} }},
	{name: "demo", group: "setup", help: "Run a guided end-to-end tour in a scratch repository.",
		new: func() any { return &DemoCmd{} }},
	{name: "daemon", group: "setup", help: "Run the repository's daemon (started automatically by commands that launch a turn).",
		new: func() any { return &DaemonCmd{} }},
	{name: "web", group: "setup", help: "Print the URL of the daemon's live web view (127.0.0.1, with its token); --actions for one that can act.",
		new: func() any { return &WebCmd{} }},
	{name: "notify", group: "setup", help: "List the notification targets (git config lazy.notify), or send each a sample event (lazy notify test).",
		new: func() any { return &NotifyCmd{} }},
	{name: "doctor", group: "setup", help: "Find and repair what crashes leave behind: stranded merges, dead supervisors, orphaned worktrees and locks.",
		new: func() any { return &DoctorCmd{} }},
	{name: "mcp", group: "setup", help: "Serve lazy's tools to a builder agent over MCP on stdio (actor builder).",
		new: func() any { return &McpCmd{} }},
	{name: "completion", group: "setup", help: "Print a shell completion script: commands, flags and task slugs.",
		new: func() any { return &CompletionCmd{} }},
	{name: "config", group: "setup", help: "Show lazy's settings (git config lazy.*): each key's effective value and where it comes from (local, global or the default), and any bad value with its fix; lazy config KEY VALUE sets one, checked first.",
		new: func() any { return &ConfigCmd{} }},
	{name: "version", group: "setup", help: "Print lazy's version: module version, VCS revision, whether the tree was modified, the Go version.",
		new: func() any { return &VersionCmd{} }},
	{name: "help", group: "setup", help: "Show help for a command (lazy help start is lazy start --help).",
		new: func() any { return &HelpCmd{} }},
	{name: "mcp-proxy", hidden: true, help: "An agent's MCP server: forwards tool calls to the daemon with the session token.",
		new: func() any { return &McpProxyCmd{} }},
	{name: "housekeep", hidden: true, help: "Pack loose refs and objects (run in the background by lazy).",
		new: func() any { return &HousekeepCmd{} }},
	{name: "supervise", hidden: true, help: "Run one agent turn (started by lazy).",
		new: func() any { return &SuperviseCmd{} }},
	{name: "gate-reap", hidden: true, help: "Run one merge-gate command as its subreaper, and end whatever it leaves running (started by lazy).",
		new: func() any { return &GateReapCmd{} }},
	{name: "sandbox-forward", hidden: true, help: "Relay a sandboxed agent's proxy connections to lazy's allowlist proxy and run the agent (started by lazy).",
		new: func() any { return &SandboxForwardCmd{} }},
}

// tags are the command's kong tags beyond its name, help and group.
func (c command) tags() []string {
	var tags []string
	if len(c.aliases) > 0 {
		tags = append(tags, `aliases:"`+strings.Join(c.aliases, ",")+`"`)
	}
	if c.hidden {
		tags = append(tags, `hidden:""`)
	}
	return tags
}

// invoked returns the commands a run must build: the one args name when
// they name one, else all of them (lazy --help, an unknown word whose
// error suggests the nearest command, shell completion).
func invoked(args []string) []command {
	// Shell completion (kongplete) reads the process's environment.
	if os.Getenv("COMP_LINE") != "" {
		return commands
	}
	i := commandIndex(args)
	if i < 0 {
		return commands
	}
	for _, c := range commands {
		if c.name == args[i] || slices.Contains(c.aliases, args[i]) {
			return []command{c}
		}
	}
	return commands
}

// commandIndex is the index of the first argument that is not a global
// flag or its value, or -1.
func commandIndex(args []string) int {
	for i := 0; i < len(args); i++ {
		switch arg := args[i]; {
		case arg == "--":
			return -1
		case arg == "-C" || arg == "--directory":
			i++ // its value
		case strings.HasPrefix(arg, "-"):
		default:
			return i
		}
	}
	return -1
}

// build is what lazy knows about its own executable.
type build struct {
	version string // stamped at build time, "dev" otherwise
}

// newParser builds the parser of cmds into g. exit receives the status
// of --help and --version.
func newParser(g *Globals, cmds []command, b build, stdout, stderr io.Writer, exit func(int)) (*kong.Kong, error) {
	opts := []kong.Option{
		kong.Name("lazy"),
		kong.Description("A git-native orchestrator for AI coding agents. Task state lives in refs/lazy/* of this repository."),
		kong.Bind(b),
		kong.Writers(stdout, stderr),
		kong.Exit(exit),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.ExplicitGroups(commandGroups),
		kong.Help(helpPrinter),
	}
	for _, c := range cmds {
		opts = append(opts, kong.DynamicCommand(c.name, c.help, c.group, c.new(), c.tags()...))
	}
	return kong.New(g, opts...)
}

// versionFlag is --version. It prints what kong.VersionFlag would, but
// works the text out only when asked: the build id stats the executable.
type versionFlag bool

// BeforeReset prints the version and exits, before any other flag is
// checked.
func (versionFlag) BeforeReset(k *kong.Kong, b build) error {
	// The build id is what lazy daemon --status reports, so the two can
	// be matched.
	fmt.Fprintf(k.Stdout, "lazy %s\nbuild id %s\n", versionString(b.version), versionID(b.version))
	k.Exit(0)
	return nil
}

// Run is lazy's main without the process exit, so the exit-code contract
// is testable: 0 ok, 1 error, 2 usage. version is the version stamped at
// build time ("dev" if none).
func Run(version string, args []string, stdin io.Reader, rawStdout, rawStderr io.Writer) int {
	return run(version, args, runIO{stdin: stdin, stdout: rawStdout, stderr: rawStderr})
}

// runIO is what a run reads and writes besides the repository: its
// standard streams, its environment, the clock and the terminal. Run
// gives the process's; the tests give their own (gh's IOStreams), so a
// command runs end to end in the test's process.
type runIO struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string // nil: os.Getenv
	now            func() time.Time    // nil: time.Now
	terminal       *terminal           // nil: stdout is a terminal if the OS says so
	noSpawn        bool                // start no lazy process (a daemon, a supervisor)
}

func run(version string, args []string, o runIO) int {
	if o.getenv == nil {
		o.getenv = os.Getenv
	}
	if o.now == nil {
		o.now = time.Now
	}
	// The one escaping boundary (SECURITY.md rule 2): everything lazy
	// prints goes through termsafe, so text from a record, an agent or a
	// remote cannot drive the terminal. pair and chat hand their pty to the
	// agent through Unwrap, by design.
	stdin := o.stdin
	stdout, stderr := termsafe.New(o.stdout), termsafe.New(o.stderr)
	defer func() {
		_ = stdout.Flush()
		_ = stderr.Flush()
	}()
	var g Globals
	exitStatus := -1
	b := build{version: version}
	args = helpArgs(args)
	parser, err := newParser(&g, invoked(args), b, stdout, stderr, func(code int) { exitStatus = code })
	if err != nil {
		fmt.Fprintf(stderr, "lazy: %v\n", err)
		return 1
	}
	if completeIfAsked(parser) {
		return 0
	}
	kctx, err := parser.Parse(args)
	if exitStatus >= 0 {
		return exitStatus // --help or --version
	}
	if err != nil {
		if word, ok := unknownCommand(args); ok {
			fmt.Fprintf(stderr, "lazy: %s\n", unknownCommandError(word))
			fmt.Fprintln(stderr, "Run \"lazy --help\" for usage.")
			return 2
		}
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
	streams := ioStreams{in: stdin, out: stdout, errOut: stderr, getenv: o.getenv, terminal: o.terminal, noColor: g.NoColor || o.getenv("NO_COLOR") != ""}
	a := &app{dir: g.Dir, build: b, io: streams, getenv: o.getenv, now: o.now, noSpawn: o.noSpawn, crash: landing.CrashPointFromEnv()}
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
