package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/confine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// Launcher starts the detached supervisor of a task's turn.
type Launcher func(taskID string) error

// ErrNoLauncher is the refusal of an operation that launches a turn from
// an Env built without a Launcher: a wiring mistake in the process, never
// something the task did.
var ErrNoLauncher = errors.New("this lazy process cannot start agent turns (it was built without a supervisor launcher); run the command through the lazy CLI or lazy mcp")

// RequireLauncher refuses, before anything is recorded, an operation that
// would launch a turn this Env cannot start: a turn recorded as working
// with no supervisor would only wait for the reconciler to interrupt it.
func (e *Env) RequireLauncher(verb string) error {
	if e.Launch == nil {
		return fmt.Errorf("%s: %w", verb, ErrNoLauncher)
	}
	if e.TurnConfigErr != nil {
		return fmt.Errorf("%s: %w", verb, e.TurnConfigErr)
	}
	return nil
}

// Spawn starts task id's supervisor through the Env's Launcher. The
// public operations check requireLauncher first; this guard keeps a
// missing Launcher an error, never a nil-function panic.
func (t Turns) Spawn(id string) error {
	e := t.e
	if e.Launch == nil {
		return ErrNoLauncher
	}
	return e.Launch(id)
}

// StartInput describes how to start a task.
type StartInput struct {
	Agent string // claude or exec (codex arrives with its adapter)
	// PermissionMode is Claude Code's --permission-mode for work turns.
	PermissionMode string
	ExecCommand    []string // the exec agent's command
	// Model is the model the session asks its agent for (start --model;
	// "" for the CLI's default). The exec agent ignores it.
	Model       string
	WorktreeDir string // parent directory for worktrees ("" = default)
	// Sandbox, when set, confines every turn of the session (lazy.sandbox
	// or start --sandbox, which sets SandboxExplicit). SandboxIfAsked is
	// the sandbox local config gives a task created with --sandbox, or
	// work whose caller asks for one.
	Sandbox, SandboxIfAsked *proto.Sandbox
	SandboxExplicit         bool
	// Request is what a caller that is not a human (an agent, a builder
	// over MCP) asks of the session's confinement: it may only tighten
	// what the session gets anyway (see startConfinement).
	Request confine.Request
	RepoDir string // the main checkout, where git worktree runs
}

// DefaultWorktreeRoot is where a repository's task worktrees live unless
// lazy.worktreeDir says otherwise: $XDG_DATA_HOME/lazy/worktrees/<name>-<id>
// (~/.local/share/... by default), <name> the repository's directory and
// <id> 8 hex digits of a hash of its git directory's path, so two clones
// called app never share one. Outside the checkout (its git status, build
// tools and file watchers never see them) and outside .git, which Claude
// Code treats as sensitive and Codex's sandbox keeps read-only: an agent
// CLI sees an ordinary project directory. Worktrees made before, under
// .git/lazy/worktrees, stay where they are: every turn reads its
// worktree from this machine's session record.
func DefaultWorktreeRoot(repo *gitrepo.Location) (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if !filepath.IsAbs(base) { // the XDG spec: a relative path is ignored
		home, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(home) {
			return "", errors.New("cannot tell where to put task worktrees: neither XDG_DATA_HOME nor HOME is set; set one, or git config lazy.worktreeDir DIR")
		}
		base = filepath.Join(home, ".local", "share")
	}
	common := repo.CommonDir
	name := filepath.Base(common)
	if name == ".git" {
		name = filepath.Base(filepath.Dir(common))
	}
	sum := sha256.Sum256([]byte(common))
	return filepath.Join(base, "lazy", "worktrees", dirName(strings.TrimSuffix(name, ".git"))+"-"+hex.EncodeToString(sum[:4])), nil
}

// dirName keeps a repository's name readable and safe as one path
// element: letters, digits, '.', '_' and '-', at most 40 of them.
func dirName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case b.Len() >= 40:
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	if s := strings.Trim(b.String(), ".-"); s != "" {
		return s
	}
	return "repo"
}

// WorktreeRoot resolves the directory a new worktree goes in: dir
// (lazy.worktreeDir, relative to the repository) or the default.
func (e *Env) WorktreeRoot(dir, repoDir string) (string, error) {
	if dir == "" {
		return DefaultWorktreeRoot(e.Repo)
	}
	if !filepath.IsAbs(dir) {
		// A relative lazy.worktreeDir is relative to the repository, not
		// to wherever the command happens to run.
		dir = filepath.Join(repoDir, dir)
	}
	return dir, nil
}

// AgentRunnable checks that in's agent can run on this machine: its
// argv builds, its binary is on PATH and it has credentials.
func AgentRunnable(in StartInput) error {
	adapter, err := agent.For(in.Agent)
	if err != nil {
		return err
	}
	preflight := agent.Turn{Exec: in.ExecCommand}
	if _, err := adapter.Argv(preflight); err != nil {
		return err
	}
	bin := adapter.Binary(preflight)
	if _, err := exec.LookPath(bin); err != nil {
		return fmt.Errorf("cannot run the %s agent: %q is not an executable on PATH (%w); nothing was started", in.Agent, bin, err)
	}
	if err := agent.CheckCredentials(in.Agent, agent.HostEnvironment()); err != nil {
		return fmt.Errorf("%w; nothing was started", err)
	}
	return nil
}

// Prepare is what the first turn in a new worktree does before the agent
// runs (lazy.copyFiles, lazy.setup), or nil when nothing is configured
// or the worktree was prepared already.
func (t Turns) Prepare(repoDir string, prepared bool) *proto.Prepare {
	e := t.e
	if prepared || (e.Policy.Setup == "" && len(e.Policy.CopyFiles) == 0) {
		return nil
	}
	return &proto.Prepare{From: repoDir, CopyFiles: e.Policy.CopyFiles, Setup: e.Policy.Setup}
}

// BaseBranch is the branch a task starts from, merges upstream from and
// is accepted into: its parent's branch, its target branch, or the
// repository's default branch.
func (e *Env) BaseBranch(ctx context.Context, sn *task.Snapshot, repoDir string) (string, error) {
	if sn.Task.Parent != "" {
		p, err := e.Store.Load(sn.Task.Parent)
		if err != nil {
			return "", fmt.Errorf("parent: %w", err)
		}
		if p.Session == nil {
			return "", fmt.Errorf("parent %s has not started, so it has no branch to start from; start it first", p.Task.Slug)
		}
		// The parent's branch as this machine made it; for a parent that
		// runs elsewhere, the branch its slug derives, never a name read
		// from its record.
		if local, err := e.Owned(p); err == nil {
			return local.Branch, nil
		}
		return worktree.Branch(p.Task.Slug), nil
	}
	if sn.Task.TargetBranch != "" {
		return sn.Task.TargetBranch, nil
	}
	return worktree.DefaultBranch(ctx, repoDir)
}
