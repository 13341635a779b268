package cli

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/configkeys"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/render"
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
	"init":       "lazy init\nlazy init --json\nlazy init --actions            # also write .github/workflows/lazy-runner.yml: runners on GitHub Actions\nlazy init --actions --force    # replace a different lazy-runner.yml there",
	"create":     "lazy create \"fix the flaky login test\"\nlazy create \"cover logout\" --parent fix-the-flaky-login-test -m \"same race, logout path\"\nlazy create \"port to v2\" --target-branch release-2 --start --agent codex\ngit log -1 --format=%B | lazy create \"follow up\" -m -\nlazy create \"deploy it\" --after fix-the-flaky-login-test",
	"list":       "lazy list\nlazy list --open --search login\nlazy list -s blocked,interrupted --sort updated --limit 10\nlazy list --json | jq -r '.[].slug'",
	"blocked":    "lazy blocked\nlazy blocked --json",
	"inbox":      "lazy pull && lazy inbox   # what other clones and runners pushed, too\nlazy inbox --json | jq -r '.items[].command'\nlazy inbox --count",
	"active":     "lazy active",
	"status":     "lazy status\nlazy status --json",
	"watch":      "lazy watch\nlazy watch --all\nlazy watch | tee watch.log   # plain lines when not on a terminal",
	"show":       "lazy show fix-login\nlazy show 3f2a --json",
	"cost":       "lazy cost                       # by task, most expensive first\nlazy cost --by outcome          # what accepted, rejected, abandoned and open work cost\nlazy cost --by day --since 7d\nlazy cost --by model fix-login  # one task and its subtasks\nlazy cost fix-login             # an attempt group: each attempt and their total\nlazy cost --by agent --json | jq '.rows[] | {key, cost_usd}'\ngit log --format='%h %(trailers:key=Lazy-Cost,valueonly,separator=) %s' main",
	"diff":       "lazy diff fix-login\nlazy diff fix-login --stat\nlazy diff fix-login --name-only\nlazy diff fix-login -- src/auth/\nlazy diff fix-login --tool\nlazy diff fix-login --attempts         # each attempt's stat, then each one's work",
	"logs":       "lazy logs fix-login\nlazy logs -f fix-login\nlazy logs fix-login --turn 3\nlazy logs fix-login --turn 3 --raw > turn.jsonl\nlazy logs fix-login --raw | jq -c 'select(.lazy == null)'   # the agent's events alone",
	"wait":       "lazy wait fix-login\nlazy wait fix-login cover-logout --any --timeout 30m\nlazy wait fix-login && lazy diff fix-login",
	"start":      "lazy start fix-login\nlazy start fix-login --agent codex --follow\nlazy start fix-login --command \"make fix\" --wait\nlazy start fix-login --take-over --agent claude\nlazy start --pool fix-login cover-logout --label gpu --priority 2\nlazy start fix-login --attempts 2 --agent claude,codex   # two ways side by side\nlazy start fix-login --attempts 3 --agent claude --model opus\nlazy start fix-login --attempts 2 --wait   # wait for both, then compare them\nlazy start fix-login --attempts 3 --pick gate   # the daemon gates each; the best is proposed\nlazy start fix-login --attempts 3 --pick gate --land   # ...and landed, the others closed",
	"pool":       "lazy pool\nlazy pool --count                               # tasks waiting for a runner, for a scaler (KEDA)\nlazy pool --json | jq '.waiting[] | .why'\nlazy pool --json | jq '.skipped[] | .reason'   # refs on the remote lazy does not accept\nlazy pool release fix-login                     # a human frees its claim\nlazy pool release --force --generation 3 fix-login",
	"runner":     "lazy runner --label gpu --max-tasks 2   # after: git config lazy.runner.agents claude,codex\nlazy runner --once --remote origin      # drain the pool, then stop (CI)\nlazy runner --grace 2m                  # on SIGTERM, a running turn gets 2 minutes, then its claim goes back",
	"unblock":    "lazy unblock fix-login -m \"also cover logout\"\nlazy unblock fix-login            # opens $EDITOR\nlazy unblock fix-login --approve-file go.sum -m \"ok\" --follow\nlazy unblock fix-login --budget +5 # over budget: raise it by $5 and carry on\nlazy unblock fix-login --budget 20 -m \"finish the tests, then stop\"",
	"handoff":    "lazy handoff fix-login --to codex\nlazy handoff fix-login --to claude -m \"keep the fix; write the missing test\"\nlazy start fix-login --agent codex     # the same, on a parked task\nlazy handoff fix-login --print         # what a human taking over reads; then lazy pair fix-login",
	"resume":     "lazy resume fix-login",
	"stop":       "lazy stop fix-login\nlazy stop fix-login -m \"wrong approach\"",
	"ask":        "lazy ask fix-login -m \"why did you change the retry count?\"",
	"pair":       "lazy pair fix-login",
	"chat":       "lazy chat fix-login",
	"sync":       "lazy sync fix-login",
	"accept":     "lazy accept fix-login --dry-run\nlazy accept fix-login\nlazy accept fix-login cover-logout add-metrics   # one merge queue, gated in order\ngit config lazy.gate.batch 8 && lazy accept fix-login cover-logout add-metrics   # gated as one tree; a failure is bisected to its culprit\ngit config lazy.gate.batch auto   # the batch size follows the recent failure rate\nlazy accept fix-login --skip-gate --reason \"the CI box is down; tested by hand\"\nlazy diff fix-login && lazy accept fix-login --approve-protected   # it changed check.sh, which the gate runs\nlazy accept fix-login --skip-pre-turn\nlazy accept fix-login --attempt 2      # land attempt 2, close the others",
	"gate":       "lazy gate fix-login\nlazy gate fix-login --json | jq .run.commands",
	"stash":      "lazy stash                      # your changes interrupted accepts kept, by checkout, oldest first\nlazy stash --json\nlazy stash restore              # give them back in this checkout\nlazy stash restore release-2.1",
	"queue":      "lazy queue\nlazy queue --json\nlazy queue --remove fix-login",
	"submit":     "lazy submit fix-login",
	"allow":      "lazy allow fix-login 'src/auth/**' 'docs/*.md'\nlazy allow fix-login --add go.sum\nlazy allow fix-login --clear",
	"comment":    "lazy comment fix-login -m \"checked with the auth team\"",
	"close":      "lazy close dup-task -m \"duplicate of fix-login\"\nlazy close old-task --delete-branch",
	"reject":     "lazy reject fix-login -m \"the wrong approach\"",
	"reopen":     "lazy reopen fix-login --reason \"the race is back\"",
	"reparent":   "lazy reparent cover-logout --parent fix-login\nlazy reparent cover-logout --root",
	"edit":       "lazy edit fix-login --title \"Fix the login race\"\nlazy edit fix-login --goal \"also cover logout\"\nlazy edit fix-login --target-branch release-2\nlazy edit fix-login --budget 12.50\nlazy edit fix-login               # title and goal in $EDITOR",
	"demo":       "lazy demo",
	"daemon":     "lazy daemon --status\nlazy daemon --ensure\nlazy daemon --events\nlazy daemon --stop",
	"pull":       "lazy pull\nlazy pull upstream",
	"push":       "lazy push\nlazy push upstream",
	"web":        "lazy web",
	"notify":     "lazy notify\nlazy notify test\nlazy notify test --json\ngit config --add lazy.notify https://ntfy.sh/my-lazy-topic       # ntfy: plain text, Title header\ngit config --add lazy.notify json:https://hooks.example.com/lazy   # the event as JSON\ngit config --add lazy.notify 'cmd:jq -r .slug >> ~/needs-me.txt'  # the event as JSON on stdin\ngit config --add lazy.notify desktop",
	"doctor":     "lazy doctor --dry-run\nlazy doctor\nlazy doctor fix-login --json",
	"mcp":        "claude mcp add lazy -- lazy mcp",
	"help":       "lazy help\nlazy help start\nlazy help daemon",
	"config":     "lazy config\nlazy config --changed                          # only what is set, not the defaults\nlazy config lazy.gate                          # the gate's keys\nlazy config lazy.budget.task 5                 # set it in this repository (checked first)\nlazy config --global lazy.agent codex          # in your ~/.gitconfig\nlazy config --add lazy.agent.allow 'go test ./...'   # a repeatable key: one more value\nlazy config --unset lazy.budget.task           # back to the default\nlazy config --json | jq -r '.[] | select(.error) | .error'",
	"version":    "lazy version\nlazy version --json | jq -r .revision",
	"completion": "lazy completion bash > /etc/bash_completion.d/lazy\necho 'source <(lazy completion zsh)' >> ~/.zshrc\nlazy completion fish > ~/.config/fish/completions/lazy.fish",
}

