package lifecycle

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// hasAgentWork reports whether the task ever ran an agent session.
func hasAgentWork(s *task.Snapshot) bool {
	return s.Session != nil || s.Task.Sessions > 0
}

// endTask moves a task to abandoned with an outcome and reason.
func (l *Service) endTask(ctx context.Context, name, opName, outcome, reason string, allowed func(*task.Snapshot) error) (*task.Snapshot, error) {
	e := l.Env
	reason, err := session.CleanReason(reason)
	if err != nil {
		return nil, err
	}
	var sn *task.Snapshot
	err = e.WithTask(ctx, name, func(id string) error {
		cur, err := e.Store.Load(id)
		if err != nil {
			return err
		}
		// A parent abandoned under open subtasks would leave them to be
		// started, and merged, into work nobody wants.
		if open, err := OpenSubtasks(e.Store, id); err != nil {
			return err
		} else if len(open) > 0 {
			return fmt.Errorf("%s %s: its subtasks %s are not finished; %s them first (or move them with lazy reparent), since their work merges into this task's branch", opName, cur.Task.Slug, strings.Join(open, ", "), opName)
		}
		// A group closed under open attempts would leave them running
		// for a task nobody wants done.
		if open := openAttempts(e.Store, cur); len(open) > 0 {
			return fmt.Errorf("%s %s: its attempts %s are not finished; %s them first, or land one with lazy accept %s --attempt K", opName, cur.Task.Slug, strings.Join(open, ", "), opName, cur.Task.Slug)
		}
		// A local accept that died is undone (or finished) first: the
		// destination checkout and the user's stash are put back.
		if _, err := l.escapeStranded(ctx, cur, opName); err != nil {
			return err
		}
		sn, _, err = e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
			return endOp(s, e, opName, outcome, reason, allowed)
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	why := opName
	if reason != "" {
		why += ": " + reason
	}
	// The task is abandoned first (the durable record), then its pull
	// request is closed with the reason as a comment.
	return sn, l.closePR(ctx, sn, why)
}

// endOp is endTask's change to the record.
func endOp(s *task.Snapshot, e *session.Env, opName, outcome, reason string, allowed func(*task.Snapshot) error) (*task.Op, error) {
	if err := allowed(s); err != nil {
		return nil, err
	}
	if err := machine.Validate(s.Task.Status, machine.Abandoned, e.Actor); err != nil {
		return nil, fmt.Errorf("%s %s: %w", opName, s.Task.Slug, err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	s.Task.Status = machine.Abandoned
	s.Task.Outcome = outcome
	s.Task.Reason = reason
	if s.Session != nil && s.Session.EndedAt == nil {
		s.Session.EndedAt = &now
		s.Session.Outcome = outcome
	}
	switch {
	case reason == "":
	case opName == "reject" && s.Session != nil:
		// Why the work was rejected is feedback for the agent: pending,
		// so the first turn after a reopen delivers it.
		s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "reject", Content: reason, At: now, Session: s.Session.ID, FeedbackDelivery: task.FeedbackPending})
	default:
		s.AddComment(task.Comment{Actor: e.Actor, At: now, Text: opName + ": " + reason})
	}
	return &task.Op{Name: opName, Actor: e.Actor, Reason: reason}, nil
}

// Close abandons a task that will not be done ("won't do", duplicate).
func (l *Service) Close(ctx context.Context, name, reason string) (*task.Snapshot, error) {
	return l.endTask(ctx, name, "close", task.OutcomeClosed, reason, func(*task.Snapshot) error { return nil })
}

// Reject abandons a task whose agent work is not wanted.
func (l *Service) Reject(ctx context.Context, name, reason string) (*task.Snapshot, error) {
	return l.endTask(ctx, name, "reject", task.OutcomeRejected, reason, func(s *task.Snapshot) error {
		if s.Task.Status == machine.Backlog {
			return fmt.Errorf("reject %s: the task never started, so there is no work to reject; use lazy close", s.Task.Slug)
		}
		return nil
	})
}

// Reopen brings a finished task back: to blocked when it has agent work
// to review again, to backlog when it never ran. A reopened task whose
// worktree was removed (by accept or cleanup) gets it back: on its kept
// branch, or on a new branch from its base when the branch is gone too.
func (l *Service) Reopen(ctx context.Context, name, reason string) (*task.Snapshot, error) {
	e := l.Env
	reason, err := session.CleanReason(reason)
	if err != nil {
		return nil, err
	}
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	plan := func(s *task.Snapshot) (machine.Status, error) {
		if !s.Task.Status.IsTerminal() {
			return "", fmt.Errorf("reopen %s: the task is %s, not finished; only complete or abandoned tasks can be reopened", s.Task.Slug, s.Task.Status)
		}
		if err := ParentOpen(e.Store, s, "reopen"); err != nil {
			return "", err
		}
		// A task with agent work parks: blocked, or conflict while
		// file-permission violations are still pending (the label is
		// derived, never asserted).
		to := machine.Backlog
		if hasAgentWork(s) {
			to = machine.Park(s.PendingViolations())
		}
		if s.Task.Status == machine.Complete && to != machine.Backlog && reason == "" {
			return "", fmt.Errorf("reopen %s: an accepted task needs a reason (--reason \"...\")", s.Task.Slug)
		}
		return to, machine.Validate(s.Task.Status, to, e.Actor)
	}
	to, err := plan(sn)
	if err != nil {
		return nil, err
	}
	// Only a session this machine started gets its worktree back, at the
	// path this machine chose.
	if s, err := e.Owned(sn); to != machine.Backlog && err == nil {
		if _, err := os.Stat(s.Worktree); os.IsNotExist(err) {
			base, err := e.BaseBranch(ctx, sn, e.Dir())
			if err != nil {
				return nil, err
			}
			if _, err := l.worktrees().Create(ctx, e.Dir(), s.Worktree, s.Branch, base); err != nil {
				return nil, fmt.Errorf("reopen %s: recreate its worktree: %w", sn.Task.Slug, err)
			}
			// A new worktree: its next turn prepares it again.
			s.Prepared = false
			if err := e.Sessions().Save(s); err != nil {
				return nil, err
			}
		}
	}
	sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		to, err := plan(s)
		if err != nil {
			return nil, err
		}
		s.Task.Status = to
		s.Task.Outcome = ""
		s.Task.Reason = reason
		turns, err := e.Store.Turns(s)
		if err != nil {
			return nil, err
		}
		s.Task.ReopenedAt = NewestCommit(turns)
		if s.Session != nil {
			s.Session.EndedAt = nil
			s.Session.Outcome = ""
			s.Session.ConsecutiveInterruptions = 0
		}
		if reason != "" {
			// Why the task came back is feedback for the agent: the next
			// turn delivers it (with a reject's reason still pending).
			t := task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "reopen", Content: reason, At: time.Now().UTC().Truncate(time.Second), FeedbackDelivery: task.FeedbackPending}
			if s.Session != nil {
				t.Session = s.Session.ID
			}
			s.AddTurn(t)
		}
		return &task.Op{Name: "reopen", Actor: e.Actor, Reason: reason}, nil
	})
	return sn, err
}

