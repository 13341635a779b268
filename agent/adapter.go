package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Turn is what an adapter needs to build one turn's argv.
type Turn struct {
	Prompt   string
	ResumeID string   // the agent's own session id, "" for a new one
	ReadOnly bool     // an ask: no edits, no shell
	Grants   Grants   // what the posture table gives the turn
	Exec     []string // the exec agent's command
	// MCP is lazy's MCP server for the agent (lazy mcp-proxy), if any.
	MCP *MCPServer
	// MaxBudgetUSD, when not 0, is what the turn may still spend
	// (Claude's --max-budget-usd); other CLIs have no such flag.
	MaxBudgetUSD float64
	// Model, when set, is the model the session asked for (lazy start
	// --model): Claude's and Codex's --model. The exec agent has none.
	Model string
}

// MaxModel bounds a model name.
const MaxModel = 100

// ValidModel checks a model name given to lazy start --model before it
// goes into an agent's argv: a letter or digit first (never a dash, which
// a CLI would read as a flag), then letters, digits and . _ - : / @ [ ].
func ValidModel(m string) error {
	if m == "" {
		return nil
	}
	ok := len(m) <= MaxModel && isModelStart(m[0])
	for i := 1; ok && i < len(m); i++ {
		c := m[i]
		ok = isModelStart(c) || strings.IndexByte("._-:/@[]", c) >= 0
	}
	if !ok {
		return fmt.Errorf("the model %q is not a model name: use letters, digits and . _ - : / @ [ ], starting with a letter or digit, at most %d characters (for example sonnet, opus or gpt-5-codex)", m, MaxModel)
	}
	return nil
}

func isModelStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// MCPServer is a stdio MCP server command; EnvVars name the variables
// (the session token) it must receive from the agent's environment.
type MCPServer struct {
	Command string
	Args    []string
	EnvVars []string
}

// claudeMCPConfig is the inline --mcp-config JSON. Variables are passed
// as ${VAR} references, which Claude Code expands from its own
// environment, so the token never appears in argv.
func claudeMCPConfig(m *MCPServer) string {
	env := map[string]string{}
	for _, v := range m.EnvVars {
		env[v] = "${" + v + "}"
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"lazy": map[string]any{
		"type": "stdio", "command": m.Command, "args": m.Args, "env": env}}})
	return string(b)
}

// ClaudeMCPAllow is the --allowedTools entry that lets every tool of the
// "lazy" MCP server through (Claude names them mcp__lazy__<tool>).
const ClaudeMCPAllow = "mcp__lazy"

// Stream parses an agent's structured output as it arrives.
type Stream interface {
	io.Writer
	Close()
	// Outcome says whether the run failed, and how.
	Outcome(exitCode int) (Failure, bool)
	Session() string  // the id to resume next time
	Final() string    // the agent's final answer
	Progress() string // the latest progress line
	// Activity says how much real work the stream showed so far, and
	// whether the agent is only retrying its API right now.
	Activity() Activity
	// Usage is what the CLI reported the run cost (zero if it did not).
	Usage() Usage
}

// Usage is what one agent run cost, as its CLI reported it: Claude's
// result (total_cost_usd, usage), Codex's turn.completed usage (Codex
// reports no price).
type Usage struct {
	CostUSD           float64
	InputTokens       int64 // not served from a cache
	CachedInputTokens int64
	OutputTokens      int64
	// Model is the model that did the run, as the CLI named it ("" if
	// it did not).
	Model string
}

// Activity is what the stream says the agent is doing. Work counts events
// that show the agent doing something (assistant text, tool use, items);
// retry notices and keep-alives never count, so a CLI that only retries
// its API makes no progress for the watchdog.
type Activity struct {
	Work int
	// Retry is set while the agent retries its API by itself and has done
	// no work since the first notice; RetryAttempt is the CLI's own count.
	Retry        *Failure
	RetryAttempt int
}

// snapshot returns a copy of a that shares nothing with it, so a stream
// can hand its activity to another goroutine while it keeps writing.
func (a Activity) snapshot() Activity {
	if a.Retry != nil {
		f := *a.Retry
		a.Retry = &f
	}
	return a
}

// Adapter is one agent CLI: how to run a turn, how to read its output,
// how to classify its failures.
type Adapter interface {
	Name() string
	// Binary is the executable that must be on PATH.
	Binary(t Turn) string
	Argv(t Turn) ([]string, error)
	// NewStream returns a parser for its output, or nil when the output
	// is plain text (the exec agent).
	NewStream() Stream
	Classify(s Signals) Failure
}

