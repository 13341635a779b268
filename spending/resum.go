package spending

import (
	"context"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// SumTurns is task.SumTurns over the core's store.
func (s *Service) SumTurns(sn *task.Snapshot) (task.Usage, error) {
	return task.SumTurns(s.Env.Store, sn)
}

// ResumTotal replaces task id's flagged usage total with the sum of the
// turns lazy believes (lazy doctor's repair), under the task lock, as one
// operation of the system whose reason says what was replaced. A total
// repaired meanwhile is left as it is, and the sum is then zero.
func (s *Service) ResumTotal(ctx context.Context, id string) (task.Usage, error) {
	unlock, err := s.Env.LockTask(ctx, id)
	if err != nil {
		return task.Usage{}, err
	}
	defer unlock()
	var sum task.Usage
	_, _, err = s.Env.Store.Update(ctx, id, func(sn *task.Snapshot) (*task.Op, error) {
		u := sn.Task.Usage
		if u == nil || u.Flagged == "" {
			return nil, nil // repaired meanwhile
		}
		var serr error
		if sum, serr = s.SumTurns(sn); serr != nil {
			return nil, serr
		}
		why := u.Flagged
		// Kept even when nothing is left: the task did record usage, and
		// its turns' flags stay for doctor to name.
		sn.Task.Usage = &sum
		return &task.Op{Name: "reconcile", Actor: machine.System, Reason: "usage total summed again from the turns: the recorded one was left out (" + why + ")"}, nil
	})
	return sum, err
}
