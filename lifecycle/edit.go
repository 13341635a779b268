package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// EditInput is what an edit changes; a nil field is left as it is.
type EditInput struct {
	Title        *string
	Goal         *string
	TargetBranch *string // "" clears it: the task then targets the default branch
	// BudgetUSD sets the task's own budget (0 allows no spend);
	// ClearBudget removes it, and lazy.budget.task applies again.
	BudgetUSD   *float64
	ClearBudget bool
}

// Edit changes a task's title, goal or target branch, recorded as one
// "edit" operation so the history says who changed what. The target
// branch must exist locally, and only a top-level task that has not
// started yet may change it: a started task's branch was cut from the
// old one, and a subtask merges into its parent.
func (l *Service) Edit(ctx context.Context, name string, in EditInput) (*task.Snapshot, error) {
	e := l.Env
	if in.Title == nil && in.Goal == nil && in.TargetBranch == nil && in.BudgetUSD == nil && !in.ClearBudget {
		return nil, errors.New("nothing to edit: give a new title, goal, target branch or budget")
	}
	if in.BudgetUSD != nil {
		if err := task.CheckUSD("the budget", *in.BudgetUSD); err != nil {
			return nil, err
		}
		if in.ClearBudget {
			return nil, errors.New("give a budget or clear it, not both")
		}
	}
	var title, goal, target string
	if in.Title != nil {
		title = strings.TrimSpace(sanitize.Field(*in.Title))
		if title == "" {
			return nil, errors.New("a title cannot be empty; give the task a one-line title")
		}
		if strings.ContainsAny(*in.Title, "\r\n") {
			return nil, errors.New("a title is one line; put the details in the goal")
		}
		if n := utf8.RuneCountInString(title); n > session.MaxTitle {
			return nil, fmt.Errorf("the title is %d characters; keep it under %d and put the details in the goal", n, session.MaxTitle)
		}
	}
	if in.Goal != nil {
		goal = strings.TrimSpace(sanitize.Prose(*in.Goal))
		if err := session.CheckText("the goal", goal); err != nil {
			return nil, err
		}
	}
	if in.TargetBranch != nil {
		target = strings.TrimSpace(*in.TargetBranch)
		// The subtask rule is checked below, against the task as it is.
		if err := checkTargetBranch(ctx, l.worktrees(), e.Dir(), target, false); err != nil {
			return nil, err
		}
	}
	return e.Update(ctx, name, func(s *task.Snapshot) (*task.Op, error) {
		slug := s.Task.Slug
		if s.Task.Status.IsTerminal() {
			return nil, fmt.Errorf("edit %s: the task is %s; reopen it first", slug, s.Task.Status)
		}
		var changed []string
		if in.Title != nil && title != s.Task.Title {
			s.Task.Title = title
			changed = append(changed, "title")
		}
		if in.Goal != nil {
			old, err := s.Goal()
			if err != nil {
				return nil, err
			}
			if goal != old {
				s.SetGoal(goal)
				changed = append(changed, "goal")
				if s.Session != nil {
					// The agent learns it on its next work turn; a turn
					// running now was told the old goal.
					s.Session.GoalEditedAfter = max(s.Session.Turn, 1)
				}
			}
		}
		if in.TargetBranch != nil && target != s.Task.TargetBranch {
			if err := targetForSubtask(target, s.Task.Parent != ""); err != nil {
				return nil, fmt.Errorf("edit %s: %w", slug, err)
			}
			if hasAgentWork(s) {
				return nil, fmt.Errorf("edit %s: its branch was already cut from %s; the target branch can only change before the task starts", slug, orDefault(s.Task.TargetBranch))
			}
			s.Task.TargetBranch = target
			changed = append(changed, "target branch")
		}
		switch cur := s.Task.BudgetUSD; {
		case in.BudgetUSD != nil && (cur == nil || *cur != *in.BudgetUSD):
			v := *in.BudgetUSD
			s.Task.BudgetUSD = &v
			changed = append(changed, "budget to "+budgetWords(v))
		case in.ClearBudget && cur != nil:
			s.Task.BudgetUSD = nil
			changed = append(changed, "budget cleared (lazy.budget.task applies)")
		}
		if len(changed) == 0 {
			return nil, fmt.Errorf("edit %s: nothing changed; the task already says that", slug)
		}
		return &task.Op{Name: "edit", Actor: e.Actor, Reason: "changed " + strings.Join(changed, ", ")}, nil
	})
}

// budgetWords is a budget as a change or a summary says it: "$5.00", or
// "$0 (no spend allowed)".
func budgetWords(v float64) string {
	if v == 0 {
		return "$0 (no spend allowed)"
	}
	return fmt.Sprintf("$%.2f", v)
}

// CheckTargetBranch is the one rule for the target branch a task is
// created or edited with ("": the default branch), on every path (CLI,
// MCP, web): a valid name of a branch that exists in this repository,
// and none at all for a subtask, which merges into its parent's branch.
func CheckTargetBranch(ctx context.Context, repoDir, target string, subtask bool) error {
	return checkTargetBranch(ctx, Git{}, repoDir, target, subtask)
}

// checkTargetBranch is CheckTargetBranch with wt looking the branch up.
func checkTargetBranch(ctx context.Context, wt Worktree, repoDir, target string, subtask bool) error {
	if target == "" {
		return nil
	}
	if err := task.ValidBranchName(target); err != nil {
		return fmt.Errorf("target branch: %w", err)
	}
	if err := targetForSubtask(target, subtask); err != nil {
		return err
	}
	if _, err := wt.BranchCommit(ctx, repoDir, target); err != nil {
		return fmt.Errorf("target branch %q does not exist in this repository; create it first (git branch %s) or pick another", target, target)
	}
	return nil
}

// targetForSubtask refuses a target branch for a subtask (clearing one is
// always allowed).
func targetForSubtask(target string, subtask bool) error {
	if subtask && target != "" {
		return errors.New("a subtask merges into its parent's branch and has no target branch of its own; leave the target branch out, or make it a top-level task")
	}
	return nil
}

func orDefault(branch string) string {
	if branch == "" {
		return "the default branch"
	}
	return branch
}
