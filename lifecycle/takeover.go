package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// TakeOver makes this machine the owner of a task whose current session
// it did not start: one that ran on another host, or whose local record
// was lost. It is the only way a session from elsewhere becomes one this
// machine runs, stops or cleans up, and it is explicit: a new session is
// recorded (its owner is this host) with the agent, command and worktree
// decided here, in a worktree derived from the task's slug. No turn is
// started; a task that read working elsewhere becomes interrupted, so
// lazy resume or unblock (or auto-resume) runs its next turn here.
func (l *Service) TakeOver(ctx context.Context, name string, in session.StartInput) (*task.Snapshot, error) {
	e := l.Env
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	slug := sn.Task.Slug
	if sn.Session == nil {
		return nil, fmt.Errorf("take over %s: the task has no session to take over; use lazy start without --take-over", slug)
	}
	if e.Owns(sn) {
		return nil, fmt.Errorf("take over %s: its session was started on this machine already; nothing to take over", slug)
	}
	switch sn.Task.Status {
	case machine.Blocked, machine.Conflict, machine.Interrupted, machine.Working:
	default:
		return nil, fmt.Errorf("take over %s: the task is %s; only a blocked, conflict, interrupted or working task can be taken over", slug, sn.Task.Status)
	}
	if in.RepoDir == "" {
		in.RepoDir = e.Dir()
	}
	// Confined as a start here would be: a task created with --sandbox
	// (a pooled one, say) runs sandboxed on whichever machine takes it.
	if in, err = e.StartConfinement(sn, in); err != nil {
		return nil, session.ConfinementRefusal("take over", slug, err)
	}
	root, err := e.WorktreeRoot(in.WorktreeDir, in.RepoDir)
	if err != nil {
		return nil, fmt.Errorf("take over %s: %w", slug, err)
	}
	// Derived, never read from the record: lazy/<slug> under this
	// machine's worktree directory.
	dir := filepath.Join(root, slug)
	branch := worktree.Branch(slug)
	if err := task.ValidBranchName(branch); err != nil {
		return nil, fmt.Errorf("take over %s: %w", slug, err)
	}
	startSHA, how, err := l.takeOverWorktree(ctx, sn, in.RepoDir, dir, branch)
	if err != nil {
		return nil, fmt.Errorf("take over %s: %w", slug, err)
	}
	sessionID, err := task.NewID()
	if err != nil {
		return nil, err
	}
	from := sn.Session.Host
	if err := e.Sessions().Save(owned.Session{
		TaskID: sn.Task.ID, SessionID: sessionID, Agent: in.Agent, Exec: in.ExecCommand, PermissionMode: in.PermissionMode,
		Model: in.Model, Worktree: dir, Branch: branch, StartedAt: time.Now().UTC(), TakenOverFrom: from, Sandbox: in.Sandbox,
	}); err != nil {
		return nil, err
	}
	sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Session == nil || e.Owns(s) {
			return nil, fmt.Errorf("take over %s: the task changed meanwhile; look at it again", s.Task.Slug)
		}
		now := time.Now().UTC().Truncate(time.Second)
		prev := s.Session
		s.Task.Sessions++
		s.Task.Host = e.Store.Host()
		s.Session = &task.Session{
			ID: sessionID, Number: s.Task.Sessions, Host: e.Store.Host(), Agent: in.Agent, ExecCommand: in.ExecCommand,
			PermissionMode: in.PermissionMode, Model: in.Model, Branch: branch, Worktree: dir, GitStartSHA: startSHA, StartedAt: now,
			Turn: prev.Turn, TurnKind: prev.TurnKind,
		}
		to := s.Task.Status
		if to == machine.Working {
			to = machine.Interrupted // its turn ran elsewhere and is not running here
			s.Task.Substate = ""
			s.Session.InterruptReason = "taken over from host " + prev.Host + " while it read working there"
			s.Session.InterruptAt = &now
		}
		s.Task.Status = to
		s.AddComment(task.Comment{Actor: e.Actor, At: now,
			Text: fmt.Sprintf("took the task over on host %s from host %s (%s); agent %s in %s", e.Store.Host(), prev.Host, how, in.Agent, dir)})
		return &task.Op{Name: "take-over", Actor: e.Actor, Reason: "from host " + prev.Host}, nil
	})
	return sn, err
}

// takeOverWorktree prepares the derived worktree of a taken-over task:
// the local branch if there is one, else the task branch fetched from a
// remote, else a new branch from the task's base. A path that exists is
// reused only when it is already the worktree of that branch.
func (l *Service) takeOverWorktree(ctx context.Context, sn *task.Snapshot, repoDir, dir, branch string) (sha, how string, err error) {
	e := l.Env
	if at, err := l.worktrees().CheckedOutAt(ctx, repoDir, branch); err != nil {
		return "", "", err
	} else if at != "" {
		if filepath.Clean(at) != dir {
			return "", "", fmt.Errorf("its branch %s is checked out at %s; remove that worktree or check out another branch there first", branch, at)
		}
		sha, err := l.worktrees().Head(ctx, dir)
		return sha, "reused the worktree of " + branch, err
	}
	if _, err := os.Stat(dir); err == nil {
		return "", "", fmt.Errorf("the path %s exists and is not the worktree of %s; move it away first", dir, branch)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", "", err
	}
	_, tipErr := l.worktrees().BranchTip(ctx, repoDir, branch)
	local := tipErr == nil
	if !local {
		remote, err := remoteBranch(ctx, l.worktrees(), repoDir, branch)
		if err != nil {
			return "", "", err
		}
		if remote != "" {
			if err := l.worktrees().CreateBranch(ctx, repoDir, branch, remote); err != nil {
				return "", "", fmt.Errorf("create %s from %s: %w", branch, remote, err)
			}
			how = "branch from " + strings.TrimPrefix(remote, "refs/remotes/")
		}
	} else {
		how = "existing local branch"
	}
	base := ""
	if how == "" {
		if base, err = e.BaseBranch(ctx, sn, repoDir); err != nil {
			return "", "", err
		}
		how = "new branch from " + base + " (no copy of its branch was found here; fetch it first to keep the agent's work)"
	}
	sha, err = l.worktrees().Create(ctx, repoDir, dir, branch, base)
	return sha, how, err
}

// remoteBranch finds branch among the remote-tracking branches; more than
// one copy is ambiguous and refused.
func remoteBranch(ctx context.Context, wt Worktree, repoDir, branch string) (string, error) {
	refs, err := wt.RefsUnder(ctx, repoDir, "refs/remotes/")
	if err != nil {
		return "", err
	}
	var found []string
	for _, r := range refs {
		ref := r.Name
		rest := strings.TrimPrefix(ref, "refs/remotes/")
		if _, b, ok := strings.Cut(rest, "/"); ok && b == branch {
			found = append(found, ref)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("its branch %s exists on several remotes (%s); create the local branch %s from the one you want first", branch, strings.Join(found, ", "), branch)
}