// ParentOpen refuses verb on a subtask whose parent is finished: its work
// would merge into a branch that is gone or that nobody wants.
func ParentOpen(st task.Store, s *task.Snapshot, verb string) error {
	if s.Task.Parent == "" {
		return nil
	}
	p, err := st.Load(s.Task.Parent)
	if err != nil {
		return nil // a missing parent is reported by doctor; the task is a root in effect
	}
	if p.Task.Status.IsTerminal() {
		return fmt.Errorf("%s %s: its parent %s is %s; reopen the parent first, or move the task with lazy reparent %s --root", verb, s.Task.Slug, p.Task.Slug, p.Task.Status, s.Task.Slug)
	}
	return nil
}

// NewestCommit is the last commit any of turns recorded, or "".
func NewestCommit(turns []task.Turn) string {
	newest := ""
	for _, t := range turns {
		if len(t.Commits) > 0 {
			newest = t.Commits[len(t.Commits)-1]
		}
	}
	return newest
}

// OpenSubtasks lists the slugs of a task's unfinished subtasks.
func OpenSubtasks(st task.Store, id string) ([]string, error) {
	entries, err := st.List()
	if err != nil {
		return nil, err
	}
	var open []string
	for _, en := range entries {
		if en.Parent == id && !en.Status.IsTerminal() {
			if s, err := en.Summary(); err == nil {
				open = append(open, s.Slug)
			}
		}
	}
	return open, nil
}

// openAttempts lists the slugs of group sn's attempts that are not
// finished.
func openAttempts(st task.Store, sn *task.Snapshot) []string {
	var open []string
	for _, id := range sn.Task.Attempts {
		if a, err := st.Load(id); err == nil && !a.Task.Status.IsTerminal() {
			open = append(open, a.Task.Slug)
		}
	}
	return open
}
