package reconcile

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// checkFigures names every recorded figure lazy does not believe (see
// task.Flag): a cost or token count that is not a finite number, is
// negative or is beyond the bounds of package budget, and a budget out
// of those bounds. Such a figure is already left out of every sum; the
// findings say which and where. A task total that is flagged is summed
// again from the turns lazy believes, when repairing (the turns are what
// a total adds up). A flagged turn is history and stays as it came (a
// note); a budget out of bounds counts as none until a human sets one.
func (d *doctor) checkFigures(ctx context.Context, entries []task.Entry, repair bool) []Finding {
	var out []Finding
	for i := range entries {
		e := &entries[i]
		sp, err := e.Spending()
		if err != nil {
			continue // corrupt-record says so
		}
		_, _, budgetFlag := sp.OwnBudget()
		if sp.Usage == nil && budgetFlag == "" && !holdFlagged(e) {
			continue // nothing spent, nothing to doubt: no record read
		}
		sn, err := d.snapshots.load(e.ID)
		if err != nil {
			continue
		}
		flags, _ := d.env.Store.Flags(sn)
		for _, fl := range flags {
			f := Finding{TaskID: e.ID, Slug: sn.Task.Slug, Kind: "flagged-figure", Detail: fl.String()}
			switch {
			case fl.Turn > 0:
				f.Note = true
				f.Action = "left out of every budget and of lazy cost; the turn record stays as it came"
			case fl.What == "usage":
				f.Action = "would sum the task's total again from the turns lazy believes; until then it counts in no budget (its parents' included) and no lazy cost"
				if repair {
					f.Action, f.Repaired, f.Error = d.resumTotal(ctx, e.ID)
				}
			case fl.What == "budget_usd":
				f.Detail += fmt.Sprintf("; give it one with lazy edit %s --budget N (0 allows no spend), or --budget none", sn.Task.Slug)
			default:
				f.Note = true
				f.Action = "its figures are not shown; the hold itself stands until the task is unblocked"
			}
			out = append(out, f)
		}
	}
	return out
}

// holdFlagged reports whether the entry's budget hold may carry figures
// out of bounds: only then is its record worth a read.
func holdFlagged(e *task.Entry) bool {
	if e.Status != machine.Blocked && e.Status != machine.Conflict {
		return false
	}
	s, err := e.Summary()
	if err != nil || s.Hold == nil {
		return false
	}
	return len(task.OwnFlags(&task.Task{Hold: s.Hold})) > 0
}

// resumTotal is doctor's repair of task id's flagged usage total: the
// spending capability sums the turns lazy believes again and records
// it.
func (d *doctor) resumTotal(ctx context.Context, id string) (action string, repaired bool, errText string) {
	sum, err := d.env.Spending().ResumTotal(ctx, id)
	if err != nil {
		return "", false, err.Error()
	}
	return "summed the total again from the turns lazy believes: " + sum.String(), true, ""
}
