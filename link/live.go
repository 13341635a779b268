package link

import (
	"fmt"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// Live reports whether the holder of id may still call, given its task
// as stored now: a turn's token only while that very turn runs, a
// pairing's only while that pairing lasts. A token left behind by a
// killed supervisor is worthless.
func (id Identity) Live(sn *task.Snapshot) error {
	if id.Kind == "pair" {
		if sn.Task.Status != machine.Pairing || sn.Session == nil || sn.Session.ID != id.Session {
			return fmt.Errorf("this MCP token belongs to a pairing on %s that has ended", sn.Task.Slug)
		}
		return nil
	}
	if sn.Task.Status != machine.Working || sn.Session == nil || sn.Session.ID != id.Session || sn.Session.Turn != id.Turn {
		return fmt.Errorf("this MCP token belongs to a turn of %s that has ended", sn.Task.Slug)
	}
	return nil
}
