package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/pool"
	"github.com/lazyorch/lazy/task"
)

// trustedGeneration is the newest claim generation this machine trusts
// for a pooled task: the one stamped on its record by the runner that
// last wrote under a claim, when it is in range. A claim lazy does not
// accept is followed by the generation after it, never after the
// claim's own (which anyone could have set to 2^64-1).
func trustedGeneration(sn *task.Snapshot) uint64 {
	if sn == nil || sn.Task.Pool == nil || sn.Task.Pool.Generation >= pool.MaxGeneration {
		return 0
	}
	return sn.Task.Pool.Generation
}

// ReleaseOptions configure lazy pool release.
type ReleaseOptions struct {
	Remote string
	// MaxLease is lazy.pool.maxLease (0: pool.DefaultMaxLease).
	MaxLease time.Duration
	// Force releases a claim a runner holds live.
	Force bool
	// Generation, when set, is the generation the human saw: the claim
	// is released only if it is still at it.
	Generation uint64
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// ClaimRelease is what lazy pool release did: the claim as it stood and
// the released claim that replaced it.
type ClaimRelease struct {
	Task   string    `json:"task"`
	Slug   string    `json:"slug,omitempty"`
	Remote string    `json:"remote"`
	Was    pool.Held `json:"was"`
	Now    pool.Held `json:"now"`
}

// ErrHumanOnly refuses a decision only a human may take.
var ErrHumanOnly = errors.New("only a human may do this")

// ReleaseClaim frees a pooled task's claim on the remote: a human's
// decision (a claim lazy does not accept, a runner that is gone, a lease
// that will not run out), never an agent's. It fetches the pool, and
// replaces the claim it finds with a released one at the next
// generation, leased on that claim's commit: if a runner renewed or took
// the claim between the fetch and the push, the push is refused whole and
// nothing changes. A claim a runner holds live is released only with
// Force: that runner is then fenced (its next renewal and result push are
// refused), ends its turn at its next round and pushes nothing more.
func (s *Service) ReleaseClaim(ctx context.Context, name string, o ReleaseOptions) (*ClaimRelease, error) {
	e := s.Env
	if e.Actor != machine.Human {
		return nil, fmt.Errorf("lazy pool release %s: %w (the actor is %s): releasing a claim can end a runner's turn; ask the human to run it", name, ErrHumanOnly, e.Actor)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	id, slug, sn := name, "", (*task.Snapshot)(nil)
	if rid, err := e.Store.Resolve(name); err == nil {
		id = rid
		if s, err := e.Store.Load(rid); err == nil {
			sn, slug = s, s.Task.Slug
		}
	} else if !task.ValidID(name) {
		return nil, err
	}
	p, err := s.openPool(o.Remote, o.MaxLease)
	if err != nil {
		return nil, err
	}
	if err := p.Fetch(ctx); err != nil {
		return nil, err
	}
	claims, _, err := p.Claims(ctx, now())
	if err != nil {
		return nil, err
	}
	label := id
	if slug != "" {
		label = slug
	}
	h, ok := claims[id]
	switch {
	case !ok:
		return nil, fmt.Errorf("lazy pool release %s: %s has no claim on %s; there is nothing to release", name, label, o.Remote)
	case h.Problem == "" && h.Released:
		return nil, fmt.Errorf("lazy pool release %s: its claim is released already (generation %d, by %s); any runner may take it", name, h.Generation, h.Runner)
	case o.Generation != 0 && h.Generation != o.Generation:
		return nil, fmt.Errorf("lazy pool release %s: its claim is at generation %d now, not %d; it changed since you looked: run lazy pool and decide again", name, h.Generation, o.Generation)
	case h.Live(now()) && !o.Force:
		return nil, fmt.Errorf("lazy pool release %s: runner %s holds it live (generation %d, lease until %s); releasing it ends that runner's turn at its next round, and nothing it does after is pushed; to do that: lazy pool release --force %s",
			name, h.Runner, h.Generation, h.Expires.UTC().Format(time.RFC3339), name)
	}
	prev := h
	if prev.Problem != "" {
		prev.Generation = trustedGeneration(sn)
	}
	next, err := p.Free(ctx, prev, e.Store.Host(), now())
	if errors.Is(err, pool.ErrLost) {
		return nil, fmt.Errorf("lazy pool release %s: the claim changed on %s while lazy released it (a runner renewed or took it); nothing was changed: run lazy pool and decide again: %w", name, o.Remote, err)
	}
	if err != nil {
		return nil, err
	}
	return &ClaimRelease{Task: id, Slug: slug, Remote: o.Remote, Was: h, Now: next}, nil
}
