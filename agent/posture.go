package agent

import (
	"errors"
	"fmt"
	"strings"
)

// The permission posture: what lazy lets an agent CLI do on its own in
// one turn, as one table (posture x agent x turn kind -> flags). It is the
// only place that decides it; Argv, lazy show and the README's table are
// all read from Permissions. Verified against the real CLIs in
// docs/agent-clis.md.
//
//   - A work turn must be able to edit files in its worktree, run the
//     project's commands and commit. Without lazy's sandbox the CLI's own
//     permission system bounds it: Claude Code gets acceptEdits and an
//     allow-list of shell commands (DefaultAllow plus lazy.agent.allow);
//     Codex runs every command inside its workspace-write sandbox, with
//     the git directories a commit writes added as writable roots.
//   - With lazy.sandbox on the turn runs inside bubblewrap, which is what
//     bounds it, so the CLI gets its full permissions there.
//   - An ask is read-only in every posture.

// Posture names how a turn is confined.
type Posture string

// The postures.
const (
	// AllowList: no lazy sandbox; the CLI's own permission system and an
	// allow-list of shell commands bound the agent.
	AllowList Posture = "allow-list"
	// Sandboxed: inside lazy's bubblewrap (lazy.sandbox on); the CLI runs
	// with its full permissions there.
	Sandboxed Posture = "sandboxed"
)

// DefaultAllow is the shell commands a Claude work turn may run without
// lazy's sandbox: what committing its own work takes (Claude allows
// read-only commands such as ls or cat by itself). lazy.agent.allow adds
// the project's own commands (go test ./..., npm test).
var DefaultAllow = []string{
	"git add", "git commit", "git status", "git diff", "git log", "git show",
	"git rm", "git mv", "git restore", "git merge --continue", "git merge --abort",
}

// ClaudeSandboxedEnv tells Claude Code it runs inside bubblewrap: without
// it Claude refuses bypassPermissions to root ("cannot be used with
// root/sudo privileges"), which a container's CI user often is.
const ClaudeSandboxedEnv = "CLAUDE_CODE_BUBBLEWRAP=1"

// Grants is what one turn's permissions are built from. Every field is
// local: this machine's git config and session record, never a task
// record.
type Grants struct {
	Sandboxed bool
	// PermissionMode is lazy.claude.permissionMode: Claude's
	// --permission-mode for work turns, "" for the posture's own.
	PermissionMode string
	// Allow is lazy.agent.allow: more command prefixes a Claude work turn
	// may run without the sandbox.
	Allow []string
	// WritableRoots are the git directories a commit in the worktree
	// writes (objects, refs/heads, logs, the worktree's own git dir),
	// which Codex's workspace-write sandbox keeps read-only otherwise.
	WritableRoots []string
}

// Permissions are the flags (before the prompt) and the environment one
// turn of an agent CLI gets. AllowedTools, for Claude, joins the MCP
// server's entry in one --allowedTools flag.
type Permissions struct {
	Posture      Posture  `json:"posture"`
	Flags        []string `json:"flags"`
	AllowedTools []string `json:"allowed_tools,omitempty"`
	Env          []string `json:"env,omitempty"`
}

// TaskPermissions is what a task's agent may do on this machine: the
// flags and environment lazy gives it for a work turn and for an ask
// (agent.TurnPermissions), and what becomes of changes it leaves
// uncommitted.
type TaskPermissions struct {
	Agent       string      `json:"agent"`
	Work        Permissions `json:"work"`
	Ask         Permissions `json:"ask"`
	Uncommitted string      `json:"uncommitted"`
	// Network is what a sandboxed session's network reaches: on, off, or
	// "only" and its allowlist ("" without the sandbox).
	Network string `json:"network,omitempty"`
	// Note says where the answer comes from when the task has no session
	// of this machine's yet.
	Note string `json:"note,omitempty"`
}

// PostureOf names the posture of g.
func PostureOf(g Grants) Posture {
	if g.Sandboxed {
		return Sandboxed
	}
	return AllowList
}

// TurnPermissions is the table: the flags and environment an agent CLI
// gets for a work turn or (readOnly) an ask, in g's posture. The exec
// agent has no permission flags: LAZY_READ_ONLY=1 marks an ask.
func TurnPermissions(agentName string, readOnly bool, g Grants) Permissions {
	p := Permissions{Posture: PostureOf(g), Flags: []string{}}
	switch agentName {
	case "claude":
		switch {
		case readOnly:
			// Not plan mode: it refuses every MCP tool that is not
			// read-only, so an ask could not use lazy's tools. dontAsk
			// denies whatever was not allowed, and the edit and shell
			// tools are denied outright.
			p.Flags = []string{"--permission-mode", "dontAsk", "--disallowedTools=" + ClaudeReadOnlyDenied}
		case g.Sandboxed && (g.PermissionMode == "" || g.PermissionMode == "bypassPermissions"):
			p.Flags = []string{"--permission-mode", "bypassPermissions"}
			p.Env = []string{ClaudeSandboxedEnv}
		default:
			// A mode the user chose (lazy.claude.permissionMode) keeps the
			// allow-list, in the sandbox too: acceptEdits alone lets the
			// agent edit but run no command, not even git commit.
			mode := g.PermissionMode
			if mode == "" {
				mode = "acceptEdits"
			}
			p.Flags = []string{"--permission-mode", mode}
			for _, c := range append(append([]string(nil), DefaultAllow...), g.Allow...) {
				p.AllowedTools = append(p.AllowedTools, "Bash("+c+":*)")
			}
		}
	case "exec":
		if readOnly {
			p.Env = []string{"LAZY_READ_ONLY=1"}
		}
	case "codex":
		switch {
		case readOnly:
			p.Flags = []string{"-s", "read-only"}
		case g.Sandboxed:
			// Codex's own sandbox would nest bubblewrap in lazy's, which
			// a kernel without nested user namespaces refuses, and would
			// need the git directories again: lazy's sandbox bounds it.
			p.Flags = []string{"--dangerously-bypass-approvals-and-sandbox"}
		default:
			// workspace-write keeps .git read-only, and a linked
			// worktree's commit writes into the main repository's git
			// directory: those parts are added as writable roots.
			p.Flags = []string{"-s", "workspace-write"}
			for _, d := range g.WritableRoots {
				p.Flags = append(p.Flags, "--add-dir", d)
			}
		}
	}
	return p
}

