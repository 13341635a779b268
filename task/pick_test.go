package task

import (
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
)

// TestPickWaits: a group's parked attempts wait on the reconciler while
// the pick by the gate (or its --land) has a step left, on one human once
// it was made and nothing lands by itself, and on their own otherwise.
func TestPickWaits(t *testing.T) {
	at := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	group := func(st machine.Status, p *AttemptPick) *Task {
		return &Task{Status: st, Attempts: []string{"a1", "a2"}, Pick: p}
	}
	for name, c := range map[string]struct {
		t    *Task
		want PickWait
	}{
		"not a group":          {&Task{Status: machine.Backlog, Pick: &AttemptPick{Rule: PickGate}}, PickWaitNone},
		"a human picks":        {group(machine.Backlog, &AttemptPick{Rule: PickHuman}), PickWaitNone},
		"no pick":              {group(machine.Backlog, nil), PickWaitNone},
		"undecided":            {group(machine.Backlog, &AttemptPick{Rule: PickGate}), PickWaitReconciler},
		"undecided, ended":     {group(machine.Abandoned, &AttemptPick{Rule: PickGate}), PickWaitNone},
		"decided":              {group(machine.Backlog, &AttemptPick{Rule: PickGate, DecidedAt: at, Proposed: 2}), PickWaitHuman},
		"decided, none passed": {group(machine.Backlog, &AttemptPick{Rule: PickGate, Land: true, DecidedAt: at}), PickWaitHuman},
		"landing":              {group(machine.Backlog, &AttemptPick{Rule: PickGate, Land: true, DecidedAt: at, Proposed: 2}), PickWaitReconciler},
		"did not land":         {group(machine.Backlog, &AttemptPick{Rule: PickGate, Land: true, DecidedAt: at, Proposed: 2, Landed: "attempt 2 did not land: x"}), PickWaitHuman},
		"landed":               {group(machine.Complete, &AttemptPick{Rule: PickGate, Land: true, DecidedAt: at, Proposed: 2, Landed: "attempt 2 landed"}), PickWaitNone},
	} {
		if got := c.t.PickWaits(); got != c.want {
			t.Errorf("%s: PickWaits = %d, want %d", name, got, c.want)
		}
	}
}
