package session

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/cost"
	"github.com/lazyorch/lazy/internal/configkeys"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// Budget settings: per task (each task, its turns and its subtasks'
// turns) and per day (this machine's turns in this repository). Unset
// is no budget; 0 allows no spend.
const (
	KeyBudgetTask = "lazy.budget.task"
	KeyBudgetDay  = "lazy.budget.day"
)

// BudgetSettings are the configured budgets; nil is a budget that is
// not set.
type BudgetSettings struct {
	TaskUSD, DayUSD *float64
}

// Settings reads lazy.budget.* from git config. A bad value is an
// error naming the key and the fix; only turns, which need the budgets,
// ask for them.
func (b Budgets) Settings() (BudgetSettings, error) {
	e := b.e
	cfg, err := e.Repo.Config()
	if err != nil {
		return BudgetSettings{}, fmt.Errorf("read git config: %w", err)
	}
	var s BudgetSettings
	for key, dst := range map[string]**float64{KeyBudgetTask: &s.TaskUSD, KeyBudgetDay: &s.DayUSD} {
		v, ok := cfg.Get(key)
		if !ok {
			continue
		}
		k, _ := configkeys.Lookup(key)
		if err := k.Check(v); err != nil {
			return BudgetSettings{}, err
		}
		usd, _ := budget.ParseUSD(key, v)
		*dst = &usd
	}
	return s, nil
}

// Ledger is this machine's daily spending ledger of the repository.
func (b Budgets) Ledger() budget.Ledger {
	e := b.e
	return budget.Ledger{Dir: e.Repo.LazyDir("spend")}
}

// Lines are the budgets a turn of s's task runs under: the task's
// own (its budget_usd, else lazy.budget.task), each ancestor's, and the
// day's. Spending against a task's budget is what it and every task
// under it cost; s is taken as fresher than the listing for its own.
func (b Budgets) Lines(s *task.Snapshot, now time.Time) ([]budget.Line, error) {
	e := b.e
	set, err := e.Budgets().Settings()
	if err != nil {
		return nil, err
	}
	var lines []budget.Line
	if set.DayUSD != nil {
		spent, err := e.Budgets().Ledger().Day(now)
		if err != nil {
			return nil, err
		}
		lines = append(lines, budget.Line{Scope: budget.ScopeDay, LimitUSD: *set.DayUSD, SpentUSD: spent})
	}
	_, own, _ := s.Task.OwnBudget()
	if set.TaskUSD == nil && !own && s.Task.Parent == "" && s.Task.AttemptOf == "" {
		return lines, nil // no task budget can apply: no listing needed
	}
	entries, err := e.Store.List()
	if err != nil {
		return nil, err
	}
	tree := cost.NewTree(entries)
	// The task's own figures are fresher than the listing's. A figure out
	// of bounds is left out here as everywhere: the budgets count only
	// figures lazy believes (lazy doctor names the rest).
	spent, err := e.Budgets().OwnUsage(s)
	if err != nil {
		return nil, err
	}
	tree.SetOwn(s.Task.ID, spent)
	scope := budget.ScopeTask
	seen := map[string]bool{}
	limit, ok, _ := s.Task.OwnBudget()
	for id := s.Task.ID; id != "" && !seen[id]; {
		seen[id] = true
		if !ok && set.TaskUSD != nil {
			limit, ok = *set.TaskUSD, true
		}
		if ok {
			lines = append(lines, budget.Line{Scope: scope, LimitUSD: limit, SpentUSD: tree.Subtree(id).CostUSD})
		}
		n, found := tree.Spending(tree.Parent(id))
		if !found {
			break
		}
		id, scope = n.ID, "parent "+n.Slug
		limit, ok, _ = n.OwnBudget()
	}
	return lines, nil
}

// OwnUsage is what sn's task itself spent: its recorded total, or, when
// lazy does not believe that total, the sum of the turns it does (a task
// does not escape its budget by a poisoned total).
func (b Budgets) OwnUsage(sn *task.Snapshot) (*task.Usage, error) {
	e := b.e
	u := sn.Task.Usage
	if u == nil || u.Valid() {
		return u, nil
	}
	// The sum of the turns lazy believes, within a read's bounds: it can
	// fall short of the truth, never above it.
	turns, err := e.Store.Turns(sn)
	if err != nil {
		return nil, err
	}
	var sum task.Usage
	for i := range turns {
		if tu := turns[i].Usage; tu.Valid() {
			sum.Add(*tu)
		}
	}
	return &sum, nil
}

// Over returns the tightest budget of s's turns when it is spent,
// nil when a turn may run; left is what the turn may spend (0: no
// budget applies).
func (b Budgets) Over(s *task.Snapshot) (over *budget.Line, left float64, err error) {
	e := b.e
	lines, err := e.Budgets().Lines(s, time.Now())
	if err != nil {
		return nil, 0, err
	}
	tight, ok := budget.Tightest(lines)
	if !ok {
		return nil, 0, nil
	}
	if tight.Over() {
		return &tight, 0, nil
	}
	return nil, tight.Left(), nil
}

