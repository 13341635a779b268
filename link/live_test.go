package link

import (
	"strings"
	"testing"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

func TestTokenLiveOnlyForItsRunningTurnOrPairing(t *testing.T) {
	snap := func(st machine.Status, session string, turn int) *task.Snapshot {
		sn := &task.Snapshot{Task: task.Task{Status: st, Slug: "fix-it"}}
		if session != "" {
			sn.Session = &task.Session{ID: session, Turn: turn}
		}
		return sn
	}
	turn := Identity{Task: "t", Session: "s1", Turn: 3}
	pair := Identity{Task: "t", Session: "s1", Kind: "pair"}
	for _, c := range []struct {
		name string
		id   Identity
		sn   *task.Snapshot
		dead string // "" if live, else a word the refusal must hold
	}{
		{"its turn runs", turn, snap(machine.Working, "s1", 3), ""},
		{"a later turn", turn, snap(machine.Working, "s1", 4), "turn of fix-it"},
		{"another session", turn, snap(machine.Working, "s2", 3), "ended"},
		{"no session", turn, snap(machine.Working, "", 0), "ended"},
		{"task stopped working", turn, snap(machine.Blocked, "s1", 3), "ended"},
		{"a turn token while pairing", turn, snap(machine.Pairing, "s1", 3), "turn of"},
		{"its pairing lasts", pair, snap(machine.Pairing, "s1", 0), ""},
		{"pairing ended", pair, snap(machine.Working, "s1", 0), "pairing on fix-it"},
		{"another pairing", pair, snap(machine.Pairing, "s2", 0), "pairing"},
	} {
		err := c.id.Live(c.sn)
		switch {
		case c.dead == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.dead != "" && (err == nil || !strings.Contains(err.Error(), c.dead)):
			t.Errorf("%s: got %v, want a refusal naming %q", c.name, err, c.dead)
		}
	}
}