// CheckAllow validates lazy.agent.allow entries: command prefixes such as
// "go test" or "npm run lint", which become Claude Bash(<prefix>:*) rules.
func CheckAllow(entries []string) error {
	for _, e := range entries {
		switch {
		case strings.TrimSpace(e) == "":
			return errors.New("git config lazy.agent.allow has an empty entry; give a command prefix such as \"go test\" or remove it")
		case strings.ContainsAny(e, "(),\n\r\x00") || strings.Contains(e, ":*"):
			return fmt.Errorf("git config lazy.agent.allow = %q is not a plain command prefix; give the command as you would type it (for example \"go test ./...\" or \"npm test\"), without parentheses, commas or :*", e)
		}
	}
	return nil
}

// PostureRow is one row of the posture table.
type PostureRow struct {
	Posture Posture `json:"posture"`
	Agent   string  `json:"agent"`
	Kind    string  `json:"kind"` // work or ask
	Flags   string  `json:"flags"`
}

// PostureTable is the whole table, for the README and lazy show: every
// posture, agent and turn kind, with placeholders for the local parts.
func PostureTable() []PostureRow {
	g := Grants{Allow: []string{"<lazy.agent.allow>"}, WritableRoots: []string{"<git dirs>"}}
	var rows []PostureRow
	for _, sandboxed := range []bool{false, true} {
		g.Sandboxed = sandboxed
		for _, name := range []string{"claude", "codex", "exec"} {
			for _, ro := range []bool{false, true} {
				kind := "work"
				if ro {
					kind = "ask"
				}
				rows = append(rows, PostureRow{Posture: PostureOf(g), Agent: name, Kind: kind, Flags: TurnPermissions(name, ro, g).String()})
			}
		}
	}
	return rows
}

// String renders the flags as one line.
func (p Permissions) String() string {
	parts := append([]string(nil), p.Flags...)
	if len(p.AllowedTools) > 0 {
		parts = append(parts, "--allowedTools="+strings.Join(p.AllowedTools, ","))
	}
	parts = append(parts, p.Env...)
	if len(parts) == 0 {
		return "(no flags)"
	}
	return strings.Join(parts, " ")
}

// Claude Code's permission modes, from the tightest to the loosest work
// turn they give (ModeLooseness orders them).
const (
	ModePlan        = "plan"              // reads and plans; edits and commands refused
	ModeDontAsk     = "dontAsk"           // only what is allowed; everything else refused
	ModeDefault     = "default"           // asks, which a turn without a human refuses
	ModeAcceptEdits = "acceptEdits"       // edits in its directory, allowed commands
	ModeBypass      = "bypassPermissions" // everything, unchecked
)

// ModeLooseness orders permission modes for a work turn: the higher, the
// more the agent may do without asking. "" is the posture's own mode
// (acceptEdits without the sandbox, bypassPermissions in it). A mode lazy
// does not know ranks as loose as bypassPermissions: what it allows is
// unknown, so it is never taken for a tighter one.
func ModeLooseness(mode string, sandboxed bool) int {
	if mode == "" {
		mode = ModeAcceptEdits
		if sandboxed {
			mode = ModeBypass
		}
	}
	switch mode {
	case ModePlan:
		return 0
	case ModeDontAsk:
		return 1
	case ModeDefault:
		return 2
	case ModeAcceptEdits:
		return 3
	}
	return 4
}

// KnownMode reports whether mode is one of Claude Code's permission modes
// lazy knows how to order.
func KnownMode(mode string) bool {
	switch mode {
	case ModePlan, ModeDontAsk, ModeDefault, ModeAcceptEdits, ModeBypass:
		return true
	}
	return false
}

// RunsAnyCommand reports whether agentName's work turns run any command as
// the user with mode and no sandbox: the exec agent (lazy passes it no
// permission flags), and Claude Code in bypassPermissions (or a mode lazy
// does not know). Codex runs in its own workspace-write sandbox, and
// Claude in the other modes within its allow-list.
func RunsAnyCommand(agentName, mode string, sandboxed bool) bool {
	if sandboxed {
		return false
	}
	switch agentName {
	case "codex":
		return false
	case "claude":
		return ModeLooseness(mode, false) >= ModeLooseness(ModeBypass, false)
	}
	return true // exec, or an agent lazy does not know
}