// BudgetHold is the hold a task parks with when line is spent.
func BudgetHold(line budget.Line, now time.Time) *task.Hold {
	return &task.Hold{Kind: task.HoldBudget, At: now.UTC().Truncate(time.Second), Scope: line.Scope, LimitUSD: line.LimitUSD, SpentUSD: line.SpentUSD,
		Reason: "the " + line.Scope + " budget " + line.Spent() + ": " + line.String()}
}

// RaiseHint is the one sentence that says how to carry on past line.
func RaiseHint(slug string, line budget.Line) string {
	if line.Scope == budget.ScopeDay && line.LimitUSD == 0 {
		return fmt.Sprintf("give it an amount with git config %s <dollars>, or unset it for no day budget (git config --unset %s); then lazy unblock %s", KeyBudgetDay, KeyBudgetDay, slug)
	}
	if line.Scope == budget.ScopeDay {
		return fmt.Sprintf("raise it with git config %s <dollars>, or wait for tomorrow (local time); then lazy unblock %s", KeyBudgetDay, slug)
	}
	return fmt.Sprintf("raise it with lazy unblock %s --budget +5 (more) or --budget 20 (the new budget), or lazy edit --budget on the task that owns it", slug)
}

// ParkUnlaunched parks a task whose turn was recorded but must not run: the
// task goes back to where the turn found it, with hold (nil: none); the
// turn's message stays pending, delivered by the next turn.
func (t Turns) ParkUnlaunched(ctx context.Context, sn *task.Snapshot, seq int, hold *task.Hold) (*task.Snapshot, error) {
	e := t.e
	sn, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Working || s.Session == nil || s.Session.Turn != seq {
			return nil, nil
		}
		s.Task.Status = ParkBack(s)
		s.Task.Substate = ""
		s.Task.Hold = hold
		reason := "the turn was not started"
		if hold != nil {
			reason = hold.Reason
		}
		return &task.Op{Name: "park", Actor: machine.System, Reason: reason}, nil
	})
	return sn, err
}

// ErrOverBudget is a turn that was recorded but not started because a
// budget is spent: the task is parked, held, with its message pending.
type ErrOverBudget struct {
	Slug string
	Line budget.Line
}

func (e *ErrOverBudget) Error() string {
	return fmt.Sprintf("%s is over budget (%s): the turn was not started and the task is parked, its message kept for the next turn; %s", e.Slug, e.Line.String(), RaiseHint(e.Slug, e.Line))
}

// ForTurn is the budget check of a turn already recorded on an
// existing session: what it may spend, or, when a budget is spent (or
// cannot be read), the task parked back and an error that says why.
func (b Budgets) ForTurn(sn *task.Snapshot, seq int) (float64, error) {
	e := b.e
	over, left, err := e.Budgets().Over(sn)
	switch {
	case err != nil:
		if _, perr := e.Turns().ParkUnlaunched(context.Background(), sn, seq, nil); perr != nil {
			return 0, fmt.Errorf("the turn was recorded but not launched: %w (and parking it failed: %w)", err, perr)
		}
		return 0, fmt.Errorf("the turn was not started and the task is parked, its message kept: %w", err)
	case over != nil:
		parked, perr := e.Turns().ParkUnlaunched(context.Background(), sn, seq, BudgetHold(*over, time.Now()))
		if perr != nil {
			return 0, fmt.Errorf("the turn was recorded but not launched: %s is over budget (and parking it failed: %w)", sn.Task.Slug, perr)
		}
		if parked != nil {
			e.NoteHold(parked)
		}
		return 0, &ErrOverBudget{Slug: sn.Task.Slug, Line: *over}
	}
	return left, nil
}

// CheckSubtask refuses a subtask budget, asked for by anyone but a
// human, over what the parent has left. The parent's budget holds the
// subtask anyway (its spending rolls up, and the tightest budget stops a
// turn), so a bigger one escapes nothing; refusing it keeps an agent from
// writing a budget no one granted, and says what is left instead.
func (b Budgets) CheckSubtask(parent *task.Snapshot, usd float64) error {
	e := b.e
	lines, err := e.Budgets().Lines(parent, time.Now())
	if err != nil {
		return err
	}
	tight, ok := budget.Tightest(lines)
	switch {
	case !ok:
		return nil
	case tight.Over():
		return fmt.Errorf("a budget of $%.2f for a subtask of %s: the %s budget %s (%s); leave the budget out, or ask a human to raise it (%s)", usd, parent.Task.Slug, tight.Scope, tight.Spent(), tight.String(), RaiseHint(parent.Task.Slug, tight))
	case usd > tight.Left()+0.005:
		return fmt.Errorf("a budget of $%.2f for a subtask of %s is more than it has left ($%.2f under the %s budget, %s); give $%.2f or less, or leave the budget out: the parent's budget holds the subtask either way", usd, parent.Task.Slug, tight.Left(), tight.Scope, tight.String(), math.Floor(tight.Left()*100)/100)
	}
	return nil
}
