// Package configkeys is the one table of lazy's git config keys: each
// key's name, kind, default and what it does. lazy config prints it with
// the effective values, the README's settings table is generated from
// it, and a test fails when code reads a lazy.* key it does not name.
// Invalid is the one wording of a bad value: the key, the value, and
// the git config command that fixes it.
package configkeys

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/budget"
)

// The kinds of value a key takes.
const (
	Duration = "duration" // a Go duration above 0: 90s, 15m, 1h
	Bool     = "bool"     // a git boolean: true/false, yes/no, on/off, 1/0
	Int      = "int"      // a whole number
	String   = "string"   // free text (a command, a path, a name)
	List     = "list"     // multi-valued: one value per git config --add
	Enum     = "enum"     // one of Values
	USD      = "usd"      // an amount in US dollars: 5, 12.50, $5 (0 allows no spend; unset: no budget)
	Price    = "price"    // a model and its dollars per million tokens in, cached and out: 'gpt-5-codex 1.25,0.125,10'; repeat the key
)

// Key is one git config key lazy reads.
type Key struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Values  []string `json:"values,omitempty"` // the choices of an Enum
	Default string   `json:"default"`          // as the README shows it (Markdown; lazy config drops the backticks)
	Example string   `json:"example"`          // a valid value, ready for a shell: the fix Invalid proposes
	Help    string   `json:"help"`             // as the README shows it (Markdown)
}

