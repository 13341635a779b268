package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/render"
)

// EditCmd changes a task's title, goal or target branch.
type EditCmd struct {
	Task         string  `arg:"" help:"Slug or id prefix."`
	Title        *string `help:"New one-line title."`
	Goal         *string `help:"New goal, replacing the old one (\"-\" reads stdin)."`
	TargetBranch *string `name:"target-branch" help:"New target branch (must exist; \"\" for the default branch). Top-level tasks before their first start only."`
	Budget       *string `help:"The task's own budget in US dollars, for its turns and its subtasks'; 0 allows no spend, none clears it (lazy.budget.task applies again)." placeholder:"USD"`
	JSON         bool    `help:"Print the task as JSON."`
}

// Help implements kong's detailed help.
func (c *EditCmd) Help() string {
	return `The change is recorded as an "edit" operation in the task's history.

Examples:
  lazy edit fix-login --title "Fix the flaky login test"
  lazy edit fix-login --goal - < goal.md
  lazy edit fix-login --target-branch release-2.1
  lazy edit fix-login --budget 25      # its own budget, for it and its subtasks
  lazy edit fix-login --budget 0       # no spend allowed: no turn starts
  lazy edit fix-login --budget none    # no budget of its own (lazy.budget.task applies)`
}

// Run implements lazy edit.
func (c *EditCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	if c.Goal != nil && *c.Goal == "-" {
		text, _, err := textInputOf(a).read(c.Goal, "goal", false)
		if err != nil {
			return err
		}
		c.Goal = &text
	}
	in := lifecycle.EditInput{Title: c.Title, Goal: c.Goal, TargetBranch: c.TargetBranch}
	if c.Budget != nil {
		usd, err := parseBudgetFlag(*c.Budget)
		if err != nil {
			return err
		}
		in.BudgetUSD, in.ClearBudget = usd, usd == nil
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	sn, err := env.Lifecycle().Edit(ctx, c.Task, in)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.io.printJSON(toJSON(&sn.Task))
	}
	var changed []string
	if c.Title != nil {
		changed = append(changed, "title")
	}
	if c.Goal != nil {
		changed = append(changed, "goal")
	}
	if c.TargetBranch != nil {
		changed = append(changed, "target branch")
	}
	if c.Budget != nil {
		if usd, ok, _ := sn.Task.OwnBudget(); ok {
			changed = append(changed, "budget ("+render.BudgetAmount(usd)+")")
		} else {
			changed = append(changed, "budget (none of its own)")
		}
	}
	fmt.Fprintf(a.io.out, "Edited %s: %s\n", sn.Task.Slug, strings.Join(changed, ", "))
	return nil
}

// parseBudgetFlag reads --budget: an amount (0 allows no spend), or
// "none" (nil: no budget of the task's own).
func parseBudgetFlag(v string) (*float64, error) {
	usd, err := budget.ParseLimit("--budget", v)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return usd, nil
}
