package landing

import (
	"testing"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

func TestParentExemptionNeedsProvenIdentityAndAnActiveParent(t *testing.T) {
	parent := &task.Task{ID: "00000000000000aa"}
	for _, c := range []struct {
		actor  machine.Actor
		caller string
		status machine.Status
		want   bool
	}{
		{machine.Agent, parent.ID, machine.Working, true},
		{machine.Agent, parent.ID, machine.Pairing, true},
		{machine.Agent, parent.ID, machine.Interrupted, false}, // the spec: working or pairing only
		{machine.Agent, parent.ID, machine.Merging, false},
		{machine.Agent, "", machine.Working, false},                 // identity not proven
		{machine.Agent, "00000000000000bb", machine.Working, false}, // another task's agent
		{machine.Human, parent.ID, machine.Working, false},
		{machine.Builder, parent.ID, machine.Working, false},
	} {
		parent.Status = c.status
		e := New(&session.Env{Actor: c.actor, CallerTask: c.caller})
		if got := e.parentExempt(parent); got != c.want {
			t.Errorf("%s caller %q, parent %s: exempt %v, want %v", c.actor, c.caller, c.status, got, c.want)
		}
	}
}
