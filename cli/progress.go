package cli

import (
	"strings"

	"github.com/lazyorch/lazy/task"
)

// waitingLine is what the progress line of a wait says about the tasks
// still running: each one's slug and what it is doing this second (its
// substate, else its status).
func (a *app) waitingLine(pending []*task.Snapshot) string {
	mk := a.marks()
	parts := make([]string, 0, len(pending))
	for _, sn := range pending {
		s := toJSON(&sn.Task)
		what := mk.Substate(&s)
		if what == "" {
			what = string(sn.Task.Status)
		}
		parts = append(parts, sn.Task.Slug+": "+what)
	}
	return strings.Join(parts, " | ")
}
