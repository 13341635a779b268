package reconcile

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// view is one listing of the tasks, sorted once into what each sweep
// looks at, so that the sweeps walk their own few tasks instead of every
// task. Pass keeps its view across passes while no task ref moves; Sweep
// builds one from its caller's list for that call alone.
type view struct {
	entries []task.Entry
	// live are the tasks whose status a per-task sweep judges (sweepable).
	live []int
	// terminal are the finished tasks, whose protocol files the terminal
	// sweep removes.
	terminal []int
	// parked are the merged-branch sweep's candidates: parked tasks that
	// had a session.
	parked []int
	// forge are the submitted and merging tasks the forge sweep follows.
	forge []int
	// picking are the attempt groups picked by the gate with a step left
	// (the summary's attempts_picking).
	picking []int
	// gen numbers a kept view, so that a sweep can tell it saw this very
	// listing on its last pass; 0 is a caller's list, never seen again.
	gen uint64
	// transient says a record could not be read for a reason that may
	// pass (gitstore.TransientReadError).
	transient bool

	// Built on first use, for kept views only (a caller's list is looked
	// at once, and a scan costs less than a map then).
	terminalSet map[string]int
	byID        map[string]int
}

// newView sorts entries into the sweeps' lists. It is the one walk over
// every task; Pass does it only when a task ref moved.
func newView(entries []task.Entry, gen uint64) *view {
	v := &view{entries: entries, gen: gen}
	for i := range entries {
		e := &entries[i]
		if e.Err != nil {
			v.transient = v.transient || wire.TransientReadError(e.Err)
			continue
		}
		if sweepable(e) {
			v.live = append(v.live, i)
		}
		switch {
		case e.Status.IsTerminal():
			v.terminal = append(v.terminal, i)
		case lifecycle.ParkedStatus(e.Status) && hasSession(e):
			v.parked = append(v.parked, i)
		}
		if e.Status == machine.Submitted || e.Status == machine.Merging {
			v.forge = append(v.forge, i)
		}
		if e.Status == machine.Backlog && bytes.Contains(e.JSON, []byte(`"attempts_picking":true`)) {
			v.picking = append(v.picking, i)
		}
	}
	return v
}

// finishedAmong returns the finished tasks among ran, the names of the
// protocol directories. A caller's list has its finished tasks probed
// against ran; a kept view keeps the set of them, so a pass costs the
// few directories, not the many finished tasks.
func (v *view) finishedAmong(ran map[string]bool) []string {
	var out []string
	if v.gen == 0 || len(v.terminal) <= len(ran) {
		for _, i := range v.terminal {
			if id := v.entries[i].ID; ran[id] {
				out = append(out, id)
			}
		}
		return out
	}
	if v.terminalSet == nil {
		v.terminalSet = make(map[string]int, len(v.terminal))
		for _, i := range v.terminal {
			v.terminalSet[v.entries[i].ID] = i
		}
	}
	var at []int
	for id := range ran {
		if i, ok := v.terminalSet[id]; ok {
			at = append(at, i)
		}
	}
	slices.Sort(at) // the list's order, as the scan above gives
	for _, i := range at {
		out = append(out, v.entries[i].ID)
	}
	return out
}

// withSession returns the entries of the wanted ids that had a session:
// the parents the merged-branch sweep compares candidates with.
func (v *view) withSession(wanted map[string]*mergeFields, fn func(e *task.Entry)) {
	if v.gen == 0 {
		for i := range v.entries {
			e := &v.entries[i]
			if _, ok := wanted[e.ID]; ok && e.Err == nil && hasSession(e) {
				fn(e)
			}
		}
		return
	}
	if v.byID == nil {
		v.byID = make(map[string]int, len(v.entries))
		for i := range v.entries {
			v.byID[v.entries[i].ID] = i
		}
	}
	for id := range wanted {
		if i, ok := v.byID[id]; ok {
			if e := &v.entries[i]; e.Err == nil && hasSession(e) {
				fn(e)
			}
		}
	}
}

// kept is the view Pass keeps between passes, with the ref stamp it was
// listed under.
type kept struct {
	mu sync.Mutex // held for a whole Pass: passes of one reconciler take turns
	v  *view
	// stamp is the stamp of the task refs read before the listing, and
	// settled says it was old enough then to be trusted when it is seen
	// again (see gitrepo.Location.RefStamp).
	stamp    string
	settled  bool
	gen      uint64
	listedAt time.Time
}

