package task

import (
	"fmt"
	"time"
)

// How an attempt group's attempts are chosen (AttemptPick.Rule; git
// config lazy.attempts.pick, lazy start --pick).
const (
	// PickHuman: a human reads the comparison and chooses (the default).
	PickHuman = "human"
	// PickGate: each attempt is gated on the tree it would land when it
	// parks, and the best by the declared rule is proposed (or landed).
	PickGate = "gate"
)

// AttemptPick is, on an attempt group started with --pick gate, the
// pick the reconciler makes unattended: each attempt's gate run on the
// tree it would land (the run itself is on the attempt's own gate
// record), then, once every attempt has parked and been gated or has
// failed, the attempt proposed and why. It is a record for people: an
// accept never trusts it (lazy accept gates the attempt's tree again
// unless this machine's own mark says that tree passed).
type AttemptPick struct {
	Rule string `json:"rule"`
	// Land: land the proposed attempt through the normal accept (lazy
	// start --pick gate --land) rather than wait for a human.
	Land bool `json:"land,omitempty"`
	// Gated is each attempt's gate result as the pick saw it.
	Gated []AttemptGate `json:"gated,omitempty"`
	// DecidedAt is set once every attempt was judged; Proposed is the
	// attempt proposed (0: none passed, nothing lands), Why the ranking
	// in words ("attempt 2: gate passed, $0.12, 14 lines; attempt 1
	// failed the gate; attempt 3 cost more").
	DecidedAt time.Time `json:"decided_at,omitzero"`
	Proposed  int       `json:"proposed,omitempty"`
	Why       string    `json:"why,omitempty"`
	// Landed says what the --land step did with the proposal ("" while
	// it has not run).
	Landed string `json:"landed,omitempty"`
}

// AttemptGate is one attempt's gate result as the pick saw it: the run on
// the tree its branch tip would land, passed or failed (State is a
// gate state, GatePassed or GateFailed, or PickNoGate / PickGateError).
type AttemptGate struct {
	Attempt   int    `json:"attempt"`
	BranchTip string `json:"branch_tip"`
	State     string `json:"state"`
	Run       string `json:"run,omitempty"`
	Failed    string `json:"failed,omitempty"`
}

// Pick gate states besides GatePassed and GateFailed.
const (
	// PickNoGate: the target names no gate command (lazy.gate,
	// .lazy/gate), so nothing tells the attempts apart by the gate.
	PickNoGate = "no gate"
	// PickGateError: the gate could not run on the attempt's tree (its
	// branch conflicts with the target, say).
	PickGateError = "could not run"
)

// MaxPickWhy bounds the words a pick keeps.
const MaxPickWhy = 2048

// GateOf is attempt k's gate result, or nil.
func (p *AttemptPick) GateOf(k int) *AttemptGate {
	if p == nil {
		return nil
	}
	for i := range p.Gated {
		if p.Gated[i].Attempt == k {
			return &p.Gated[i]
		}
	}
	return nil
}

// Moving reports whether the pick by the gate has a step left for the
// reconciler: not decided yet, or decided with --land and not landed.
func (p *AttemptPick) Moving() bool {
	if p == nil || p.Rule != PickGate {
		return false
	}
	return !p.Decided() || (p.Land && p.Proposed > 0 && p.Landed == "")
}

// Decided reports whether the pick was made.
func (p *AttemptPick) Decided() bool { return p != nil && !p.DecidedAt.IsZero() }

// PickWait is what the parked attempts of a group wait on (Task.PickWaits).
type PickWait int

// What a group's parked attempts wait on.
const (
	// PickWaitNone: no pick by the gate is in force (a human picks, or
	// the group ended); each attempt waits on its own.
	PickWaitNone PickWait = iota
	// PickWaitReconciler: the pick by the gate, or its --land, has a step
	// left; lazy works on it and nobody needs to act yet.
	PickWaitReconciler
	// PickWaitHuman: the pick was made and nothing lands by itself (no
	// --land, no attempt passed, or the landing failed); one human
	// decision on the group answers it.
	PickWaitHuman
)

// PickWaits says what the parked attempts of group t wait on. It reads
// only the group's record, so surfaces below the attempts capability
// (the inbox) share one rule with the reconciler's (attempts.Picking).
func (t *Task) PickWaits() PickWait {
	p := t.Pick
	switch {
	case p == nil || p.Rule != PickGate || !t.IsAttemptGroup() || t.Status.IsTerminal():
		return PickWaitNone
	case p.Moving():
		return PickWaitReconciler
	}
	return PickWaitHuman
}

func (p *AttemptPick) clone() *AttemptPick {
	if p == nil {
		return nil
	}
	c := *p
	c.Gated = append([]AttemptGate(nil), p.Gated...)
	return &c
}

// checkPick refuses a pick larger or stranger than lazy writes: it
// comes from whoever can push, and every surface shows it.
func checkPick(p *AttemptPick) error {
	if p == nil {
		return nil
	}
	if p.Rule != PickGate && p.Rule != PickHuman {
		return fmt.Errorf("task.json has an attempt pick rule lazy does not write (%.40q)", p.Rule)
	}
	if len(p.Gated) > MaxAttempts || p.Proposed < 0 || p.Proposed > MaxAttempts || len(p.Why) > MaxPickWhy || len(p.Landed) > MaxPickWhy {
		return fmt.Errorf("task.json has an attempt pick larger than lazy writes")
	}
	for _, g := range p.Gated {
		if g.Attempt < 1 || g.Attempt > MaxAttempts || len(g.BranchTip) > 64 || len(g.State) > 32 || len(g.Failed) > 1024 || (g.Run != "" && !ValidID(g.Run)) {
			return fmt.Errorf("task.json has an attempt's gate result lazy does not write")
		}
	}
	return nil
}