// keys is the table, grouped as the README lists it.
var keys = []Key{
	{Name: "lazy.hostid", Kind: String, Default: "set by `lazy init`", Example: "laptop-3f2a",
		Help: "this machine's id on every operation"},
	{Name: "lazy.pushRefspec", Kind: String, Default: "`refs/lazy/*:refs/lazy/*`", Example: "'refs/lazy/*:refs/lazy/*'",
		Help: "what `lazy push` will push (its source must be under `refs/lazy/`)"},
	{Name: "lazy.gc.looseObjects", Kind: Int, Default: "`4000`", Example: "4000",
		Help: "loose-object estimate that starts background packing; `0` disables"},
	{Name: "lazy.agent", Kind: String, Default: "`claude`", Example: "codex",
		Help: "the agent `lazy start` runs when `--agent`/`--command` are not given"},
	{Name: "lazy.attempts.pick", Kind: Enum, Values: []string{"human", "gate"}, Default: "`human`", Example: "gate",
		Help: "how `lazy start --attempts N` chooses: `human` (you read the comparison), or `gate` (each attempt is gated on the tree it would land when it parks, by the daemon in the background of its pass, the attempts parked together at once, up to `lazy.gate.parallel` runs; the best by gate passed, then lower cost, then smaller diff, is proposed, or landed with `--land`)"},
	{Name: "lazy.exec.command", Kind: String, Default: "none", Example: "'./scripts/agent.sh'",
		Help: "the exec agent's command for `lazy start`"},
	{Name: "lazy.claude.permissionMode", Kind: String, Default: "the posture's", Example: "acceptEdits",
		Help: "Claude Code's `--permission-mode` for work turns (`acceptEdits` without the sandbox, `bypassPermissions` in it); the allow-list stays"},
	{Name: "lazy.agent.allow", Kind: List, Default: "none", Example: "'go test ./...'",
		Help: "a shell command prefix a Claude work turn may run without the sandbox, beyond the default git commands (`go test ./...`); repeat the key"},
	{Name: "lazy.uncommitted", Kind: Enum, Values: []string{"commit", "push-back", "keep"}, Default: "`commit`", Example: "commit",
		Help: "what becomes of changes a completed work turn left uncommitted: `commit` (lazy commits them as the agent's), `push-back` (ask the agent once, then commit), `keep`"},
	{Name: "lazy.setup", Kind: String, Default: "none", Example: "'npm ci'",
		Help: "shell command run in each new worktree before its first turn (output in the turn's log; a failure parks the task blocked)"},
	{Name: "lazy.copyFiles", Kind: List, Default: "none", Example: ".env",
		Help: "untracked files of the main checkout (a glob relative to its root, such as `.env`) copied into each new worktree; repeat the key"},
	{Name: "lazy.watchdogTimeout", Kind: Duration, Default: "`30m`", Example: "30m",
		Help: "no-progress limit before the watchdog kills the agent"},
	{Name: "lazy.watchdogKillGrace", Kind: Duration, Default: "`10s`", Example: "10s",
		Help: "time between SIGTERM and SIGKILL"},
	{Name: "lazy.pushBack", Kind: Bool, Default: "`false`", Example: "false",
		Help: "`true` is `lazy.uncommitted push-back` (its older spelling)"},
	{Name: "lazy.unreachableTimeout", Kind: Duration, Default: "`20m`", Example: "20m",
		Help: "how long a turn keeps retrying an agent whose API cannot be reached before it parks blocked"},
	{Name: "lazy.worktreeDir", Kind: String, Default: "`$XDG_DATA_HOME/lazy/worktrees/<repo>-<id>`", Example: "~/worktrees",
		Help: "where task worktrees are created (a relative path is relative to the repository root; see [Where worktrees live](#where-worktrees-live))"},
	{Name: "lazy.autoResume", Kind: Bool, Default: "`true`", Example: "true",
		Help: "whether the reconciler auto-resumes interrupted tasks"},
	{Name: "lazy.startGrace", Kind: Duration, Default: "`30s`", Example: "30s",
		Help: "how long a new turn may go without a supervisor before it counts as crashed"},
	{Name: "lazy.accept.preTurn", Kind: String, Default: "none", Example: "'Update the changelog.'",
		Help: "prompt of an agent turn `lazy accept` runs before merging"},
	{Name: "lazy.gate", Kind: List, Default: "none", Example: "'go test ./...'",
		Help: "a shell command of the merge gate, run on the tree an accept would land; repeat the key for more (wins over `.lazy/gate`)"},
	{Name: "lazy.gate.file", Kind: Bool, Default: "`on`", Example: "true",
		Help: "`off` ignores a committed `.lazy/gate`"},
	{Name: "lazy.gate.timeout", Kind: Duration, Default: "`15m`", Example: "10m",
		Help: "bound on a whole gate run; the process group is killed past it, and the run fails"},
	{Name: "lazy.gate.parallel", Kind: Int, Default: "`1`", Example: "2",
		Help: "gates run at once when several tasks are accepted together (a speculative merge train), and when the daemon gates the attempts of a `--pick gate` start"},
	{Name: "lazy.gate.batch", Kind: Int, Default: "`1`", Example: "8",
		Help: "entries of a merge train gated as one tree; a batch that fails is bisected until the culprit is isolated, and the rest land; `auto` follows the recent failure rate (1/sqrt(p), 1 to 8); with `lazy.gate.lanes`, each lane batches and bisects its own entries (`auto`: from the lane's own outcomes once it has 5)"},
	{Name: "lazy.gate.lanes", Kind: List, Default: "none", Example: "'docs=docs/,*.md'",
		Help: "a lane of the merge train, `NAME=GLOB[,GLOB...]`: entries whose changes touch disjoint lanes gate and land independently (paths in no lane form the lane `default`; an entry spanning lanes waits for each); repeat the key, one lane each, or set `diff` to take lanes from the actual diffs"},
	{Name: "lazy.gate.autoFix", Kind: Bool, Default: "`false`", Example: "true",
		Help: "hand a failed gate or a conflict to the agent and re-queue the task after its turn"},
	{Name: "lazy.gate.maxAttempts", Kind: Int, Default: "`3`", Example: "3",
		Help: "automatic fix rounds before the task stays blocked for a human"},
	{Name: "lazy.gate.protect", Kind: List, Default: "see [The gate cannot be decided by the candidate](#the-gate-cannot-be-decided-by-the-candidate)", Example: "'tests/'",
		Help: "a path or glob (`**/*_test.go`, `scripts/`) a task may not change on its own: a change touching one lands only with a human's `lazy accept TASK --approve-protected`; repeat the key (beside `.lazy/`, CI configuration and the files the gate's commands name)"},
	{Name: "lazy.gate.minDuration", Kind: Duration, Default: "none", Example: "5s",
		Help: "a gate whose commands all exit 0 faster than this fails (a check that fast checked nothing)"},
	{Name: "lazy.gate.forge", Kind: Enum, Values: []string{"local", "checks"}, Default: "`local`", Example: "local",
		Help: "`checks`: a forge accept relies on the forge's required checks instead of running the gate locally"},
	{Name: "lazy.pool.remote", Kind: String, Default: "the default remote", Example: "origin",
		Help: "the remote the runner pool lives on (`lazy start --pool`, `lazy runner`, `lazy pool`)"},
	{Name: "lazy.pool.maxLease", Kind: Duration, Default: "`10m`", Example: "10m",
		Help: "the longest lease a pool claim may hold from now: a claim that says it holds longer counts as expired and is reported by `lazy pool`, and a `lazy runner --lease` over it is refused; set it alike on every machine of the pool"},
	{Name: "lazy.runner.agents", Kind: List, Default: "none", Example: "claude,codex",
		Help: "the agents a `lazy runner` here may run (`claude,codex,exec`); a pooled task asking for another is left to other runners"},
	{Name: "lazy.budget.task", Kind: USD, Default: "none", Example: "10",
		Help: "the budget of each task in US dollars: its turns and its subtasks' turns (`lazy create/edit --budget` sets one task's); a turn is not started over it, Claude gets what is left as `--max-budget-usd`, and the task parks held until `lazy unblock --budget +N`; `0` allows no spend, and no budget is the key unset"},
	{Name: "lazy.budget.day", Kind: USD, Default: "none", Example: "50",
		Help: "what this machine's agent turns in this repository may cost per local day, in US dollars; `0` allows no spend, and no budget is the key unset"},
	{Name: "lazy.price", Kind: Price, Default: "lazy's table", Example: "'gpt-5-codex 1.25,0.125,10'",
		Help: "a model's price, over lazy's table: the model, then US dollars per million tokens in, cached and out; prices a turn whose CLI reported tokens and no cost (a reported cost wins); repeat the key, one model each"},
	{Name: "lazy.notify", Kind: List, Default: "none", Example: "https://ntfy.sh/my-lazy-topic",
		Help: "where to announce a task that needs a human or finished: `https://…` or `ntfy:https://…` (plain text, ntfy style), `json:https://…` (the event as JSON), `cmd:COMMAND` (the event as JSON on stdin), `desktop`; repeat the key"},
	{Name: "lazy.notify.perMinute", Kind: Int, Default: "`10`", Example: "10",
		Help: "at most this many events per target per minute; the excess arrives later as one \"and K more\""},
	{Name: "lazy.notify.events", Kind: List, Default: "all", Example: "blocked,gate_failed,budget",
		Help: "the kinds of event sent: `blocked`, `conflict`, `gate_failed`, `budget`, `interrupted`, `asked`, `answered`, `finished`, `pick` (also sent when `blocked` is named), comma-separated; repeat the key for more"},
	{Name: "lazy.notify.remote", Kind: String, Default: "`lazy.pool.remote`, else origin", Example: "origin",
		Help: "the remote whose marker refs (`refs/lazy-notified/`) make each notification fire once across every clone and runner sharing it: the first machine to claim an event announces it; `none` keeps the dedup on this machine"},
	{Name: "lazy.watch.bell", Kind: Bool, Default: "`true`", Example: "false",
		Help: "`lazy watch` rings the terminal bell when a task comes to need a human"},
	{Name: "lazy.notify.command", Kind: String, Default: "none", Example: "'notify-send \"$LAZY_MESSAGE\"'",
		Help: "shell command run when a task starts needing a human (`LAZY_TASK_SLUG`, `LAZY_STATUS`, `LAZY_FROM`, `LAZY_WHY`, `LAZY_MESSAGE` in its environment)"},
	{Name: "lazy.forge", Kind: String, Default: "from the remote URL", Example: "github",
		Help: "`github`, `gitlab` or `gitea` (`forgejo`)"},
	{Name: "lazy.forge.remote", Kind: String, Default: "`origin`", Example: "origin",
		Help: "the remote `lazy submit` pushes to"},
	{Name: "lazy.forge.repo", Kind: String, Default: "from the remote URL", Example: "owner/name",
		Help: "`OWNER/NAME` or `HOST/OWNER/NAME` on the forge (GitLab: `GROUP/[SUBGROUP/]NAME`, with `HOST/` first for a self-hosted instance)"},
	{Name: "lazy.forge.token", Kind: String, Default: "git credential helper", Example: "'$(cat ~/.gitea-token)'",
		Help: "Gitea/Forgejo API token"},
	{Name: "lazy.accept.viaForge", Kind: Bool, Default: "`false`", Example: "true",
		Help: "`lazy accept` on a blocked task submits it and merges through the forge"},
	{Name: "lazy.forge.mergeMethod", Kind: String, Default: "`squash`", Example: "squash",
		Help: "`squash`, `merge` or `rebase` for a forge accept"},
	{Name: "lazy.forge.syncInterval", Kind: Duration, Default: "`1m`", Example: "1m",
		Help: "how often the daemon asks each forge about its pull requests"},
	{Name: "lazy.forge.autoDeliver", Kind: Bool, Default: "`true`", Example: "true",
		Help: "deliver new failing checks and reviews to the agent as feedback turns"},
	{Name: "lazy.forge.autoFix", Kind: Bool, Default: "`false`", Example: "true",
		Help: "then unblock the agent to address them"},
	{Name: "lazy.web.actions", Kind: Bool, Default: "`false`", Example: "true",
		Help: "`true`: `lazy web` prints the URL whose session may also act, as `--actions` does"},
	{Name: "lazy.sandbox", Kind: Enum, Values: []string{"on", "off"}, Default: "`off`", Example: "on",
		Help: "`on` runs every turn (and chat) under bubblewrap; `lazy start --sandbox on\\|off` overrides it per session"},
	{Name: "lazy.sandbox.network", Kind: String, Default: "`on`", Example: "api.anthropic.com,*.github.com",
		Help: "`off`: loopback only; a comma-separated host list (`*.example.com` for subdomains): only those, through lazy's proxy"},
	{Name: "lazy.sandbox.hide", Kind: List, Default: "`~/.ssh`, `~/.gnupg`, `~/.aws`, `~/.azure`, `~/.config/gcloud`, `~/.config/gh`, `~/.config/glab-cli`, `~/.kube`, `~/.docker/config.json`, `~/.netrc`, `~/.git-credentials`, `~/.npmrc`, `~/.pypirc`, `~/.cargo/credentials.toml`, `~/.password-store`, `~/.local/share/keyrings` (always hidden)", Example: "~/.config/my-secrets",
		Help: "more secret paths (relative to `$HOME` or `~/`, or absolute) a sandboxed agent sees as empty, beside the ones always hidden; repeat the key"},
	{Name: "lazy.sandbox.expose", Kind: List, Default: "none", Example: "/opt/tools",
		Help: "more absolute paths a sandboxed agent may read; repeat the key"},
}

