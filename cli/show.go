package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/landing"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// showView is what lazy show prints, fetched once: the text's view
// (render.Show), and the protected paths' view --json prints whole.
type showView struct {
	render.Show
	protected *landing.ProtectedView
}

// showJSON is lazy show --json: the detail, with the overlaps' fields
// beside its own, and a group's attempts compared.
type showJSON struct {
	*task.Detail
	review.TaskOverlaps
	showAttempts
	// ProtectedChanges names the protected paths the change touches.
	ProtectedChanges *landing.ProtectedView `json:"protected_changes,omitempty"`
}

// showAttempts is what show --json adds for an attempt group: one
// entry per attempt (status, agent, model, cost, gate, diff stat), the
// cost of them all and the attempt that landed.
type showAttempts struct {
	Attempts      []attempts.Attempt `json:"attempts,omitempty"`
	AttemptsUsage *task.Usage        `json:"attempts_usage,omitempty"`
	AttemptChosen int                `json:"attempt_chosen,omitempty"`
	// AttemptsPick is the pick by the gate (lazy start --pick gate),
	// AttemptsPickLine it in words.
	AttemptsPick     *task.AttemptPick `json:"attempts_pick,omitempty"`
	AttemptsPickLine string            `json:"attempts_pick_line,omitempty"`
}

func attemptsJSON(v *attempts.Comparison) showAttempts {
	if v == nil {
		return showAttempts{}
	}
	return showAttempts{Attempts: v.Attempts, AttemptsUsage: v.Usage, AttemptChosen: v.Chosen, AttemptsPick: v.Pick, AttemptsPickLine: v.PickLine}
}

// Run implements lazy show.
func (c *ShowCmd) Run(a *app, ctx context.Context) error {
	v, err := c.fetch(a, ctx)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.io.printJSON(showJSON{v.Detail, v.Overlaps, attemptsJSON(v.Attempts), v.protected})
	}
	return v.Render(a.io.out, a.io.style(a.now()))
}

// fetch reads the task, after the reconciler has had its say, into the
// view; the text view's extras are fetched only when text is printed.
func (c *ShowCmd) fetch(a *app, ctx context.Context) (*showView, error) {
	sn, err := a.openTask(c.Task)
	if err != nil {
		return nil, err
	}
	id := sn.Task.ID
	if a.reconcileBeforeRead(ctx, []task.Entry{{ID: id, Status: sn.Task.Status}}) {
		if sn, err = a.store.Load(id); err != nil {
			return nil, err
		}
	}
	d, err := a.store.Detail(sn, 0)
	if err != nil {
		return nil, err
	}
	d.Live = a.marks().Substate(&d.Summary)
	d.Permissions = a.permissions(ctx, sn)
	if !c.Full {
		d.Clip(showClip, "lazy show "+sn.Task.Slug+" --full shows it whole")
	}
	v := &showView{Show: render.Show{Snapshot: sn, Detail: d, Overlaps: overlapCheckOf(a).task(ctx, sn)}}
	if env, err := a.env(); err == nil {
		// A gate run is this machine's only if its own record says so.
		env.Landing().Gates().VerifyDetail(d)
		v.protected, _ = env.Landing().Gates().ProtectedChanges(ctx, sn)
		if v.protected != nil {
			v.Protected = v.protected.Line()
		}
		if sn.Task.IsAttemptGroup() {
			v.Attempts, _ = env.Attempts().Compare(ctx, id)
		}
	}
	if c.JSON {
		return v, nil
	}
	if _, ok, _ := sn.Task.OwnBudget(); ok {
		if env, err := a.env(); err == nil {
			v.BudgetNote = budgetNote(env, sn)
		}
	}
	t := &sn.Task
	v.PR = render.PRBrief(&d.Summary)
	if t.Parent != "" {
		v.Parent = t.Parent
		if p, err := a.store.Load(t.Parent); err == nil {
			v.Parent = p.Task.Slug + " (" + render.ShortID(t.Parent) + ")"
		}
	}
	if sn.Session != nil {
		if env, err := a.env(); err == nil {
			v.Foreign = env.Foreign(sn)
		}
	}
	if t.AttemptOf != "" {
		v.AttemptOf = fmt.Sprintf("%d of %s", t.Attempt, render.ShortID(t.AttemptOf))
		if g, err := a.store.Load(t.AttemptOf); err == nil {
			v.AttemptOf = fmt.Sprintf("%d of %s (lazy show %s compares the attempts)", t.Attempt, g.Task.Slug, g.Task.Slug)
		}
	}
	v.Next = nextSteps(t.Slug, t.Status, len(sn.Violations.Pending) > 0)
	if t.IsAttemptGroup() && !t.Status.IsTerminal() {
		v.Next = []string{"lazy diff " + t.Slug + " --attempts", "lazy accept " + t.Slug + " --attempt K", "lazy watch"}
	}
	if v.protected != nil && t.Status == machine.Blocked {
		v.Next = []string{"lazy diff " + t.Slug, v.protected.Approve + "   # a human, after reviewing them", "lazy unblock " + t.Slug + " -m TEXT", "lazy reject " + t.Slug}
	}
	if h := t.Hold; h != nil && h.Kind == task.HoldBudget && !t.Status.IsTerminal() {
		// Over budget, a plain unblock would only park it again.
		v.Next = []string{"lazy unblock " + t.Slug + " --budget +N", "lazy diff " + t.Slug, "lazy accept " + t.Slug, "lazy reject " + t.Slug}
	}
	return v, nil
}

// budgetNote says what a task's own budget counts: what it and its
// subtasks spent, and each recorded figure under it that is left out
// because lazy does not believe it (out of bounds): such a figure counts
// as nothing, so it can neither hold the budget for good nor pay for
// another task's spending.
func budgetNote(env *wire.Env, sn *task.Snapshot) string {
	spent, flags, err := env.Spending().Spending(sn)
	if err != nil {
		return ""
	}
	note := fmt.Sprintf("; $%.2f spent against it", spent.CostUSD)
	if spent.Unpriced > 0 || (spent.CostUSD == 0 && spent.Tokens() > 0) {
		note += ", besides unpriced turns"
	}
	var left []string
	for _, f := range flags {
		if f.What == "usage" {
			left = append(left, sanitize.Field(f.Task))
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		note += fmt.Sprintf("; left out as out of bounds: the figures of %s (lazy doctor names them)", words.List(left, ""))
	}
	return note
}
