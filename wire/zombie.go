package wire

import (
	"context"
	"time"

	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// FinishZombie is the system's step that finishes a task whose work was
// found merged: zombie -> complete with outcome accepted (FinishAccepted
// at now), recorded with why ("" says its branch was merged). nil when
// the task is no longer a zombie.
func (e *Env) FinishZombie(ctx context.Context, id, why string, now time.Time) (*lifecycle.Step, error) {
	return e.Lifecycle().SystemStep(ctx, id, func(s *task.Snapshot) string {
		if s.Task.Status != machine.Zombie {
			return ""
		}
		landing.FinishAccepted(s, now)
		if why == "" {
			why = "its branch was merged; finished as accepted"
		}
		return why
	})
}
