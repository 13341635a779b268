package spending

import (
	"context"
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// RaiseBudget raises the budget that holds task name: the one its hold
// names (its own, or a parent's), else its own. add raises the limit by
// usd; otherwise usd is the new limit. It returns the task that owns
// the raised budget and its new limit.
func (sp *Service) RaiseBudget(ctx context.Context, name string, add bool, usd float64) (owner string, limit float64, err error) {
	id, err := sp.Env.Store.Resolve(name)
	if err != nil {
		return "", 0, err
	}
	sn, err := sp.Env.Store.Load(id)
	if err != nil {
		return "", 0, err
	}
	target := sn
	if h := sn.Task.Hold; h != nil && h.Kind == task.HoldBudget {
		switch slug, ok := strings.CutPrefix(h.Scope, "parent "); {
		case h.Scope == budget.ScopeDay:
			return "", 0, fmt.Errorf("%s is held by this machine's day budget (%s), not a task's: raise it with git config %s <dollars>, then lazy unblock %s", sn.Task.Slug, h.Reason, session.KeyBudgetDay, sn.Task.Slug)
		case ok:
			pid, err := sp.Env.Store.Resolve(slug)
			if err != nil {
				return "", 0, fmt.Errorf("the parent whose budget holds %s: %w", sn.Task.Slug, err)
			}
			if target, err = sp.Env.Store.Load(pid); err != nil {
				return "", 0, err
			}
		}
	}
	set, err := sp.Env.Budgets().Settings()
	if err != nil {
		return "", 0, err
	}
	updated, err := sp.Env.Update(ctx, target.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status.IsTerminal() {
			return nil, fmt.Errorf("raise the budget of %s: the task is %s; reopen it first", s.Task.Slug, s.Task.Status)
		}
		cur, ok, _ := s.Task.OwnBudget()
		if !ok && set.TaskUSD != nil {
			cur = *set.TaskUSD
		}
		limit = usd
		if add {
			limit = cur + usd
			if h := sn.Task.Hold; h != nil && h.Kind == task.HoldBudget && h.SpentUSD > cur && task.CheckUSD("", h.SpentUSD) == nil {
				// Overspent (a turn ran past it): raise from what was spent.
				limit = h.SpentUSD + usd
			}
			limit = task.RoundUSD(limit)
		}
		if err := task.CheckUSD("the raised budget", limit); err != nil {
			return nil, err
		}
		s.Task.BudgetUSD = &limit
		return &task.Op{Name: "edit", Actor: sp.Env.Actor, Reason: fmt.Sprintf("budget raised to $%.2f", limit)}, nil
	})
	if err != nil {
		return "", 0, err
	}
	return updated.Task.Slug, limit, nil
}
