package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"

	"github.com/lazyorch/lazy/gitstore"
)

// commandGroups are the headings of lazy --help, in order.
var commandGroups = []kong.Group{
	{Key: "tasks", Title: "Tasks:"},
	{Key: "turns", Title: "Turns (an agent at work):"},
	{Key: "review", Title: "Review:"},
	{Key: "sync", Title: "Sync between machines:"},
	{Key: "setup", Title: "Setup and repair:"},
}

// examples is the example block of every command's help, keyed by the
// command's path ("daemon", "help"). A test requires one for every
// visible command.
var examples = map[string]string{
	"":           "lazy create \"fix the flaky login test\" -m \"it fails one run in twenty\"\nlazy start fix-the-flaky-login-test --follow\nlazy diff fix-the-flaky-login-test\nlazy accept fix-the-flaky-login-test\nlazy help start",
	"init":       "lazy init\nlazy init --json",
	"create":     "lazy create \"fix the flaky login test\"\nlazy create \"cover logout\" --parent fix-the-flaky-login-test -m \"same race, logout path\"\nlazy create \"port to v2\" --target-branch release-2 --start --agent codex\ngit log -1 --format=%B | lazy create \"follow up\" -m -\nlazy create \"deploy it\" --after fix-the-flaky-login-test",
	"list":       "lazy list\nlazy list --open --search login\nlazy list -s blocked,interrupted --sort updated --limit 10\nlazy list --json | jq -r '.[].slug'",
	"blocked":    "lazy blocked\nlazy blocked --json",
	"active":     "lazy active",
	"status":     "lazy status\nlazy status --json",
	"watch":      "lazy watch\nlazy watch --all\nlazy watch | tee watch.log   # plain lines when not on a terminal",
	"show":       "lazy show fix-login\nlazy show 3f2a --json",
	"diff":       "lazy diff fix-login\nlazy diff fix-login --stat\nlazy diff fix-login --name-only\nlazy diff fix-login -- src/auth/\nlazy diff fix-login --tool",
	"logs":       "lazy logs fix-login\nlazy logs -f fix-login\nlazy logs fix-login --turn 3\nlazy logs fix-login --raw > turn.jsonl",
	"wait":       "lazy wait fix-login\nlazy wait fix-login cover-logout --any --timeout 30m\nlazy wait fix-login && lazy diff fix-login",
	"start":      "lazy start fix-login\nlazy start fix-login --agent codex --follow\nlazy start fix-login --command \"make fix\" --wait\nlazy start fix-login --take-over --agent claude\nlazy start --pool fix-login cover-logout --label gpu --priority 2",
	"pool":       "lazy pool\nlazy pool --json | jq '.waiting[] | .why'",
	"runner":     "lazy runner --label gpu --max-tasks 2   # after: git config lazy.runner.agents claude,codex\nlazy runner --once --remote origin      # drain the pool, then stop (CI)",
	"unblock":    "lazy unblock fix-login -m \"also cover logout\"\nlazy unblock fix-login            # opens $EDITOR\nlazy unblock fix-login --approve-file go.sum -m \"ok\" --follow",
	"resume":     "lazy resume fix-login",
	"stop":       "lazy stop fix-login\nlazy stop fix-login -m \"wrong approach\"",
	"ask":        "lazy ask fix-login -m \"why did you change the retry count?\"",
	"pair":       "lazy pair fix-login",
	"chat":       "lazy chat fix-login",
	"sync":       "lazy sync fix-login",
	"accept":     "lazy accept fix-login --dry-run\nlazy accept fix-login\nlazy accept fix-login cover-logout add-metrics   # one merge queue, gated in order\nlazy accept fix-login --skip-gate --reason \"the CI box is down; tested by hand\"\nlazy accept fix-login --skip-pre-turn",
	"gate":       "lazy gate fix-login\nlazy gate fix-login --json | jq .run.commands",
	"queue":      "lazy queue\nlazy queue --json\nlazy queue --remove fix-login",
	"submit":     "lazy submit fix-login",
	"allow":      "lazy allow fix-login 'src/auth/**' 'docs/*.md'\nlazy allow fix-login --add go.sum\nlazy allow fix-login --clear",
	"comment":    "lazy comment fix-login -m \"checked with the auth team\"",
	"close":      "lazy close dup-task -m \"duplicate of fix-login\"\nlazy close old-task --delete-branch",
	"reject":     "lazy reject fix-login -m \"the wrong approach\"",
	"reopen":     "lazy reopen fix-login --reason \"the race is back\"",
	"reparent":   "lazy reparent cover-logout --parent fix-login\nlazy reparent cover-logout --root",
	"edit":       "lazy edit fix-login --title \"Fix the login race\"\nlazy edit fix-login --goal \"also cover logout\"\nlazy edit fix-login --target-branch release-2\nlazy edit fix-login               # title and goal in $EDITOR",
	"demo":       "lazy demo",
	"daemon":     "lazy daemon --status\nlazy daemon --ensure\nlazy daemon --events\nlazy daemon --stop",
	"pull":       "lazy pull\nlazy pull upstream",
	"push":       "lazy push\nlazy push upstream",
	"web":        "lazy web",
	"notify":     "lazy notify\nlazy notify test\nlazy notify test --json\ngit config --add lazy.notify https://ntfy.sh/my-lazy-topic       # ntfy: plain text, Title header\ngit config --add lazy.notify json:https://hooks.example.com/lazy   # the event as JSON\ngit config --add lazy.notify 'cmd:jq -r .slug >> ~/needs-me.txt'  # the event as JSON on stdin\ngit config --add lazy.notify desktop",
	"doctor":     "lazy doctor --dry-run\nlazy doctor\nlazy doctor fix-login --json",
	"mcp":        "claude mcp add lazy -- lazy mcp",
	"help":       "lazy help\nlazy help start\nlazy help daemon",
	"completion": "lazy completion bash > /etc/bash_completion.d/lazy\necho 'source <(lazy completion zsh)' >> ~/.zshrc\nlazy completion fish > ~/.config/fish/completions/lazy.fish",
}

