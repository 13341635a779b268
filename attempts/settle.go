package attempts

import (
	"context"
	"fmt"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// Choice is attempt k of a group, chosen to land (Choose).
type Choice struct {
	// Group is the attempt group, Attempt the attempt chosen.
	Group, Attempt *task.Snapshot
	// Landed: the attempt landed already (a crash after its merge, say),
	// so Choose settled the group instead and there is nothing to merge;
	// Warnings are what that could not settle.
	Landed   bool
	Warnings []string
}

// Choose is the first step of lazy accept GROUP --attempt K: attempt k
// of group name, to be landed through the normal accept (its gate, its
// place in the target's queue), which then completes the group and
// closes the other attempts (see Settle). Run again after a crash, it
// finishes what the first run left: an attempt already accepted is not
// merged twice (the Choice says Landed, with the group settled).
func (at *Service) Choose(ctx context.Context, name string, k int) (*Choice, error) {
	group, id, err := at.Resolve(name, k)
	if err != nil {
		return nil, err
	}
	a, err := at.Env.Store.Load(id)
	if err != nil {
		return nil, fmt.Errorf("accept %s --attempt %d: its record is not here (lazy pull, or run this where it was started): %w", group.Task.Slug, k, err)
	}
	switch {
	case Landed(a):
		_, warnings, err := at.Settle(ctx, a)
		return &Choice{Group: group, Attempt: a, Landed: true, Warnings: warnings}, err
	case group.Task.Status.IsTerminal():
		return nil, fmt.Errorf("accept %s --attempt %d: the group is %s already (%s); lazy reopen %s first to choose again", group.Task.Slug, k, group.Task.Status, group.Task.Reason, group.Task.Slug)
	case a.Task.Status.IsTerminal():
		return nil, fmt.Errorf("accept %s --attempt %d: attempt %d (%s) is %s (%s); lazy reopen %s first, or choose another attempt", group.Task.Slug, k, k, a.Task.Slug, a.Task.Status, a.Task.Reason, a.Task.Slug)
	}
	return &Choice{Group: group, Attempt: a}, nil
}

// Landed reports whether sn is an attempt that landed, whose
// group is then settled.
func Landed(sn *task.Snapshot) bool {
	return sn != nil && sn.Task.AttemptOf != "" && sn.Task.Status == machine.Complete && sn.Task.Outcome == task.OutcomeAccepted
}

// SettleGroup settles the group of task id when id is an attempt
// that landed (see Settle), and does nothing for any other
// task. lazy accept settles the group itself; this is for the paths
// that complete a task outside it (the reconciler's merged-branch
// sweep, a stranded accept it finishes, a pull request the forge
// merged), which must not leave the group waiting and the other
// attempts running. group is the group if this call completed it.
func (at *Service) SettleGroup(ctx context.Context, id string) (group *task.Snapshot, warnings []string, err error) {
	sn, err := at.Env.Store.Load(id)
	if err != nil || !Landed(sn) {
		return nil, nil, err
	}
	return at.Settle(ctx, sn)
}

// Settle settles the group of attempt a, which just landed:
// the group completes (outcome accepted, the reason naming the attempt)
// and every other open attempt is stopped if it runs and closed with
// "attempt K was chosen". A closed attempt keeps its worktree and branch
// (never destroy work: lazy diff and lazy reopen still reach it). What
// could not be settled comes back as warnings; the landing stands.
// group is the group if this call completed it (nil: it was already).
func (at *Service) Settle(ctx context.Context, a *task.Snapshot) (group *task.Snapshot, warnings []string, err error) {
	e := at.Env
	k, slug := a.Task.Attempt, a.Task.Slug
	var others []string
	unlock, err := e.LockTask(ctx, a.Task.AttemptOf)
	if err != nil {
		return nil, nil, fmt.Errorf("attempt %d (%s) landed, but its group is busy; lazy accept GROUP --attempt %d again finishes it: %w", k, slug, k, err)
	}
	completed := false
	why := fmt.Sprintf("attempt %d was chosen", k)
	sn, _, err := e.Store.Update(ctx, a.Task.AttemptOf, func(s *task.Snapshot) (*task.Op, error) {
		others, completed = nil, false
		why = fmt.Sprintf("attempt %d was chosen", k)
		if p := s.Task.Pick; p.Decided() && p.Proposed == k {
			// The others are closed with the pick's reason, so each
			// says where it ranked.
			why = limitWords(fmt.Sprintf("attempt %d was chosen by the gate (%s)", k, p.Why))
		}
		for _, id := range s.Task.Attempts {
			if id != a.Task.ID {
				others = append(others, id)
			}
		}
		if s.Task.Status == machine.Complete {
			return nil, nil
		}
		if err := machine.Validate(s.Task.Status, machine.Complete, e.Actor); err != nil {
			return nil, fmt.Errorf("attempt %d (%s) landed, but its group cannot complete: %w", k, slug, err)
		}
		now := time.Now().UTC().Truncate(time.Second)
		reason := fmt.Sprintf("attempt %d (%s) landed", k, slug)
		s.Task.Status = machine.Complete
		s.Task.Outcome = task.OutcomeAccepted
		s.Task.Reason = reason
		s.Task.Substate = ""
		s.AddComment(task.Comment{Actor: e.Actor, At: now, Text: "accepted: " + reason})
		completed = true
		return &task.Op{Name: "accept", Actor: e.Actor, Reason: reason}, nil
	})
	unlock()
	if err != nil {
		return nil, nil, err
	}
	if completed {
		group = sn
	}
	for _, id := range others {
		o, err := e.Store.Load(id)
		if err != nil || o.Task.Status.IsTerminal() {
			continue
		}
		if o.Task.Status == machine.Working {
			if _, err := at.Lifecycle.Stop(ctx, id, why); err != nil {
				warnings = append(warnings, fmt.Sprintf("attempt %d (%s) still runs: %v; lazy stop and lazy close it", o.Task.Attempt, o.Task.Slug, err))
				continue
			}
		}
		if _, err := at.Lifecycle.Close(ctx, id, why); err != nil {
			warnings = append(warnings, fmt.Sprintf("attempt %d (%s) was not closed: %v; lazy close %s -m %q closes it", o.Task.Attempt, o.Task.Slug, err, o.Task.Slug, why))
		}
	}
	return group, warnings, nil
}

// SiblingChosen refuses to accept an attempt whose group another attempt
// settled already (one named later in lazy accept A B C, say): landing
// a second way of the same task would put both on the target.
func (at *Service) SiblingChosen(sn *task.Snapshot) error {
	if sn.Task.AttemptOf == "" || Landed(sn) {
		return nil
	}
	g, err := at.Env.Store.Load(sn.Task.AttemptOf)
	if err != nil || g.Task.Status != machine.Complete {
		return nil
	}
	return fmt.Errorf("accept %s: it is attempt %d of %s, which is complete already (%s); lazy reopen %s first to choose again", sn.Task.Slug, sn.Task.Attempt, g.Task.Slug, g.Task.Reason, g.Task.Slug)
}