// helpPrinter is kong's help with the command's example block after it.
func helpPrinter(options kong.HelpOptions, ctx *kong.Context) error {
	if err := kong.DefaultHelpPrinter(options, ctx); err != nil {
		return err
	}
	path := commandPath(ctx.Selected())
	if ex, ok := examples[path]; ok {
		fmt.Fprintf(ctx.Stdout, "\nExamples:\n%s\n", render.Indent(ex, "  "))
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

// buildInfo is what lazy knows of how it was built, from the stamped
// version and runtime/debug.ReadBuildInfo.
type buildInfo struct {
	Version       string `json:"version"`        // stamped at build time, else the module version, else "dev"
	ModuleVersion string `json:"module_version"` // the main module's version as go build recorded it ("(devel)" in a checkout)
	Revision      string `json:"revision"`       // vcs.revision, "" when built outside a checkout
	RevisionTime  string `json:"revision_time"`  // vcs.time
	Dirty         bool   `json:"dirty"`          // vcs.modified: the checkout had changes
	GoVersion     string `json:"go"`
	OS            string `json:"os"`
	Arch          string `json:"arch"`
	BuildID       string `json:"build_id"` // what lazy daemon --status reports, to match a daemon to its binary
}

// readBuildInfo fills a buildInfo for the stamped version.
func readBuildInfo(version string) buildInfo {
	b := buildInfo{Version: version, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, BuildID: versionID(version)}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.ModuleVersion, b.GoVersion = bi.Main.Version, bi.GoVersion
	if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.RevisionTime = s.Value
		case "vcs.modified":
			b.Dirty = s.Value == "true"
		case "GOOS":
			b.OS = s.Value
		case "GOARCH":
			b.Arch = s.Value
		}
	}
	return b
}

