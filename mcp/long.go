package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// Reporter hears one line of progress of the call it was given to.
type Reporter func(msg string)

type reporterKey struct{}

// WithReporter returns a context whose long operations report progress
// to r.
func WithReporter(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, reporterKey{}, r)
}

// Report hands msg to the context's reporter and says whether there was
// one. Code that would otherwise print progress to stderr calls it
// first, so nothing of an MCP call leaks onto the server's stderr.
func Report(ctx context.Context, msg string) bool {
	r, ok := ctx.Value(reporterKey{}).(Reporter)
	if ok && r != nil {
		r(msg)
	}
	return ok
}

// watch reports task id's status and substate every tick until ctx ends
// or the returned stop is called.
func (d *Dispatcher) watch(ctx context.Context, id string) (stop func()) {
	if _, ok := ctx.Value(reporterKey{}).(Reporter); !ok {
		return func() {}
	}
	tick := d.Tick
	if tick <= 0 {
		tick = time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := ""
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			if sn, err := d.Store.Load(id); err == nil {
				if msg := d.describe(sn); msg != last {
					last = msg
					Report(ctx, msg)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// describe is one progress line for a task: its status and substate.
func (d *Dispatcher) describe(sn *task.Snapshot) string {
	v := d.view(sn)
	msg := sn.Task.Slug + ": " + string(sn.Task.Status)
	if v.Live != "" {
		msg += " (" + v.Live + ")"
	} else if v.Substate != "" {
		msg += " (" + v.Substate + ")"
	}
	return msg
}

// flight is one long operation (an accept, a submit) that outlives the
// call that began it, so a caller whose call returned still_running
// picks the same run up by calling again instead of starting a second.
type flight struct {
	done    chan struct{}
	out     any
	err     error
	mu      sync.Mutex
	latest  string
	hearers map[int]Reporter
	next    int
}

func (f *flight) report(msg string) {
	f.mu.Lock()
	f.latest = msg
	hs := make([]Reporter, 0, len(f.hearers))
	for _, h := range f.hearers {
		hs = append(hs, h)
	}
	f.mu.Unlock()
	for _, h := range hs {
		h(msg)
	}
}

func (f *flight) listen(r Reporter) (stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hearers == nil {
		f.hearers = map[int]Reporter{}
	}
	n := f.next
	f.next++
	f.hearers[n] = r
	return func() {
		f.mu.Lock()
		delete(f.hearers, n)
		f.mu.Unlock()
	}
}

// detached runs op under key once: a second call with the same key
// while it runs joins the first run. It waits up to limit; running says
// the limit passed first (the op goes on, detached from this call), with
// the op's latest progress line.
func (d *Dispatcher) detached(ctx context.Context, key string, limit time.Duration, op func(ctx context.Context) (any, error)) (out any, running bool, latest string, err error) {
	d.mu.Lock()
	if d.flights == nil {
		d.flights = map[string]*flight{}
	}
	f, ok := d.flights[key]
	if !ok {
		f = &flight{done: make(chan struct{})}
		d.flights[key] = f
		// The op must not die with the call that began it: an accept
		// half done is exactly what a timed-out caller must not cause.
		octx := WithReporter(context.WithoutCancel(ctx), f.report)
		go func() {
			defer close(f.done)
			f.out, f.err = op(octx)
		}()
	}
	d.mu.Unlock()
	if r, ok := ctx.Value(reporterKey{}).(Reporter); ok {
		defer f.listen(r)()
		f.mu.Lock()
		if f.latest != "" {
			r(f.latest)
		}
		f.mu.Unlock()
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-callerCtx(ctx).Done():
		return nil, false, "", callerCtx(ctx).Err()
	case <-f.done:
		d.mu.Lock()
		if d.flights[key] == f {
			delete(d.flights, key)
		}
		d.mu.Unlock()
		return f.out, false, "", f.err
	case <-t.C:
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return nil, true, f.latest, nil
}

// narrator turns an accept's narration into progress lines.
type narrator struct{ ctx context.Context }

func (n narrator) Prelude(msg string) { Report(n.ctx, "accept: "+msg) }
func (n narrator) Plan(plan []landing.Phase) {
	names := make([]string, len(plan))
	for i, p := range plan {
		names[i] = p.Label
	}
	Report(n.ctx, "accept plan: "+strings.Join(names, ", "))
}
func (n narrator) Step(i, m int, p landing.Phase) {
	Report(n.ctx, fmt.Sprintf("accept step %d/%d: %s", i, m, p.Label))
}
func (n narrator) Note(msg string) { Report(n.ctx, "accept: "+msg) }

func (d *Dispatcher) accept(ctx context.Context, env *wire.Env, id string, in AcceptIn) (any, error) {
	var opts landing.AcceptOptions
	if d.Hooks.Accept != nil {
		opts = d.Hooks.Accept()
	}
	// An attempt's accept runs under the attempt's id, so a call again,
	// through the group or on the attempt itself, picks the same one up.
	landing := id
	if in.Attempt != 0 {
		_, aid, err := env.Attempts().Resolve(id, in.Attempt)
		if err != nil {
			return nil, err
		}
		landing = aid
	}
	out, running, latest, err := d.detached(ctx, "accept\x00"+landing, timeout(in.TimeoutSeconds), func(ctx context.Context) (any, error) {
		res, err := d.acceptOne(ctx, env, id, in.Attempt, opts)
		if err != nil {
			return nil, err
		}
		v := d.view(res.Snapshot)
		return AcceptOut{Task: &v, Into: res.Into, Commit: res.Commit, Pending: res.Pending, Warnings: nonNil(res.Warnings), GateRun: res.Gate}, nil
	})
	if err != nil {
		return nil, err
	}
	if running {
		return d.stillRunning(landing, latest, "accept", func(v *View, r Running) any {
			return AcceptOut{Task: v, Warnings: []string{}, Running: r}
		})
	}
	return out, nil
}

// acceptOne lands task id, or its attempt k when k is not 0, through the
// same ops as lazy accept and lazy accept GROUP --attempt K.
func (d *Dispatcher) acceptOne(ctx context.Context, env *wire.Env, id string, k int, opts landing.AcceptOptions) (*landing.AcceptResult, error) {
	if k != 0 {
		return env.Landing().AcceptAttempt(ctx, id, k, narrator{ctx}, opts)
	}
	return env.Landing().Accept(ctx, id, narrator{ctx}, opts)
}

// stillRunning is the result of a detached op that has not ended yet.
func (d *Dispatcher) stillRunning(id, latest, verb string, shape func(*View, Running) any) (any, error) {
	var v *View
	slug := id
	if sn, err := d.Store.Load(id); err == nil {
		vv := d.view(sn)
		v, slug = &vv, sn.Task.Slug
		if latest == "" {
			latest = d.describe(sn)
		}
		if sn.Task.Status == machine.Working && latest == "" {
			latest = "working"
		}
	}
	return shape(v, Running{StillRunning: true, WaitingOn: "the " + verb + " of " + slug + ": " + latest,
		Next: "call lazy_" + verb + " with task " + slug + " again; it picks this " + verb + " up rather than starting another"}), nil
}

// Drain waits until every run in flight (an accept or submit whose call
// returned still_running) and every call that changes something has
// ended, or ctx ends: a server whose client went away finishes what it
// began rather than leave it half done.
func (d *Dispatcher) Drain(ctx context.Context) {
	d.mu.Lock()
	var pending []*flight
	for _, f := range d.flights {
		pending = append(pending, f)
	}
	d.mu.Unlock()
	for _, f := range pending {
		select {
		case <-f.done:
		case <-ctx.Done():
			return
		}
	}
	// And every call that changes something, run to its end.
	done := make(chan struct{})
	go func() {
		d.changing.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
