package wire

import (
	"context"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/internal/confine"
	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/sandbox"
)

// pickGates is the pick by the gate's side of landing: an attempt's tree
// gated as lazy gate does (the target's gate, read at the target's tip,
// never the attempt's branch), and the proposal landed as lazy accept
// GROUP --attempt K does.
type pickGates struct{ e *Env }

// options are the unattended accept's and gate's: confined as agents
// are when lazy.sandbox is on; a setting lazy cannot read runs the gate
// in the tightest sandbox rather than none.
func (p pickGates) options() landing.AcceptOptions {
	var sb *proto.Sandbox
	cfg, err := p.e.Repo.Config()
	if err == nil {
		sb, err = sandbox.FromConfig(cfg, "")
	}
	if err != nil {
		sb = &proto.Sandbox{Network: confine.NetworkOff}
	}
	return landing.AcceptOptions{Sandbox: sb}
}

// GateAttempt is landing.Gates.Gate on attempt id.
func (p pickGates) GateAttempt(ctx context.Context, id string) (attempts.GateResult, error) {
	c, err := p.e.Landing().Gates().Gate(ctx, id, p.options())
	switch {
	case err != nil:
		return attempts.GateResult{}, err
	case c.NoGate:
		return attempts.GateResult{NoGate: true}, nil
	case c.Run == nil:
		return attempts.GateResult{Passed: true, Run: c.Reused}, nil // this machine's mark: it passed on this very tree
	}
	return attempts.GateResult{Passed: c.Run.Passed, Run: c.Run.ID, BranchTip: c.Run.BranchTip, Failed: c.Run.Failed}, nil
}

// Parallel is lazy.gate.parallel, as the merge queue's train reads it; a
// setting lazy cannot read gates one attempt at a time (the gate run
// itself then says what is wrong with the settings).
func (p pickGates) Parallel() int {
	s, err := p.e.Landing().Gates().GateSettings()
	if err != nil {
		return 1
	}
	return s.Parallel
}

// LandAttempt is landing.Service.AcceptAttempt, narrated to no one.
func (p pickGates) LandAttempt(ctx context.Context, group string, k int) error {
	_, err := p.e.Landing().AcceptAttempt(ctx, group, k, nil, p.options())
	return err
}

var (
	_ attempts.Gater  = pickGates{}
	_ attempts.Lander = pickGates{}
)
