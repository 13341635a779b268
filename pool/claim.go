package pool

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrHeld says a task's claim is live: another runner holds it.
var ErrHeld = errors.New("another runner holds it")

// Take claims task for runner until now+lease: a first claim (the ref
// must not exist on the remote) or, when prev is a claim that expired,
// was released or is one lazy does not accept (its Problem is set), its
// next generation, leased on prev's commit. One round trip; exactly one
// of any number of runners racing for it wins, and the others get
// ErrLost. The next generation of a claim lazy did not accept is one
// more than prev.Generation, which Claims leaves at 0 for it: the caller
// may raise it to the newest generation it trusts (the one stamped on
// the task), never to the rejected claim's.
func (r *Remote) Take(ctx context.Context, task, runner string, prev *Held, lease time.Duration, now time.Time) (Held, error) {
	now = now.UTC().Truncate(time.Millisecond)
	c := Claim{Task: task, Runner: runner, Generation: 1, Expires: now.Add(lease), ClaimedAt: now, RenewedAt: now}
	old := ""
	if prev != nil {
		if prev.Live(now) && prev.Runner != runner {
			return Held{}, fmt.Errorf("claim %s: %w (%s, until %s)", task, ErrHeld, prev.Runner, prev.Expires.Format(time.RFC3339))
		}
		gen, err := NextGeneration(prev.Generation)
		if err != nil {
			return Held{}, fmt.Errorf("claim %s: %w", task, err)
		}
		c.Generation, old = gen, prev.Commit
	}
	commit, err := r.WriteClaim(ctx, c)
	if err != nil {
		return Held{}, err
	}
	if err := r.Push(ctx, []Update{{Ref: ClaimsPrefix + task, New: commit, Old: old, Leased: true}}); err != nil {
		return Held{}, fmt.Errorf("claim %s: %w", task, err)
	}
	return Held{Claim: c, Commit: commit}, nil
}

// renewal is the next value of a held claim: the same generation, a
// lease from now.
func (r *Remote) renewal(ctx context.Context, h Held, lease time.Duration, now time.Time) (Held, Update, error) {
	c := h.Claim
	c.RenewedAt, c.Expires = now, now.Add(lease)
	commit, err := r.WriteClaim(ctx, c)
	if err != nil {
		return Held{}, Update{}, err
	}
	return Held{Claim: c, Commit: commit}, Update{Ref: ClaimsPrefix + c.Task, New: commit, Old: h.Commit, Leased: true}, nil
}

// Renew extends every claim in held and republishes the runner in one
// atomic push. If any claim was taken over meanwhile the push is
// refused whole (ErrLost): the caller finds out which by fetching.
func (r *Remote) Renew(ctx context.Context, held []Held, rn Runner, lease time.Duration, now time.Time) ([]Held, error) {
	now = now.UTC().Truncate(time.Millisecond)
	next, ups, err := r.renewals(ctx, held, lease, now)
	if err != nil {
		return nil, err
	}
	rn.Seen = now
	commit, err := r.WriteRunner(ctx, rn)
	if err != nil {
		return nil, err
	}
	// The runner's own record is forced: only this runner writes it.
	ups = append(ups, Update{Ref: RunnersPrefix + rn.ID, New: commit, Force: true})
	if err := r.Push(ctx, ups); err != nil {
		return nil, err
	}
	return next, nil
}

func (r *Remote) renewals(ctx context.Context, held []Held, lease time.Duration, now time.Time) ([]Held, []Update, error) {
	next := make([]Held, 0, len(held))
	ups := make([]Update, 0, len(held)+1)
	for _, h := range held {
		n, u, err := r.renewal(ctx, h, lease, now)
		if err != nil {
			return nil, nil, err
		}
		next, ups = append(next, n), append(ups, u)
	}
	return next, ups, nil
}

// Fenced is an atomic push of a task's results (its record, its branch,
// its log) together with the renewal of the claim they were made under:
// if the claim moved on the remote, none of it lands (ErrLost).
func (r *Remote) Fenced(ctx context.Context, h Held, lease time.Duration, now time.Time, results []Update) (Held, error) {
	next, u, err := r.renewal(ctx, h, lease, now.UTC().Truncate(time.Millisecond))
	if err != nil {
		return Held{}, err
	}
	if err := r.Push(ctx, append([]Update{u}, results...)); err != nil {
		return Held{}, err
	}
	return next, nil
}

// Release lets a held task go: its claim is marked released (leased on
// the holder's commit), so any runner may take it at once.
func (r *Remote) Release(ctx context.Context, h Held, now time.Time) error {
	c := h.Claim
	c.Released, c.RenewedAt = true, now.UTC().Truncate(time.Millisecond)
	commit, err := r.WriteClaim(ctx, c)
	if err != nil {
		return err
	}
	return r.Push(ctx, []Update{{Ref: ClaimsPrefix + c.Task, New: commit, Old: h.Commit, Leased: true}})
}

// Free is a human's release of a task's claim h as last fetched (lazy
// pool release): a released claim at h's next generation, written by
// host by, leased on h's commit, so that it goes through only if the
// claim is still exactly what the human decided on. A runner that
// renewed, released or took the claim over meanwhile makes the push fail
// whole (ErrLost), and nothing changes. Once it lands, the runner that
// held h is fenced: its next renewal or result push is leased on h's
// commit and refused, so it ends its turn and pushes nothing more, and
// any runner may take the task at once.
func (r *Remote) Free(ctx context.Context, h Held, by string, now time.Time) (Held, error) {
	now = now.UTC().Truncate(time.Millisecond)
	gen, err := NextGeneration(h.Generation)
	if err != nil {
		return Held{}, fmt.Errorf("release %s: %w", h.Task, err)
	}
	c := Claim{Task: h.Task, Runner: by, Generation: gen, Expires: now, ClaimedAt: now, RenewedAt: now, Released: true}
	commit, err := r.WriteClaim(ctx, c)
	if err != nil {
		return Held{}, err
	}
	if err := r.Push(ctx, []Update{{Ref: ClaimsPrefix + h.Task, New: commit, Old: h.Commit, Leased: true}}); err != nil {
		return Held{}, fmt.Errorf("release %s: %w", h.Task, err)
	}
	return Held{Claim: c, Commit: commit}, nil
}
