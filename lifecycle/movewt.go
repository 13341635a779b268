package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// InGitDir reports whether a worktree path lies inside the repository's
// git directory, where lazy put worktrees before they moved to the
// per-user data directory (and where Claude Code edits nothing).
func (l *Service) InGitDir(path string) bool {
	e := l.Env
	rel, err := filepath.Rel(e.Repo.CommonDir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// MoveWorktree moves the worktree of a parked task this machine runs out
// of the git directory to where new worktrees go (dir is
// lazy.worktreeDir, "" for the default), with git worktree move, so its
// agent can work there. Its uncommitted changes move with it, the Claude
// Code conversation is copied to the new directory (Claude resumes a
// session only from the directory it started in), and this machine's
// session record and the task's record name the new path. It returns the
// new path.
func (l *Service) MoveWorktree(ctx context.Context, id, dir string) (string, error) {
	e := l.Env
	sn, unlock, err := e.LockedLoad(ctx, id)
	if err != nil {
		return "", err
	}
	defer unlock()
	slug := sn.Task.Slug
	switch sn.Task.Status {
	case machine.Blocked, machine.Conflict, machine.Interrupted:
	default:
		return "", fmt.Errorf("move the worktree of %s: the task is %s; only a parked task's worktree moves", slug, sn.Task.Status)
	}
	local, err := e.Owned(sn)
	if err != nil {
		return "", fmt.Errorf("move the worktree of %w", err)
	}
	if !l.InGitDir(local.Worktree) {
		return "", fmt.Errorf("move the worktree of %s: %s is not inside the git directory", slug, local.Worktree)
	}
	if pid, running := e.Supervisors().Running(sn.Task.ID); running {
		return "", fmt.Errorf("move the worktree of %s: a supervisor (pid %d) still runs in it", slug, pid)
	}
	if err := e.WorktreeFree(sn.Task.ID, "move the worktree of", slug); err != nil {
		return "", err
	}
	root, err := e.WorktreeRoot(dir, e.Dir())
	if err != nil {
		return "", err
	}
	to := filepath.Join(root, slug)
	if l.InGitDir(to) {
		return "", fmt.Errorf("move the worktree of %s: lazy.worktreeDir puts it inside the git directory again (%s)", slug, to)
	}
	if _, err := os.Lstat(to); !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("move the worktree of %s: %s exists already; move it away first", slug, to)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	from := local.Worktree
	// Claude names a project directory after the real path of the
	// directory a conversation started in: read it while that exists.
	sid, project := "", ""
	if local.Agent == "claude" {
		if sid = session.ResumeID(local, sn); sid != "" {
			project = session.ClaudeProjectDir(from)
			if _, err := os.Stat(filepath.Join(project, sid+".jsonl")); err != nil {
				project = "" // no conversation kept here to carry over
			}
		}
	}
	if err := l.worktrees().Move(ctx, e.Dir(), from, to); err != nil {
		return "", fmt.Errorf("move the worktree of %s: %w", slug, err)
	}
	if project != "" {
		if err := session.CopyClaudeSession(project, session.ClaudeProjectDir(to), sid); err != nil {
			_ = l.worktrees().Move(ctx, e.Dir(), to, from)
			return "", fmt.Errorf("move the worktree of %s: its Claude Code conversation could not follow, so it stays where it was: %w", slug, err)
		}
	}
	local.Worktree = to
	if err := e.Sessions().Save(local); err != nil {
		return "", err
	}
	_, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Session == nil || s.Session.ID != local.SessionID {
			return nil, nil
		}
		s.Session.Worktree = to
		s.AddComment(task.Comment{Actor: e.Actor, At: time.Now().UTC().Truncate(time.Second), Text: "moved the worktree from " + from + " to " + to})
		return &task.Op{Name: "move-worktree", Actor: e.Actor, Reason: "out of the git directory"}, nil
	})
	return to, err
}
