package runner

import (
	"fmt"
	"time"

	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/pool"
	"github.com/lazyorch/lazy/task"
)

// WaitsForRunner reports whether the pooled task sn waits for a runner
// at now, given the pool's claims as last fetched: it is claimable
// (poolClaimable) and the tasks it waits for are done. Labels and agents
// are left out: this is the figure a scaler reads to decide whether to
// start a runner at all, before any runner says what it offers.
func (s *Service) WaitsForRunner(sn *task.Snapshot, claims map[string]pool.Held, now time.Time) bool {
	_, ok := s.poolClaimable(sn, claims, now)
	return ok && lifecycle.DepsDone(s.Env.Store, sn) == nil
}

// poolClaimable is the rule a runner choosing work and the scaler's
// count share: sn is pooled and not finished, no live claim holds it (a
// claim lazy did not accept holds nothing), it is a backlog task or one
// whose claim ran out, and it has work for a runner (PoolWork). It
// returns the claim that ran out, which a take-over is fenced on (nil
// for a task never claimed).
func (s *Service) poolClaimable(sn *task.Snapshot, claims map[string]pool.Held, now time.Time) (*pool.Held, bool) {
	if sn.Task.Pool == nil || sn.Task.Status.IsTerminal() {
		return nil, false
	}
	var prev *pool.Held
	if h, claimed := claims[sn.Task.ID]; claimed {
		if h.Live(now) {
			return nil, false
		}
		prev = &h
	} else if sn.Task.Status != machine.Backlog {
		return nil, false // started outside the pool: no runner takes it
	}
	return prev, s.PoolWork(sn)
}

// WaitingCount is the number of pooled tasks that wait for a runner at
// now (WaitsForRunner): what lazy pool --count prints for a scaler. It
// reads the local records and the claims given, so its cost is bounded
// by the number of tasks here and pool.MaxRefs claims, whatever the
// remote holds.
func (s *Service) WaitingCount(claims map[string]pool.Held, now time.Time) (int, error) {
	entries, err := s.Env.Store.List()
	if err != nil {
		return 0, fmt.Errorf("list the tasks: %w", err)
	}
	n := 0
	for i := range entries {
		en := &entries[i]
		if en.Err != nil || en.Status.IsTerminal() {
			continue
		}
		sn, err := s.Env.Store.Load(en.ID)
		if err != nil {
			continue // a record lazy cannot read is no runner's work
		}
		if s.WaitsForRunner(sn, claims, now) {
			n++
		}
	}
	return n, nil
}