// All returns the table, a copy the caller may change.
func All() []Key {
	out := make([]Key, len(keys))
	for i, k := range keys {
		k.Values = append([]string(nil), k.Values...)
		out[i] = k
	}
	return out
}

// Lookup finds a key by name; case folds as in git (section and
// variable name).
func Lookup(name string) (Key, bool) {
	for _, k := range keys {
		if strings.EqualFold(k.Name, name) {
			return k, true
		}
	}
	return Key{}, false
}

// Multi reports whether the key takes several values, one per git
// config --add.
func (k Key) Multi() bool { return k.Kind == List || k.Kind == Price }

// Fix is the command that sets key to its example value.
func Fix(name string) string {
	k, ok := Lookup(name)
	if !ok || k.Example == "" {
		return "git config --unset " + name
	}
	add := ""
	if k.Multi() {
		add = "--add "
	}
	return "git config " + add + k.Name + " " + k.Example
}

// Invalid is the error of a bad value, in one sentence: the key, the
// value, what is wrong (why, such as "is not a duration") and the fix.
func Invalid(name, value, why string) error {
	return fmt.Errorf("git config %s = %q %s; fix it with %s (or git config --unset %s for the default)", name, value, why, Fix(name), name)
}

// Check validates one value of k by its kind, with Invalid's error.
// String and List values are free text; their users check them.
func (k Key) Check(value string) error {
	if why := k.Why(value); why != "" {
		return Invalid(k.Name, value, why)
	}
	return nil
}

