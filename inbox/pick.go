package inbox

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/notify"
	"github.com/lazyorch/lazy/task"
)

// An attempt group picked by the gate (lazy start --attempts N --pick
// gate) answers its blocked attempts itself: while the reconciler picks
// (or lands the pick with --land) nobody needs to act, and once the pick
// is made one decision on the group is what waits, not N reviews. Only
// blocked attempts fold into the group: the pick gates each of them as
// it is. An attempt in conflict or interrupted with no resume left is
// still an item of its own: the pick only ranks it out, and a person's
// answer (approve the files, resume it) is the one way it gets back into
// the running. The rule for the group is task.Task.PickWaits, shared with
// the reconciler's.

// group is what the inbox makes of an attempt group whose pick answers
// its blocked attempts.
type group struct {
	// attempts are the group's own attempt ids: a record that names the
	// group from outside it hides nothing.
	attempts []string
	// item is the group's one item once the pick was made (nil while
	// lazy picks), listed once.
	item   *Item
	listed bool
}

// groupOf is the group whose pick answers blocked attempt sn, or nil
// when sn waits on its own (not a blocked attempt, no pick by the gate
// in force, or a group not readable here: nothing is hidden then).
func (s *Service) groupOf(ctx context.Context, groups map[string]*group, sn *task.Snapshot, now time.Time) *group {
	t := &sn.Task
	if t.AttemptOf == "" || t.Status != machine.Blocked {
		return nil
	}
	g, ok := groups[t.AttemptOf]
	if !ok {
		g = s.loadGroup(ctx, t.AttemptOf, now)
		groups[t.AttemptOf] = g
	}
	if g == nil || !slices.Contains(g.attempts, t.ID) {
		return nil
	}
	return g
}

// loadGroup reads group id and what its pick makes of its attempts.
func (s *Service) loadGroup(ctx context.Context, id string, now time.Time) *group {
	gs, err := s.Store.Load(id)
	if err != nil {
		return nil
	}
	switch gs.Task.PickWaits() {
	case task.PickWaitReconciler:
		return &group{attempts: gs.Task.Attempts}
	case task.PickWaitHuman:
		return &group{attempts: gs.Task.Attempts, item: s.pickItem(ctx, gs, now)}
	}
	return nil
}

// pickItem is the one item of group gs whose pick was made: the attempt
// the gate proposes and the command that lands it, or, when none passed
// or the record names no attempt of the group that waits for review,
// the command that compares them. The ranking's words come from the
// record (built from what the attempts' agents did) and are cleaned; the
// command names only the group's slug or the slug of an attempt the
// group lists, read and checked here.
func (s *Service) pickItem(ctx context.Context, gs *task.Snapshot, now time.Time) *Item {
	t, p := &gs.Task, gs.Task.Pick
	it := &Item{Kind: Pick, TaskID: t.ID, Slug: t.Slug, Title: notify.Clean(t.Title, maxTitle), Status: t.Status,
		Since: p.DecidedAt.UTC().Truncate(time.Second)}
	ranking := notify.Clean(p.Why, maxPickWhy)
	compare := "lazy show " + t.Slug // compares the attempts, each with its gate result
	a, gone := s.proposal(gs)
	switch {
	case p.Proposed == 0:
		it.Command = compare
		it.Why = fmt.Sprintf("the gate picked none of the %d attempts, so nothing lands by itself; compare them (%s) and land one anyway with lazy accept %s --attempt K. The gate's ranking: %s",
			len(t.Attempts), compare, t.Slug, ranking)
	case a == nil:
		it.Command = compare
		it.Why = fmt.Sprintf("the gate's pick names attempt %d, which %s; compare the attempts (%s) and choose one (lazy accept %s --attempt K). The gate's ranking: %s",
			p.Proposed, gone, compare, t.Slug, ranking)
	default:
		it.Proposed, it.Command = a.Task.Slug, "lazy accept "+a.Task.Slug
		it.Why = fmt.Sprintf("the gate proposes attempt %d of %d (%s); accept it, or compare them (%s) and choose another. The gate's ranking: %s",
			p.Proposed, len(t.Attempts), a.Task.Slug, compare, ranking)
		it.Host = notify.Clean(a.Task.Host, maxHost)
		if it.Host == "" && a.Session != nil {
			it.Host = notify.Clean(a.Session.Host, maxHost)
		}
		if a.Task.Pool != nil {
			it.Runner = notify.Clean(a.Task.Pool.Runner, maxHost)
		}
		files, err := s.protectedFiles(ctx, a)
		switch {
		case err != nil:
			it.Why += "; its protected paths could not be checked: " + notify.Clean(err.Error(), 200)
		case len(files) > 0:
			// An accept without the approval is refused: the approval is
			// the answer.
			it.Command, it.Files = it.Command+" --approve-protected", files
			it.Why += "; its change touches protected paths the gate alone may not decide: a human reviews them (lazy diff " + a.Task.Slug + ") and approves"
		}
	}
	if p.Landed != "" {
		it.Why += "; " + notify.Clean(p.Landed, maxPickWhy)
	}
	waited(it, now)
	return it
}

// proposal is the attempt group gs's pick proposes, when it is one of
// the group's attempts and waits for review; else nil and why not.
func (s *Service) proposal(gs *task.Snapshot) (*task.Snapshot, string) {
	k := gs.Task.Pick.Proposed
	if k < 1 || k > len(gs.Task.Attempts) {
		return nil, fmt.Sprintf("the task does not have (it has %d)", len(gs.Task.Attempts))
	}
	a, err := s.Store.Load(gs.Task.Attempts[k-1])
	switch {
	case err != nil:
		return nil, "is not readable here (lazy pull brings it; lazy doctor says why)"
	case a.Task.AttemptOf != gs.Task.ID || a.Task.Attempt != k:
		return nil, "is not one of the task's attempts"
	case a.Task.Status != machine.Blocked:
		return nil, fmt.Sprintf("no longer waits for review (it is %s)", a.Task.Status)
	}
	return a, ""
}

// Notice puts what the inbox's rule for a pick by the gate makes of task
// sn into notify's observation of it, so a notification says what the
// inbox lists and nothing else: a blocked attempt the group's pick
// answers is folded (no item here, no event of its own there), and a
// group whose pick was made and waits on a human gets its one item as
// notify's pick (the proposed attempt's slug read from the store, the
// item's command). A task the rule leaves alone is left as it is.
func (s *Service) Notice(ctx context.Context, sn *task.Snapshot, o *notify.Observation) {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	t := &sn.Task
	if t.AttemptOf != "" {
		o.Folded = s.groupOf(ctx, map[string]*group{}, sn, now) != nil
		return
	}
	if t.PickWaits() != task.PickWaitHuman {
		return
	}
	it := s.pickItem(ctx, sn, now)
	o.Pick = &notify.PickNotice{DecidedAt: t.Pick.DecidedAt, Attempt: t.Pick.Proposed, Of: len(t.Attempts),
		Proposed: it.Proposed, Command: it.Command, LandFailed: t.Pick.Landed != ""}
}

// Folded reports whether task id is a blocked attempt its group's pick
// by the gate answers (see Notice): it is told to nobody on its own.
func (s *Service) Folded(ctx context.Context, id string) bool {
	sn, err := s.Store.Load(id)
	if err != nil || sn.Task.AttemptOf == "" {
		return false
	}
	var o notify.Observation
	s.Notice(ctx, sn, &o)
	return o.Folded
}