// String is the one-line name of the build: the version, the short VCS
// revision and whether the tree was modified, and the Go version.
func (b buildInfo) String() string {
	v := b.Version
	if rev := b.Revision; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " (" + rev
		if b.Dirty {
			v += ", modified"
		}
		v += ")"
	}
	return v + " " + b.GoVersion
}

// versionString names the build (see buildInfo.String).
func versionString(version string) string { return readBuildInfo(version).String() }

// VersionCmd is lazy version.
type VersionCmd struct {
	JSON bool `help:"Print the build as JSON: version, module_version, revision, dirty, go, os, arch, build_id."`
}

// Run implements lazy version: what --version prints, or all of it as
// JSON for a bug report or a script.
func (c *VersionCmd) Run(a *app) error {
	b := readBuildInfo(a.build.version)
	if c.JSON {
		return a.io.printJSON(b)
	}
	fmt.Fprintf(a.io.out, "lazy %s\nbuild id %s\n", b, b.BuildID)
	return nil
}

// CompletionCmd prints a shell's completion script.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

// completionScripts make the shell ask lazy, found on PATH when the
// shell completes (never the path of the binary that printed the
// script: an upgrade or a go install elsewhere leaves that stale), for
// the completions of a command line (COMP_LINE set).
var completionScripts = map[string]string{
	"bash": "complete -o default -C lazy lazy\n",
	"zsh":  "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -C lazy lazy\n",
	"fish": "function __complete_lazy\n    set -lx COMP_LINE (commandline -cp)\n    test -z (commandline -ct)\n    and set COMP_LINE \"$COMP_LINE \"\n    command lazy\nend\ncomplete -f -c lazy -a \"(__complete_lazy)\"\n",
}

