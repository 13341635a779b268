package gitstore

import (
	"fmt"

	"github.com/lazyorch/lazy/task"
)

// Flags are every flag of sn: its own figures and its turns' (turns
// the read's bounds leave out are not read).
func (s *Store) Flags(sn *task.Snapshot) ([]task.Flag, error) {
	out := task.OwnFlags(&sn.Task)
	turns, err := s.Turns(sn)
	if err != nil {
		return out, err
	}
	return append(out, task.TurnFlags(&sn.Task, turns)...), nil
}

// newFlags are the flags of the pulled record rs that the local record
// (nil: none) did not have already, so a pull names a flagged figure
// once, when it arrives. Turns are read only when the pull changed them,
// of a task that recorded usage.
func (s *Store) newFlags(local, rs *task.Snapshot) []task.Flag {
	key := func(f task.Flag) string { return fmt.Sprint(f.Turn, "\x00", f.What, "\x00", f.Reason) }
	had := map[string]bool{}
	if local != nil {
		for _, f := range task.OwnFlags(&local.Task) {
			had[key(f)] = true
		}
	}
	var out []task.Flag
	for _, f := range task.OwnFlags(&rs.Task) {
		if !had[key(f)] {
			out = append(out, f)
		}
	}
	if rs.Task.Usage == nil || (local != nil && entriesOf(local)[dirTurns].Hash == entriesOf(rs)[dirTurns].Hash) {
		// A task that recorded no usage has no turn figure anything
		// reads (lazy cost and doctor read the turns of tasks that
		// spent), and unchanged turns were judged when they came.
		return out
	}
	turns, err := s.Turns(rs)
	if err != nil {
		return out // an unreadable record is pull's own finding
	}
	flags := task.TurnFlags(&rs.Task, turns)
	if len(flags) > 0 && local != nil {
		if lt, err := s.Turns(local); err == nil {
			for _, f := range task.TurnFlags(&local.Task, lt) {
				had[key(f)] = true
			}
		}
	}
	for _, f := range flags {
		if !had[key(f)] {
			out = append(out, f)
		}
	}
	return out
}