// Pass runs one reconcile pass, as Sweep does over a fresh Store.List,
// but reads the tasks itself and keeps what it read for the passes
// after: while no task ref moves (two stats tell), a pass visits only the
// tasks whose status can change without a human (working, interrupted,
// merging, pairing, and the rare ones a sweep moves), reads the protocol
// directories of tasks that ran turns, and runs the merged-branch and
// forge sweeps only when what they read moved or a forge is due. A
// moved ref makes the pass list again, from the list cache.
func (r *Reconciler) Pass(ctx context.Context) ([]Action, error) {
	r.pass.mu.Lock()
	defer r.pass.mu.Unlock()
	v, err := r.current()
	if err != nil {
		return nil, err
	}
	return r.sweep(ctx, v)
}

// keptMaxAge bounds how long Pass trusts a kept listing. The stamp sees
// every ref git or lazy moves (through a lock file and a rename), but not
// a ref file rewritten in place by hand or by a tool, nor a directory
// whose time was set back; a listing this old is read again anyway, from
// the list cache.
const keptMaxAge = 30 * time.Second

// current returns the kept view if no task ref moved since it was
// listed, or lists the tasks again.
func (r *Reconciler) current() (*view, error) {
	k := &r.pass
	sw := r.stamper()
	stamp, newest, err := sw.Stamp(sw.taskRefFiles...)
	if err == nil && k.v != nil && k.settled && stamp == k.stamp && r.now().Sub(k.listedAt) < keptMaxAge {
		return k.v, nil
	}
	// Whether this stamp may be trusted on a later pass is judged now,
	// before the list: a ref moved after this moment lands in a later
	// timestamp tick than newest, so it changes the stamp.
	settled := err == nil && time.Since(newest) > racyWindow
	entries, lerr := r.store().List()
	if lerr != nil {
		k.v = nil
		return nil, lerr
	}
	r.lists.Add(1)
	r.scanned.Add(int64(len(entries)))
	k.gen++
	k.v, k.stamp, k.settled, k.listedAt = newView(entries, k.gen), stamp, settled, r.now()
	if k.v.transient {
		// A record that could not be read for now is read again by the
		// next list though its ref stays: trusting the stamp would hide
		// it (a working task among them would never be judged).
		k.settled = false
	}
	return k.v, nil
}

// Listing returns every task of the listing the last Pass kept, with
// the listing's generation: a generation seen before means no task ref
// moved since, so a caller that keeps its own view of the tasks (the
// daemon's notifications) has nothing to look at. The entries are
// shared: read them, never change them. Nil before the first Pass.
func (r *Reconciler) Listing() ([]task.Entry, uint64) {
	r.pass.mu.Lock()
	defer r.pass.mu.Unlock()
	if r.pass.v == nil {
		return nil, 0
	}
	return r.pass.v.entries, r.pass.v.gen
}

// Watched returns, from the listing the last Pass kept, the tasks a
// daemon reports on and stays up for: those whose status can change
// without a human (working, interrupted, pairing, merging, zombie,
// blocked without a session) and the submitted ones the forge sync
// follows, in the list's order. It costs in proportion to them, so a
// daemon that passes with Pass need not list every task each tick for
// its own use. Nil before the first Pass.
func (r *Reconciler) Watched() []task.Entry {
	r.pass.mu.Lock()
	defer r.pass.mu.Unlock()
	v := r.pass.v
	if v == nil {
		return nil
	}
	out := make([]task.Entry, 0, len(v.live)+len(v.forge))
	i, j := 0, 0
	for i < len(v.live) || j < len(v.forge) {
		// Both index lists ascend; merging them keeps the list's order
		// and a merging task, which is in both, once.
		var at int
		switch {
		case j == len(v.forge) || (i < len(v.live) && v.live[i] < v.forge[j]):
			at, i = v.live[i], i+1
		case i == len(v.live) || v.forge[j] < v.live[i]:
			at, j = v.forge[j], j+1
		default:
			at, i, j = v.live[i], i+1, j+1
		}
		out = append(out, v.entries[at])
	}
	return out
}