// Run implements lazy completion: the script makes the shell ask lazy
// (COMP_LINE set) for completions of commands, flags and task slugs.
func (c *CompletionCmd) Run(a *app) error {
	_, err := io.WriteString(a.io.out, completionScripts[c.Shell])
	return err
}

// taskPredictor completes the slugs of the tasks of the repository in
// the current directory that keep reports true for (nil: all); outside
// one it offers nothing.
func taskPredictor(keep func(machine.Status) bool) complete.Predictor {
	return complete.PredictFunc(func(complete.Args) []string {
		repo, err := gitrepo.Discover(".")
		if err != nil {
			return nil
		}
		entries, err := gitstore.Open(repo).List()
		if err != nil {
			return nil
		}
		var out []string
		for i := range entries {
			if keep != nil && !keep(entries[i].Status) {
				continue
			}
			if s, err := entries[i].Summary(); err == nil {
				out = append(out, s.Slug)
			}
		}
		return out
	})
}

// acceptable is what lazy accept takes: a parked task (blocked) or one
// whose pull request waits (submitted); landing's accept pre-flight refuses
// every other status.
func acceptable(st machine.Status) bool { return st == machine.Blocked || st == machine.Submitted }

// statusNames are the task statuses, for --status.
func statusNames() []string {
	var out []string
	for _, s := range machine.Statuses() {
		out = append(out, string(s))
	}
	return out
}

// configKeyNames are the keys lazy config shows.
func configKeyNames() []string {
	var out []string
	for _, k := range configkeys.All() {
		out = append(out, k.Name)
	}
	return out
}

// completeIfAsked answers a shell's completion request (COMP_LINE set)
// and reports whether it did.
func completeIfAsked(parser *kong.Kong) bool {
	if os.Getenv("COMP_LINE") == "" {
		return false
	}
	done := false
	kongplete.Complete(parser,
		kongplete.WithPredictor("task", taskPredictor(nil)),
		kongplete.WithPredictor("acceptable", taskPredictor(acceptable)),
		kongplete.WithPredictor("status", complete.PredictSet(statusNames()...)),
		kongplete.WithPredictor("agent", complete.PredictSet(agent.Names()...)),
		kongplete.WithPredictor("configkey", complete.PredictSet(configKeyNames()...)),
		kongplete.WithExitFunc(func(int) { done = true }))
	return done
}

// unknownCommand returns the command word of args when it names no
// command (so kong's "unexpected argument" can be said better).
func unknownCommand(args []string) (string, bool) {
	i := commandIndex(args)
	if i < 0 {
		return "", false
	}
	for _, c := range commands {
		if c.name == args[i] || slices.Contains(c.aliases, args[i]) {
			return "", false
		}
	}
	return args[i], true
}

// suggestCommands names the visible commands nearest to word, best
// first: those it is a prefix of ("acc" -> accept), else those within a
// few typos of it ("statsu" -> status, "wiat" -> wait), the nearest only.
func suggestCommands(word string) []string {
	var names []string
	for _, c := range commands {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	return words.Closest(word, names)
}

// unknownCommandError says that word is no command, and which it may
// have meant.
func unknownCommandError(word string) string {
	msg := fmt.Sprintf("%q is not a lazy command", word)
	switch s := suggestCommands(word); len(s) {
	case 0:
		return msg + "; lazy --help lists them"
	case 1:
		return msg + "; did you mean " + s[0] + "?"
	default:
		return msg + "; did you mean one of " + strings.Join(s, ", ") + "?"
	}
}