// KeepsConversation reports whether the agent called name keeps a
// conversation of its own that a turn resumes by id (Claude's session,
// Codex's thread); the exec agent keeps none.
func KeepsConversation(name string) bool { return name == "claude" || name == "codex" }

// Names lists the adapters.
func Names() []string { return []string{"claude", "codex", "exec"} }

// For returns the adapter called name.
func For(name string) (Adapter, error) {
	switch name {
	case "claude":
		return claude{}, nil
	case "codex":
		return codex{}, nil
	case "exec":
		return execAgent{}, nil
	}
	return nil, fmt.Errorf("agent %q is not supported (available: %s)", name, strings.Join(Names(), ", "))
}

type claude struct{}

func (claude) Name() string               { return "claude" }
func (claude) Binary(Turn) string         { return "claude" }
func (claude) NewStream() Stream          { return &ClaudeStream{} }
func (claude) Classify(s Signals) Failure { return ClassifyClaude(s) }
func (claude) Argv(t Turn) ([]string, error) {
	return ClaudeArgv(t), nil
}

type codex struct{}

func (codex) Name() string               { return "codex" }
func (codex) Binary(Turn) string         { return "codex" }
func (codex) NewStream() Stream          { return &CodexStream{} }
func (codex) Classify(s Signals) Failure { return ClassifyCodex(s) }
func (codex) Argv(t Turn) ([]string, error) {
	argv := CodexArgv(t)
	if t.MCP != nil {
		// Config overrides go before a resume subcommand.
		at := 3 // codex exec --json
		argv = append(append(append([]string(nil), argv[:at]...), MCPFlags("codex", t.MCP)...), argv[at:]...)
	}
	return argv, nil
}

// MCPFlags are the flags that give an agent CLI lazy's MCP server and
// allow its tools (and only its tools); nil for an agent with no such
// flags. They go before any subcommand or prompt. The interactive CLIs
// (lazy pair) take the same flags as a turn.
func MCPFlags(agentName string, m *MCPServer) []string {
	switch agentName {
	case "claude":
		// In -p mode Claude denies MCP tools that were not allowed, in
		// every permission mode: allowing the server "mcp__lazy" lets
		// lazy's tools through, and only lazy's (the user's own MCP
		// servers keep whatever permissions they had).
		return []string{"--mcp-config=" + claudeMCPConfig(m), "--allowedTools=" + ClaudeMCPAllow}
	case "codex":
		cmd, _ := json.Marshal(m.Command)
		args, _ := json.Marshal(m.Args)
		vars, _ := json.Marshal(m.EnvVars)
		// env_vars passes the token through from the agent's environment
		// (never argv). Codex exec runs with approval policy "never",
		// under which an MCP tool call that needs approval fails ("MCP
		// tool call requires approval, but approval policy is never"):
		// lazy's own server is approved, and only it.
		//
		// Codex builds a turn's tools after giving an optional server
		// about a second to start; a slower one is left out of the
		// turn, saying nothing the turn shows (codex 0.171: "unsupported
		// call" when the model calls it anyway). On a loaded machine
		// lazy mcp-proxy takes longer than that (CI: a race-built binary
		// on two busy cores), and the agent ran without lazy's tools. A
		// required server is waited for, up to startup_timeout_sec, and
		// one that cannot start fails the turn at once ("required MCP
		// servers failed to initialize"), which ClassifyCodex reads.
		return []string{"-c", "mcp_servers.lazy.command=" + string(cmd), "-c", "mcp_servers.lazy.args=" + string(args), "-c", "mcp_servers.lazy.env_vars=" + string(vars),
			"-c", `mcp_servers.lazy.default_tools_approval_mode="approve"`, "-c", "mcp_servers.lazy.startup_timeout_sec=60", "-c", "mcp_servers.lazy.required=true"}
	}
	return nil
}

// execAgent runs any command with the prompt as its last argument.
type execAgent struct{}

func (execAgent) Name() string               { return "exec" }
func (execAgent) NewStream() Stream          { return nil }
func (execAgent) Classify(s Signals) Failure { return ClassifyExec(s) }
func (execAgent) Binary(t Turn) string {
	if len(t.Exec) == 0 {
		return ""
	}
	return t.Exec[0]
}
func (execAgent) Argv(t Turn) ([]string, error) {
	if len(t.Exec) == 0 || strings.TrimSpace(t.Exec[0]) == "" {
		return nil, errors.New("the exec agent needs a command: lazy start TASK --command \"./my-agent.sh\" (or git config lazy.exec.command)")
	}
	argv := append(append([]string(nil), t.Exec...), t.Prompt)
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("argument %d of the agent command contains a NUL byte; lazy escapes NUL at intake, so this command was not written by lazy", i)
		}
	}
	return argv, nil
}