// Why says what is wrong with value as a value of k, by its kind ("is
// not a duration above 0"), or "" when nothing is: the middle of
// Invalid's and Refused's sentences.
func (k Key) Why(value string) string {
	v := strings.TrimSpace(value)
	switch k.Kind {
	case Duration:
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return "is not a duration above 0"
		}
	case Bool:
		switch strings.ToLower(v) {
		case "true", "yes", "on", "1", "false", "no", "off", "0", "":
		default:
			return "is not a boolean (true or false)"
		}
	case Int:
		if _, err := strconv.Atoi(v); err != nil {
			return "is not a whole number"
		}
	case USD:
		if _, err := budget.ParseUSD(k.Name, v); err != nil {
			return "is not an amount in US dollars from 0 (no spend allowed) to 1000000000000"
		}
	case Price:
		if _, _, err := budget.ParsePrice(v); err != nil {
			return "is not a model and its dollars per million tokens in, cached and out"
		}
	case Enum:
		for _, c := range k.Values {
			if strings.EqualFold(v, c) {
				return ""
			}
		}
		return "is not one of " + strings.Join(k.Values, ", ")
	}
	return ""
}

// SetCommand is the lazy config command that sets key to its example
// value (with --add for a repeatable key).
func SetCommand(name string) string {
	k, ok := Lookup(name)
	if !ok || k.Example == "" {
		return "lazy config " + name + " VALUE"
	}
	add := ""
	if k.Multi() {
		add = "--add "
	}
	return "lazy config " + add + k.Name + " " + k.Example
}

// Refused is the error of a value lazy config will not set, in one
// sentence: the key, the value, what is wrong, that nothing changed,
// and a value it takes.
func Refused(name, value, why string) error {
	return fmt.Errorf("%s = %q %s, so lazy config changed nothing; for example: %s", name, value, why, SetCommand(name))
}

// Markdown is the README's table of the keys.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| key | default | meaning |\n|---|---|---|\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", k.Name, k.Default, k.Help)
	}
	return b.String()
}

// Plain is Markdown text as a terminal shows it: without backticks, and
// a table's escaped bar as a bar.
func Plain(md string) string {
	return strings.NewReplacer("`", "", `\|`, "|").Replace(md)
}
