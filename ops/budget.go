package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/internal/configkeys"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// RaiseBudget raises the budget that holds task name: the one its hold
// names (its own, or a parent's), else its own. add raises the limit by
// usd; otherwise usd is the new limit. It returns the task that owns
// the raised budget and its new limit.
func (e *Env) RaiseBudget(ctx context.Context, name string, add bool, usd float64) (owner string, limit float64, err error) {
	id, err := e.Store.Resolve(name)
	if err != nil {
		return "", 0, err
	}
	sn, err := e.Store.Load(id)
	if err != nil {
		return "", 0, err
	}
	target := sn
	if h := sn.Task.Hold; h != nil && h.Kind == task.HoldBudget {
		switch slug, ok := strings.CutPrefix(h.Scope, "parent "); {
		case h.Scope == budget.ScopeDay:
			return "", 0, fmt.Errorf("%s is held by this machine's day budget (%s), not a task's: raise it with git config %s <dollars>, then lazy unblock %s", sn.Task.Slug, h.Reason, session.KeyBudgetDay, sn.Task.Slug)
		case ok:
			pid, err := e.Store.Resolve(slug)
			if err != nil {
				return "", 0, fmt.Errorf("the parent whose budget holds %s: %w", sn.Task.Slug, err)
			}
			if target, err = e.Store.Load(pid); err != nil {
				return "", 0, err
			}
		}
	}
	set, err := e.Budgets().Settings()
	if err != nil {
		return "", 0, err
	}
	updated, err := e.Update(ctx, target.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
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
		return &task.Op{Name: "edit", Actor: e.Actor, Reason: fmt.Sprintf("budget raised to $%.2f", limit)}, nil
	})
	if err != nil {
		return "", 0, err
	}
	return updated.Task.Slug, limit, nil
}

// KeyPrice is the setting that prices a model over lazy's table.
const KeyPrice = "lazy.price"

// Prices is lazy's price table with this repository's lazy.price
// settings over it. A bad value is an error naming the key and the fix.
func (e *Env) Prices() (budget.Prices, error) {
	cfg, err := e.Repo.Config()
	if err != nil {
		return budget.Prices{}, fmt.Errorf("read git config: %w", err)
	}
	over := map[string]budget.Price{}
	for _, v := range cfg.All(KeyPrice) {
		model, p, err := budget.ParsePrice(v)
		if err != nil {
			return budget.Prices{}, configkeys.Invalid(KeyPrice, v, "is not a model and its prices")
		}
		over[model] = p
	}
	return budget.NewPrices(over), nil
}

// PriceTurn fills in what a turn cost when its agent CLI reported tokens
// and no dollars: from lazy.price or lazy's table, by the turn's model.
// A cost the CLI reported always wins. A turn no price reaches is
// counted unpriced (never $0). It returns where the dollars came from
// ("" when nothing priced them).
func PriceTurn(prices budget.Prices, model string, u *task.Usage) string {
	switch {
	case u.CostUSD > 0:
		return budget.PricedByAgent
	case u.Tokens() == 0:
		return ""
	}
	p, by, ok := prices.Lookup(model)
	if !ok {
		u.Unpriced = 1
		return ""
	}
	u.CostUSD = p.Cost(u.InputTokens, u.CachedInputTokens, u.OutputTokens)
	return by
}
