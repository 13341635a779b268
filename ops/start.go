package ops

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
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/confine"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
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

// requireLauncher refuses, before anything is recorded, an operation that
// would launch a turn this Env cannot start: a turn recorded as working
// with no supervisor would only wait for the reconciler to interrupt it.
func (e *Env) requireLauncher(verb string) error {
	if e.Launch == nil {
		return fmt.Errorf("%s: %w", verb, ErrNoLauncher)
	}
	if e.TurnConfigErr != nil {
		return fmt.Errorf("%s: %w", verb, e.TurnConfigErr)
	}
	return nil
}

// launch starts task id's supervisor through the Env's Launcher. The
// public operations check requireLauncher first; this guard keeps a
// missing Launcher an error, never a nil-function panic.
func (e *Env) launch(id string) error {
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
func DefaultWorktreeRoot(s *gitstore.Store) (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if !filepath.IsAbs(base) { // the XDG spec: a relative path is ignored
		home, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(home) {
			return "", errors.New("cannot tell where to put task worktrees: neither XDG_DATA_HOME nor HOME is set; set one, or git config lazy.worktreeDir DIR")
		}
		base = filepath.Join(home, ".local", "share")
	}
	common := s.Repo().CommonDir
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

// worktreeRoot resolves the directory a new worktree goes in: dir
// (lazy.worktreeDir, relative to the repository) or the default.
func (e *Env) worktreeRoot(dir, repoDir string) (string, error) {
	if dir == "" {
		return DefaultWorktreeRoot(e.Store)
	}
	if !filepath.IsAbs(dir) {
		// A relative lazy.worktreeDir is relative to the repository, not
		// to wherever the command happens to run.
		dir = filepath.Join(repoDir, dir)
	}
	return dir, nil
}

// Start moves a backlog task to working: branch and worktree, the session
// and the human turn recorded first, then the supervisor launched.
func (e *Env) Start(ctx context.Context, name string, in StartInput) (*task.Snapshot, error) {
	if err := e.requireLauncher("start"); err != nil {
		return nil, err
	}
	if _, err := agent.For(in.Agent); err != nil {
		return nil, err
	}
	if err := agent.ValidModel(in.Model); err != nil {
		return nil, err
	}
	if in.Agent != "exec" {
		in.ExecCommand = nil
	} else {
		in.Model = "" // the exec agent runs its command as given
	}
	sn, unlock, err := e.lockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	id := sn.Task.ID
	// What is wrong with the task is said before what is missing on
	// this machine: installing claude would not make a finished task
	// startable.
	if sn.Task.Status != machine.Backlog {
		return nil, notStartable(sn.Task.Slug, sn.Task.Status)
	}
	if sn.Task.IsAttemptGroup() {
		return nil, fmt.Errorf("start %s: the task is being tried %d ways (its attempts run instead); lazy show %s compares them", sn.Task.Slug, len(sn.Task.Attempts), sn.Task.Slug)
	}
	if err := e.parentOpen(sn, "start"); err != nil {
		return nil, err
	}
	if err := e.DepsDone(sn); err != nil {
		return nil, err
	}
	over, left, err := e.overBudget(sn)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w; nothing was started", sn.Task.Slug, err)
	}
	if over != nil {
		return nil, fmt.Errorf("start %s: the %s budget %s (%s); %s; nothing was started", sn.Task.Slug, over.Scope, over.Spent(), over.String(), RaiseHint(sn.Task.Slug, *over))
	}
	if in.RepoDir == "" {
		in.RepoDir = e.repoDir()
	}
	if worktree.NoCommits(ctx, in.RepoDir) {
		return nil, fmt.Errorf("start %s: this repository has no commits yet, so there is nothing to branch from; make a first commit (git commit --allow-empty -m init), then start again", sn.Task.Slug)
	}
	if err := agentRunnable(in); err != nil {
		return nil, err
	}
	if in, err = e.startConfinement(sn, in); err != nil {
		return nil, confinementRefusal("start", sn.Task.Slug, err)
	}
	if err := sandboxReady(ctx, in.Sandbox); err != nil {
		return nil, fmt.Errorf("start %s: %w; nothing was started", sn.Task.Slug, err)
	}
	if err := machine.Validate(sn.Task.Status, machine.Working, e.Actor); err != nil {
		return nil, fmt.Errorf("start %s: %w", sn.Task.Slug, err)
	}
	if sn.Task.Status != machine.Backlog {
		return nil, fmt.Errorf("start %s: the task is %s; lazy start is for backlog tasks", sn.Task.Slug, sn.Task.Status)
	}
	base, err := e.BaseBranch(ctx, sn, in.RepoDir)
	if err != nil {
		return nil, err
	}
	root, err := e.worktreeRoot(in.WorktreeDir, in.RepoDir)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", sn.Task.Slug, err)
	}
	dir := filepath.Join(root, sn.Task.Slug)
	branch := worktree.Branch(sn.Task.Slug)
	startSHA, err := worktree.Create(ctx, in.RepoDir, dir, branch, base)
	if err != nil {
		return nil, err
	}
	goal, err := sn.Goal()
	if err != nil {
		return nil, err
	}
	taskPrompt := sn.Task.Title
	if goal != "" {
		taskPrompt += "\n\n" + goal
	}
	var prompt string
	sessionID, err := task.NewID()
	if err != nil {
		return nil, err
	}
	// The local record of what this machine runs comes first: it is what
	// every later turn, stop and cleanup of this session trusts.
	if err := e.Sessions().Save(owned.Session{
		TaskID: id, SessionID: sessionID, Agent: in.Agent, Exec: in.ExecCommand, PermissionMode: in.PermissionMode,
		Model: in.Model, Worktree: dir, Branch: branch, StartedAt: time.Now().UTC(), Sandbox: in.Sandbox,
	}); err != nil {
		return nil, err
	}
	var turn task.Turn
	// Save first: the session, the human turn and the transition are
	// committed before anything can crash in the launch.
	sn, _, err = e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Backlog {
			return nil, fmt.Errorf("start %s: the task became %s meanwhile", s.Task.Slug, s.Task.Status)
		}
		// A reopened task may hold messages no agent received (a reject's
		// reason, say): the first turn of the new session delivers them.
		if prompt, err = e.deliveryPrompt(s, taskPrompt, "start"); err != nil {
			return nil, err
		}
		now := time.Now().UTC().Truncate(time.Second)
		s.Task.Sessions++
		s.Task.Host = e.Store.Host()
		s.Session = &task.Session{
			ID: sessionID, Number: s.Task.Sessions, Host: e.Store.Host(), Agent: in.Agent,
			ExecCommand: in.ExecCommand, PermissionMode: in.PermissionMode, Model: in.Model, Branch: branch, Worktree: dir, GitStartSHA: startSHA, StartedAt: now,
		}
		turn = s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "start", Content: taskPrompt, At: now, Session: sessionID, FeedbackDelivery: task.FeedbackPending})
		s.Session.Turn, s.Session.TurnKind = turn.Seq, "start"
		s.Task.Status = machine.Working
		return &task.Op{Name: "start", Actor: e.Actor}, nil
	})
	if err != nil {
		return nil, err
	}
	pd := proto.ForTask(e.Store.Repo().LazyDir(), id)
	pd.Remove(proto.ResponseFile)
	pd.Remove(proto.ProgressFile) // a new turn begins with no progress line
	cmd := proto.Command{
		Turn: proto.Turn{TaskID: id, Session: sessionID, Seq: turn.Seq},
		Kind: "start", Agent: in.Agent, Exec: in.ExecCommand, PermissionMode: in.PermissionMode, Model: in.Model, Prompt: prompt,
		Worktree: dir, BaseSHA: startSHA, Timing: e.Timing, Written: time.Now().UTC(),
		AllowedPaths: sn.Task.AllowedPaths, Sandbox: in.Sandbox, Policy: e.Policy, Prepare: e.prepare(in.RepoDir, false),
		MaxBudgetUSD: left,
	}
	if err := pd.Write(proto.CommandFile, cmd); err != nil {
		return sn, fmt.Errorf("the task is working but its command could not be written (the reconciler will mark it interrupted): %w", err)
	}
	if err := e.launch(id); err != nil {
		return sn, fmt.Errorf("the task is working but its supervisor did not start (the reconciler will mark it interrupted): %w", err)
	}
	return sn, nil
}

// agentRunnable checks that in's agent can run on this machine: its
// argv builds, its binary is on PATH and it has credentials.
func agentRunnable(in StartInput) error {
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

// prepare is what the first turn in a new worktree does before the agent
// runs (lazy.copyFiles, lazy.setup), or nil when nothing is configured
// or the worktree was prepared already.
func (e *Env) prepare(repoDir string, prepared bool) *proto.Prepare {
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

// notStartable says why a task that is not in backlog cannot be
// started, and what to run instead.
func notStartable(slug string, st machine.Status) error {
	next := ""
	switch st {
	case machine.Working:
		next = "; it is already running (lazy logs -f " + slug + ")"
	case machine.Blocked, machine.Conflict:
		next = "; give it feedback with lazy unblock " + slug + " -m TEXT"
	case machine.Interrupted:
		next = "; lazy resume " + slug + " restarts it"
	case machine.Complete, machine.Abandoned:
		next = "; lazy reopen " + slug + " first"
	}
	return fmt.Errorf("start %s: the task is %s; lazy start is for backlog tasks%s", slug, st, next)
}
