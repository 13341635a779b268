package cli

import (
	"context"
	"strings"

	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// outcome is how a task a human waited for ended (start --wait, lazy
// wait, the end of logs -f): its status, what holds it (a budget, a usage
// limit) or the gate that failed on its work, and the commands that carry
// it on, as "blocked; held: over budget: ...; next: lazy unblock ...".
// facts says whether there was more to say than the status.
func (a *app) outcome(ctx context.Context, sn *task.Snapshot) (line string, facts bool) {
	t := &sn.Task
	parts := []string{string(t.Status)}
	next := strings.Join(nextSteps(t.Slug, t.Status, sn.PendingViolations() > 0), " | ")
	switch h := t.Hold; {
	case h != nil && !t.Status.IsTerminal():
		parts = append(parts, session.HoldText(h))
		next = session.HoldNext(t.Slug, h)
	default:
		env, err := a.env()
		if err != nil {
			break
		}
		if r := env.Landing().Gates().FailedGate(ctx, sn); r != nil {
			parts = append(parts, landing.GateFailure(*r))
			next = landing.GateNext(t.Slug, *r)
		}
	}
	line = strings.Join(parts, "; ")
	if next != "" {
		line += "; next: " + next
	}
	return line, len(parts) > 1
}
