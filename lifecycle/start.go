package lifecycle

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// Start moves a backlog task to working: branch and worktree, the session
// and the human turn recorded first, then the supervisor launched.
func (l *Service) Start(ctx context.Context, name string, in session.StartInput) (*task.Snapshot, error) {
	e := l.Env
	if err := e.RequireLauncher("start"); err != nil {
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
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	id := sn.Task.ID
	// What is wrong with the task is said before what is missing on
	// this machine: installing claude would not make a finished task
	// startable.
	if sn.Task.Status != machine.Backlog {
		return nil, NotStartable(sn.Task.Slug, sn.Task.Status)
	}
	if sn.Task.IsAttemptGroup() {
		return nil, fmt.Errorf("start %s: the task is being tried %d ways (its attempts run instead); lazy show %s compares them", sn.Task.Slug, len(sn.Task.Attempts), sn.Task.Slug)
	}
	if err := ParentOpen(e.Store, sn, "start"); err != nil {
		return nil, err
	}
	if err := DepsDone(e.Store, sn); err != nil {
		return nil, err
	}
	over, left, err := e.Budgets().Over(sn)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w; nothing was started", sn.Task.Slug, err)
	}
	if over != nil {
		return nil, fmt.Errorf("start %s: the %s budget %s (%s); %s; nothing was started", sn.Task.Slug, over.Scope, over.Spent(), over.String(), session.RaiseHint(sn.Task.Slug, *over))
	}
	if in.RepoDir == "" {
		in.RepoDir = e.Dir()
	}
	if l.worktrees().NoCommits(ctx, in.RepoDir) {
		return nil, fmt.Errorf("start %s: this repository has no commits yet, so there is nothing to branch from; make a first commit (git commit --allow-empty -m init), then start again", sn.Task.Slug)
	}
	if err := session.AgentRunnable(in); err != nil {
		return nil, err
	}
	if in, err = e.StartConfinement(sn, in); err != nil {
		return nil, session.ConfinementRefusal("start", sn.Task.Slug, err)
	}
	if err := session.SandboxReady(ctx, in.Sandbox); err != nil {
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
	root, err := e.WorktreeRoot(in.WorktreeDir, in.RepoDir)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", sn.Task.Slug, err)
	}
	dir := filepath.Join(root, sn.Task.Slug)
	branch := worktree.Branch(sn.Task.Slug)
	startSHA, err := l.worktrees().Create(ctx, in.RepoDir, dir, branch, base)
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
		if prompt, err = e.Turns().DeliveryPrompt(s, taskPrompt, "start"); err != nil {
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
	pd := proto.ForTask(e.Repo.LazyDir(), id)
	pd.Remove(proto.ResponseFile)
	pd.Remove(proto.ProgressFile) // a new turn begins with no progress line
	cmd := proto.Command{
		Turn: proto.Turn{TaskID: id, Session: sessionID, Seq: turn.Seq},
		Kind: "start", Agent: in.Agent, Exec: in.ExecCommand, PermissionMode: in.PermissionMode, Model: in.Model, Prompt: prompt,
		Worktree: dir, BaseSHA: startSHA, Timing: e.Timing, Written: time.Now().UTC(),
		AllowedPaths: sn.Task.AllowedPaths, Sandbox: in.Sandbox, Policy: e.Policy, Prepare: e.Turns().Prepare(in.RepoDir, false),
		MaxBudgetUSD: left,
	}
	if err := pd.Write(proto.CommandFile, cmd); err != nil {
		return sn, fmt.Errorf("the task is working but its command could not be written (the reconciler will mark it interrupted): %w", err)
	}
	if err := e.Turns().Spawn(id); err != nil {
		return sn, fmt.Errorf("the task is working but its supervisor did not start (the reconciler will mark it interrupted): %w", err)
	}
	return sn, nil
}

// NotStartable says why a task that is not in backlog cannot be
// started, and what to run instead.
func NotStartable(slug string, st machine.Status) error {
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
