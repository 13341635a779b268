package spending

import (
	"fmt"

	"github.com/lazyorch/lazy/cost"
	"github.com/lazyorch/lazy/task"
)

// Spent is what sn's task cost with every task under it: its own turns
// (sn is fresher than the listing for its own) and its subtasks', rolled
// up from the listing.
func (sp *Service) Spent(sn *task.Snapshot) (task.Usage, error) {
	u, _, err := sp.Spending(sn)
	return u, err
}

// Spending is Spent with the recorded figures under the task that the
// sum leaves out, flagged as out of bounds (the budgets leave them out
// too).
func (sp *Service) Spending(sn *task.Snapshot) (task.Usage, []task.Flag, error) {
	entries, err := sp.Env.Store.List()
	if err != nil {
		return task.Usage{}, nil, fmt.Errorf("read the task list to total what %s cost: %w", sn.Task.Slug, err)
	}
	tree := cost.NewTree(entries)
	own, err := sp.Env.Budgets().OwnUsage(sn)
	if err != nil {
		return task.Usage{}, nil, err
	}
	tree.SetOwn(sn.Task.ID, own)
	var flags []task.Flag
	for _, f := range tree.Flagged(sn.Task.ID) {
		if f.TaskID != sn.Task.ID {
			flags = append(flags, f)
		}
	}
	flags = append(task.OwnFlags(&sn.Task), flags...)
	return tree.Subtree(sn.Task.ID), flags, nil
}
