package runner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/lazyorch/lazy/pool"
)

// The leases a runner holds are renewed by a goroutine of their own, on
// a ticker of their own (renewLoop), not between the steps of a round: a
// round's git work (a pull, a start that creates a worktree, a push of a
// large branch) can take longer than a lease, and a renewal that waited
// for it let other runners take over tasks whose turns still ran here.
// The renewer and the round share only r.mu, which guards the runner's
// memory (the claims held) and is never held across a git call, so no
// git work of the round can hold a renewal up.
//
// Both push the same claim refs: the renewer renews them, the round
// pushes results fenced by them and releases them. Each push is leased on
// the commit it last saw, so when the two cross one of them is refused
// (pool.ErrLost) though no other runner touched the claim; so is a push
// after one whose answer was lost (a timeout) though the remote took it.
// Such a refusal is told from a real loss by the generation: settle reads
// the claim, and one still this runner's at the generation it holds is
// taken as the remote has it and the push tried again. Only a claim at
// another generation, another runner's or released is lost.

// heldIDs lists the tasks held here, in id order.
func (r *runner) heldIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.held))
	for id := range r.held {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// holds is the claim of id held here.
func (r *runner) holds(id string) (pool.Held, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.held[id]
	return h, ok
}

func (r *runner) setHeld(id string, h pool.Held) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held[id] = h
}

// drop lets id go here; it reports whether it was held.
func (r *runner) drop(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.held[id]
	delete(r.held, id)
	return ok
}

// claimRetries bounds how often a round's push of a claim is tried again
// after a renewal here moved the claim under it.
const claimRetries = 3

// claimPush runs one of the round's pushes of id's claim (a fenced
// result push, a release) on the claim as held now. When the remote
// refuses it because the claim moved, and the remote still holds this
// runner's claim at its generation (its own renewal moved it, or a push
// whose answer was lost), it is tried again on that claim. The claim op
// returns is held from then on; a release lets the task go.
func (r *runner) claimPush(ctx context.Context, id string, release bool, op func(h pool.Held) (pool.Held, error)) error {
	for try := 1; ; try++ {
		h, ok := r.holds(id)
		if !ok {
			return pool.ErrLost
		}
		next, err := op(h)
		r.mu.Lock()
		if err == nil {
			if release {
				delete(r.held, id)
			} else if _, still := r.held[id]; still {
				r.held[id] = next
			}
			r.mu.Unlock()
			return nil
		}
		wait := r.renewing
		r.mu.Unlock()
		if !errors.Is(err, pool.ErrLost) || try == claimRetries {
			return err
		}
		if wait != nil {
			<-wait // the renewer's push in flight, bounded by its timeout
		}
		if cur, ok := r.holds(id); ok && cur.Commit != h.Commit {
			continue // the renewer moved it: try on its claim
		}
		lost, serr := r.settle(ctx, "round", []string{id})
		if serr != nil {
			return err
		}
		if _, gone := lost[id]; gone {
			return err
		}
	}
}

// settle reads the claims of ids (held here) as the remote has them
// now. A claim still this runner's at the generation held is held as
// the remote has it (a renewal or push of this runner whose answer was
// lost, or that crossed another of its pushes, moved it); any other is
// returned: the claim is lost, and what holds the task now.
//
// The round and the renewer each read into refs of their own (reader):
// a fetch beside another into the same refs fails on its ref locks.
func (r *runner) settle(ctx context.Context, reader string, ids []string) (map[string]pool.Held, error) {
	claims, err := r.p.Current(ctx, reader, r.o.Now())
	if err != nil {
		return nil, err
	}
	lost := map[string]pool.Held{}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		h, ok := r.held[id]
		if !ok {
			continue
		}
		c, ok := claims[id]
		if ok && c.Problem == "" && !c.Released && c.Runner == h.Runner && c.Generation == h.Generation {
			r.held[id] = c
			continue
		}
		lost[id] = c
	}
	return lost, nil
}

// renewEvery is how often the renewer pushes: a quarter of the lease
// (Options.RenewEvery in tests), so a lease survives two failed renewals.
func (r *runner) renewEvery() time.Duration {
	if r.o.RenewEvery > 0 {
		return r.o.RenewEvery
	}
	return r.o.Lease / 4
}

// startRenewer starts the renewer; r.stopRenewer ends it and waits for
// it. A push in flight is let finish: cut off, its answer would be lost
// while the remote may have taken it.
func (r *runner) startRenewer(ctx context.Context) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.renewEvery())
		defer t.Stop()
		for {
			r.renewNow(ctx)
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	r.stopRenewer = func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

// renewNow extends every lease held here, with the runner's record, in
// one push. A claim the remote no longer holds for this runner (released
// by a human, taken over after its lease ran out) is lost: its turn here
// is ended at once, instead of running on for nothing.
func (r *runner) renewNow(ctx context.Context) {
	// A push that hangs is given up on after a lease: a renewal that
	// late is of no use, and the next one starts.
	ctx, cancel := context.WithTimeout(ctx, r.o.Lease)
	defer cancel()
	var err error
	for try := 1; try <= renewTries; try++ {
		if err = r.renewOnce(ctx); err == nil {
			r.lastRenewErr = ""
			return
		}
		if !errors.Is(err, pool.ErrLost) {
			break
		}
		// Refused whole: a claim moved. A push of the round's crossing
		// this one, or this runner's own whose answer was lost, moves
		// it too; only a claim at another generation is lost.
		lost, serr := r.settle(ctx, "renewer", r.heldIDs())
		if serr != nil {
			err = fmt.Errorf("a claim moved, and the pool could not be read: %w", serr)
			break
		}
		for id, now := range lost {
			r.lose(context.WithoutCancel(ctx), id, now)
		}
	}
	if msg := err.Error(); msg != r.lastRenewErr {
		r.lastRenewErr = msg
		r.say("renew the leases (trying again every %s): %v", r.renewEvery(), err)
	}
}

// renewTries bounds the renewal pushes of one tick that the round's
// pushes cross.
const renewTries = 3

// renewOnce is one renewal push of every claim held here.
func (r *runner) renewOnce(ctx context.Context) error {
	r.mu.Lock()
	held := make([]pool.Held, 0, len(r.held))
	for _, h := range r.held {
		held = append(held, h)
	}
	rec := r.recordLocked(false)
	r.renewing = make(chan struct{})
	r.mu.Unlock()
	next, err := r.p.Renew(ctx, held, rec, r.o.Lease, r.o.Now())
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.renewing)
	r.renewing = nil
	if err != nil {
		return err
	}
	for i, h := range next {
		if cur, ok := r.held[h.Task]; ok && i < len(held) && cur.Commit == held[i].Commit {
			r.held[h.Task] = h
		}
	}
	r.renewals++
	return nil
}