// helpPrinter is kong's help with the command's example block after it.
func helpPrinter(options kong.HelpOptions, ctx *kong.Context) error {
	if err := kong.DefaultHelpPrinter(options, ctx); err != nil {
		return err
	}
	path := commandPath(ctx.Selected())
	if ex, ok := examples[path]; ok {
		fmt.Fprintf(ctx.Stdout, "\nExamples:\n%s\n", indentText(ex, "  "))
	}
	return nil
}

// commandPath is a command's names from the root ("daemon"), without
// aliases; "" for the root.
func commandPath(n *kong.Node) string {
	var names []string
	for ; n != nil && n.Parent != nil; n = n.Parent {
		names = append([]string{n.Name}, names...)
	}
	return strings.Join(names, " ")
}

// HelpCmd is `lazy help [COMMAND]`: run() turns it into COMMAND --help
// before parsing, so this only documents it.
type HelpCmd struct {
	Command []string `arg:"" optional:"" help:"The command to explain."`
}

// Run is reached only when helpArgs did not rewrite the command line.
func (c *HelpCmd) Run() error {
	return usageError{fmt.Sprintf("run lazy %s --help", strings.Join(c.Command, " "))}
}

// helpArgs rewrites `lazy [global flags] help X Y` as `lazy [global
// flags] X Y --help`.
func helpArgs(args []string) []string {
	if i := commandIndex(args); i >= 0 && args[i] == "help" {
		return append(append(append([]string(nil), args[:i]...), args[i+1:]...), "--help")
	}
	return args
}

// versionString names the build: the stamped version, else the module
// version, with the VCS revision and whether the tree was modified.
func versionString(version string) string {
	v := version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	rev, modified := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " (" + rev
		if modified {
			v += ", modified"
		}
		v += ")"
	}
	return v + " " + bi.GoVersion
}

// CompletionCmd prints a shell's completion script.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

var completionScripts = map[string]string{
	"bash": "complete -o default -C ${bin} lazy\n",
	"zsh":  "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -C ${bin} lazy\n",
	"fish": "function __complete_lazy\n    set -lx COMP_LINE (commandline -cp)\n    test -z (commandline -ct)\n    and set COMP_LINE \"$COMP_LINE \"\n    ${bin}\nend\ncomplete -f -c lazy -a \"(__complete_lazy)\"\n",
}

// Run implements lazy completion: the script makes the shell ask this
// binary (COMP_LINE set) for completions of commands, flags and task
// slugs.
func (c *CompletionCmd) Run(a *app) error {
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the lazy binary: %w", err)
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	quoted := "'" + strings.ReplaceAll(bin, "'", `'\''`) + "'"
	_, err = io.WriteString(a.stdout, strings.ReplaceAll(completionScripts[c.Shell], "${bin}", quoted))
	return err
}

// taskPredictor completes task slugs of the repository in the current
// directory; outside one it offers nothing.
func taskPredictor() complete.Predictor {
	return complete.PredictFunc(func(complete.Args) []string {
		repo, err := gitstore.Discover(".")
		if err != nil {
			return nil
		}
		entries, err := gitstore.Open(repo).List()
		if err != nil {
			return nil
		}
		var out []string
		for i := range entries {
			if s, err := entries[i].Summary(); err == nil {
				out = append(out, s.Slug)
			}
		}
		return out
	})
}

// completeIfAsked answers a shell's completion request (COMP_LINE set)
// and reports whether it did.
func completeIfAsked(parser *kong.Kong) bool {
	if os.Getenv("COMP_LINE") == "" {
		return false
	}
	done := false
	kongplete.Complete(parser, kongplete.WithPredictor("task", taskPredictor()), kongplete.WithExitFunc(func(int) { done = true }))
	return done
}
