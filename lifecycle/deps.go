package lifecycle

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// resolveAfter turns the names a create waits for into task ids.
func resolveAfter(st task.Store, names []string) ([]string, error) {
	var ids []string
	for _, name := range names {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		id, err := st.Resolve(name)
		if err != nil {
			return nil, fmt.Errorf("--after %s: %w", name, err)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) > task.MaxAfter {
		return nil, fmt.Errorf("a task may wait for at most %d others, not %d", task.MaxAfter, len(ids))
	}
	return ids, nil
}

// WaitingError says a task cannot start yet: tasks it waits for
// (lazy create --after) are not complete.
type WaitingError struct {
	Task string
	On   []string // their slugs and statuses, "build-api (blocked)"
}

func (w *WaitingError) Error() string {
	return fmt.Sprintf("%s waits for %s to be complete (it was created with --after); start it once they are, or lazy start --pool %s lets a runner start it then",
		w.Task, strings.Join(w.On, ", "), w.Task)
}

// DepsDone checks that every task sn waits for is complete (accepted);
// otherwise it says which are not, as a WaitingError. A task it waits for
// that was rejected or closed will never be done: that is said too.
func DepsDone(st task.Store, sn *task.Snapshot) error {
	var pending []string
	for _, id := range sn.Task.After {
		dep, err := st.Load(id)
		if err != nil {
			pending = append(pending, id+" (not in this repository: lazy pull?)")
			continue
		}
		if dep.Task.Status == machine.Complete && dep.Task.Outcome == task.OutcomeAccepted {
			continue
		}
		st := string(dep.Task.Status)
		if dep.Task.Outcome != "" && dep.Task.Outcome != task.OutcomeAccepted {
			st += ", " + dep.Task.Outcome + ": it will never be done"
		}
		pending = append(pending, dep.Task.Slug+" ("+st+")")
	}
	if len(pending) > 0 {
		return &WaitingError{Task: sn.Task.Slug, On: pending}
	}
	return nil
}
