package cli

import (
	"context"
	"strings"

	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// outcome is how a task a human waited for ended (start --wait, lazy
// wait, the end of logs -f): its status, what holds it (a budget, a usage
// limit) or the gate that failed on its work, and the commands that carry
// it on, as "blocked; held: over budget: ...; next: lazy unblock ...".
// facts says whether there was more to say than the status. envOf gives
// the wire env the failed gate is read with.
func outcome(ctx context.Context, envOf func() (*wire.Env, error), sn *task.Snapshot) (line string, facts bool) {
	t := &sn.Task
	parts := []string{string(t.Status)}
	next := strings.Join(nextSteps(t.Slug, t.Status, sn.PendingViolations() > 0), " | ")
	switch h := t.Hold; {
	case h != nil && !t.Status.IsTerminal():
		parts = append(parts, session.HoldText(h))
		next = session.HoldNext(t.Slug, h)
	default:
		env, err := envOf()
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
