package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/machine"
)

// Picker is the step of a pick by the gate the reconciler takes for an
// attempt group (attempts.Service.PickStep): its parked attempts gated,
// the pick made once all are judged, the proposal landed with --land.
type Picker interface {
	PickStep(ctx context.Context, id string) (*attempts.PickOutcome, error)
}

func (r *Reconciler) picker() Picker {
	if r.Picker == nil {
		return r.Env.Attempts()
	}
	return r.Picker
}

// picks are the pick steps the reconciler runs in the background: a
// step gates attempts for minutes, and the daemon's pass must not wait
// for it, or every other task's sweep would wait too. At most one step
// runs per group; what a step ended with is reported by the next pass.
// Nothing here needs to survive a crash: a step records each gate result
// and the pick on the group as it goes, and the next daemon's pass starts
// a step that goes on from those records.
type picks struct {
	mu sync.Mutex
	// running holds each group whose step runs: what cancels it, and
	// the pass that started it (passes counts pickGroups' calls).
	running map[string]pickRun
	passes  int
	// ended are the steps ended since the last pass.
	ended  []pickEnded
	closed bool
	wg     sync.WaitGroup
}

// pickRun is one step going.
type pickRun struct {
	cancel context.CancelFunc
	pass   int
}

// pickEnded is what one background step ended with.
type pickEnded struct {
	id  string
	out *attempts.PickOutcome
	err error
}

// Picking reports whether a pick step has been running since an earlier
// pass (it gates: a step with nothing to gate ends at once), or made a
// pick the next pass has yet to report: the daemon is busy while one
// does, so it does not exit idle in the middle of a gate run, nor before
// it told of the pick. A group whose pick waits on an attempt that never
// runs keeps no daemon up.
func (r *Reconciler) Picking() bool {
	p := &r.picks
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, run := range p.running {
		if run.pass < p.passes {
			return true
		}
	}
	for _, e := range p.ended {
		if e.out != nil && e.out.Decided {
			return true
		}
	}
	return false
}

// close cancels the steps that run and waits for them to end (the gate
// runs they started are killed with their context), so that a daemon
// leaves no gate behind when it exits.
func (p *picks) close() {
	p.mu.Lock()
	p.closed = true
	for _, run := range p.running {
		run.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// pickGroups starts a step, in the background, for each attempt group
// picked by the gate that has none running, and reports what the steps
// ended since the last pass did: a group whose pick is made is an action,
// so the surfaces hear of it; an error is the group's.
func (r *Reconciler) pickGroups(ctx context.Context, v *view) ([]Action, error) {
	p := &r.picks
	p.mu.Lock()
	ended := p.ended
	p.ended = nil
	p.passes++
	for _, i := range v.picking {
		id := v.entries[i].ID
		if _, ok := p.running[id]; ok || p.closed {
			continue
		}
		if p.running == nil {
			p.running = map[string]pickRun{}
		}
		sctx, cancel := context.WithCancel(ctx)
		p.running[id] = pickRun{cancel: cancel, pass: p.passes}
		p.wg.Go(func() {
			defer cancel()
			out, err := r.picker().PickStep(sctx, id)
			p.mu.Lock()
			defer p.mu.Unlock()
			delete(p.running, id)
			p.ended = append(p.ended, pickEnded{id: id, out: out, err: err})
		})
	}
	p.mu.Unlock()
	var acts []Action
	var errs []error
	for _, e := range ended {
		if e.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.id, e.err))
		}
		o := e.out
		if o == nil || !o.Decided {
			continue
		}
		to := machine.Backlog
		if o.Landed {
			to = machine.Complete
		}
		acts = append(acts, Action{TaskID: e.id, Slug: o.Slug, From: machine.Backlog, To: to, Why: "picked by the gate: " + o.Why, Neutral: !o.Landed})
		if o.LandErr != nil {
			errs = append(errs, fmt.Errorf("%s: the attempt the gate picked did not land: %w", o.Slug, o.LandErr))
		}
	}
	return acts, errors.Join(errs...)
}
