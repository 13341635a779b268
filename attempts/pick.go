package attempts

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// Best-of-N by the gate (lazy start --attempts N --pick gate): each
// attempt is gated, unattended, on the tree it would land when it parks
// after its turn; once every attempt has parked and been gated (or has
// failed or stopped), the attempts are ranked by the declared rule and
// the best is proposed to the human, or landed through the normal accept
// with --land. The gate that runs is the target's (landing reads it at
// the target's tip, never from the attempt's branch), and the landing
// gates the tree again unless this machine's own mark says it passed, so
// nothing an attempt's record says lets anything land.

// Gater runs the target's merge gate on the tree an accept of attempt
// id would land and records the run on the attempt's gate record
// (landing.Gates.Gate, through wire).
//
// Parallel is how many of those runs may go at once (lazy.gate.parallel,
// read as the merge queue reads it): a pick gates the attempts ready for
// it concurrently, up to that many.
type Gater interface {
	GateAttempt(ctx context.Context, id string) (GateResult, error)
	Parallel() int
}

// GateResult is what one gate run said of an attempt's tree.
type GateResult struct {
	// NoGate: the target names no gate command.
	NoGate bool
	Passed bool
	// Run is the run's id, BranchTip the attempt's tip it gated, Failed
	// the command that failed.
	Run, BranchTip, Failed string
}

// Lander lands attempt k of a group through the normal accept (its
// queue, its gate), which settles the group and closes the others
// (landing.Service.AcceptAttempt, through wire).
type Lander interface {
	LandAttempt(ctx context.Context, group string, k int) error
}

// Pick reads how the attempts of a start are chosen: "" or "human" (a
// human reads the comparison) or "gate"; anything else is refused in one
// sentence naming the values.
func Pick(v string) (string, error) {
	switch v {
	case "", task.PickHuman:
		return task.PickHuman, nil
	case task.PickGate:
		return task.PickGate, nil
	}
	return "", fmt.Errorf("--pick %.40q: attempts are picked by a human (human, the default) or by the merge gate (gate); give one of those", v)
}

// Candidate is one attempt as the ranking sees it.
type Candidate struct {
	K int
	// Passed: the target's gate passed on the tree the attempt would
	// land. Out says why an attempt that did not pass is out of the
	// running ("failed the gate", "was stopped").
	Passed bool
	Out    string
	// Cost is what its turns cost in dollars when CostKnown (see CostOf).
	Cost      float64
	CostKnown bool
	// Lines is its diff's lines added plus deleted when LinesKnown.
	Lines      int
	LinesKnown bool
}

// CostOf is what an attempt's turns cost, as the ranking believes it:
// known only for a figure lazy could write (finite, not negative, within
// lazy's largest amount), unflagged and fully priced. A figure from a
// pulled or agent-written record that is absurd (NaN, Inf, 1e308, below
// zero) is unknown, which ranks last, so it can never win.
func CostOf(u *task.Usage) (float64, bool) {
	if !u.Valid() || u.Unpriced > 0 || task.CheckUSD("", u.CostUSD) != nil {
		return 0, false
	}
	return u.CostUSD, true
}

// Rank orders the candidates by the declared rule: gate passed first,
// then lower cost (an unknown cost after every known one), then the
// smaller diff (lines added plus deleted; unknown last), then the lower
// attempt number. It returns a sorted copy.
func Rank(cs []Candidate) []Candidate {
	out := slices.Clone(cs)
	slices.SortStableFunc(out, func(a, b Candidate) int {
		if a.Passed != b.Passed {
			if a.Passed {
				return -1
			}
			return 1
		}
		if c := knownFirst(a.CostKnown, b.CostKnown, a.Cost, b.Cost); c != 0 {
			return c
		}
		if c := knownFirst(a.LinesKnown, b.LinesKnown, float64(a.Lines), float64(b.Lines)); c != 0 {
			return c
		}
		return cmp.Compare(a.K, b.K)
	})
	return out
}

// knownFirst orders a known figure before an unknown one, then the
// smaller first.
func knownFirst(ak, bk bool, a, b float64) int {
	switch {
	case ak && !bk:
		return -1
	case !ak && bk:
		return 1
	case !ak:
		return 0
	}
	return cmp.Compare(a, b)
}

// CostWords is a cost as the pick says it: "$0.12", "cost unknown".
func CostWords(c Candidate) string {
	if !c.CostKnown {
		return "cost unknown"
	}
	if c.Cost > 0 && c.Cost < 0.01 {
		return fmt.Sprintf("$%.4f", c.Cost)
	}
	return fmt.Sprintf("$%.2f", c.Cost)
}

// linesWords is "14 lines", or "diff unknown".
func linesWords(c Candidate) string {
	if !c.LinesKnown {
		return "diff unknown"
	}
	if c.Lines == 1 {
		return "1 line"
	}
	return fmt.Sprintf("%d lines", c.Lines)
}

// Decide ranks the candidates and says the pick in words: the attempt
// proposed (0 when none passed the gate) and why, naming each other
// attempt's place ("attempt 2: gate passed, $0.12, 14 lines; attempt 1
// failed the gate; attempt 3 cost more").
func Decide(cs []Candidate) (proposed int, why string) {
	ranked := Rank(cs)
	if len(ranked) == 0 {
		return 0, "no attempt to pick from"
	}
	var parts []string
	best := ranked[0]
	if best.Passed {
		proposed = best.K
		parts = append(parts, fmt.Sprintf("attempt %d: gate passed, %s, %s", best.K, CostWords(best), linesWords(best)))
	}
	for _, c := range ranked {
		if c.K == proposed {
			continue
		}
		switch {
		case !c.Passed:
			parts = append(parts, fmt.Sprintf("attempt %d %s", c.K, c.Out))
		case !c.CostKnown && best.CostKnown:
			parts = append(parts, fmt.Sprintf("attempt %d passed, cost unknown", c.K))
		case c.CostKnown && best.CostKnown && c.Cost > best.Cost:
			parts = append(parts, fmt.Sprintf("attempt %d cost more (%s)", c.K, CostWords(c)))
		case c.LinesKnown && best.LinesKnown && c.Lines > best.Lines || !c.LinesKnown && best.LinesKnown:
			same := ""
			if c.CostKnown {
				same = "cost the same and "
			}
			parts = append(parts, fmt.Sprintf("attempt %d %schanged more (%s)", c.K, same, linesWords(c)))
		default:
			parts = append(parts, fmt.Sprintf("attempt %d tied (the lower number wins)", c.K))
		}
	}
	why = strings.Join(parts, "; ")
	if proposed == 0 {
		why = "no attempt passed the gate: " + why
	}
	if len(why) > task.MaxPickWhy {
		why = why[:task.MaxPickWhy-3] + "..."
	}
	return proposed, why
}

// PickOutcome is what one PickStep did for a group.
type PickOutcome struct {
	// Slug is the group's.
	Slug string
	// Gated are the attempts gated by this step.
	Gated []int
	// Decided: this step made the pick (Proposed, Why as recorded);
	// Landed: it landed the proposal (--land), or LandErr says why not.
	Decided  bool
	Proposed int
	Why      string
	Landed   bool
	LandErr  error
}

// Picking reports whether group sn waits for a pick by the gate that a
// step can move on: not decided yet, or decided with --land and not
// landed.
func Picking(sn *task.Snapshot) bool {
	return sn.Task.PickWaits() == task.PickWaitReconciler
}

// PickStep moves the pick by the gate of group id one step, unattended
// (the reconciler calls it each pass for the groups still picking):
// each attempt parked after its turn is gated on the tree it would land
// (once per branch tip; the attempts ready in one step are gated at once,
// up to lazy.gate.parallel runs); when every attempt has been gated or has failed
// or stopped, the attempts are ranked (Decide) and the pick recorded on
// the group; with --land the proposal then lands through the normal
// accept. Run again after a crash, it goes on where it stopped. It does
// nothing for a group that is not picking.
func (at *Service) PickStep(ctx context.Context, id string) (*PickOutcome, error) {
	e := at.Env
	g, err := e.Store.Load(id)
	if err != nil {
		return nil, err
	}
	if !Picking(g) {
		return nil, nil
	}
	out := &PickOutcome{Slug: g.Task.Slug}
	if !g.Task.Pick.Decided() {
		cs, pending, err := at.judge(ctx, g, out)
		if err != nil || pending {
			return out, err
		}
		proposed, why := Decide(cs)
		if g, err = at.recordPick(ctx, id, proposed, why); err != nil {
			return out, err
		}
		if g == nil {
			return out, nil // another step decided meanwhile
		}
		out.Decided, out.Proposed, out.Why = true, proposed, why
	}
	p := g.Task.Pick
	if !p.Land || p.Proposed == 0 || p.Landed != "" || at.Lander == nil {
		return out, nil
	}
	out.LandErr = at.Lander.LandAttempt(ctx, id, p.Proposed)
	out.Landed = out.LandErr == nil
	note := fmt.Sprintf("attempt %d landed", p.Proposed)
	if out.LandErr != nil {
		note = fmt.Sprintf("attempt %d did not land: %v", p.Proposed, out.LandErr)
	}
	if _, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Pick == nil || s.Task.Pick.Landed != "" {
			return nil, nil
		}
		s.Task.Pick.Landed = limitWords(note)
		return &task.Op{Name: "attempts-pick", Actor: e.Actor, Reason: "pick landed"}, nil
	}); err != nil {
		return out, err
	}
	return out, nil
}

// limitWords cuts s to what a pick keeps.
func limitWords(s string) string {
	if len(s) > task.MaxPickWhy {
		return s[:task.MaxPickWhy-3] + "..."
	}
	return s
}

// judge gates each parked attempt not gated at its branch tip yet, and
// returns the candidates once every attempt is judged (pending while one
// still runs, waits to start, or is being landed). The attempts to gate
// are gated at once, up to the Gater's Parallel runs (lazy.gate.parallel,
// as the merge queue's train), so N attempts cost one gate's time rather
// than N when there is room for them.
func (at *Service) judge(ctx context.Context, g *task.Snapshot, out *PickOutcome) ([]Candidate, bool, error) {
	e := at.Env
	var cs []Candidate
	var jobs []gateJob
	pending := false
	for i, aid := range g.Task.Attempts {
		k := i + 1
		c := Candidate{K: k}
		a, err := e.Store.Load(aid)
		if err != nil {
			// Not created yet (Start records the group first), or not
			// pulled here: the pick waits for it rather than rank it out.
			pending = true
			continue
		}
		c.Cost, c.CostKnown = CostOf(a.Task.Usage)
		switch st := a.Task.Status; {
		case st == machine.Working || st == machine.Backlog || st == machine.Pairing || st == machine.Merging || st == machine.Zombie:
			pending = true
			continue
		case st == machine.Conflict:
			c.Out = "has file-permission violations pending"
		case st == machine.Interrupted:
			c.Out = "was interrupted"
		case st.IsTerminal():
			c.Out = "was " + closedWord(a)
		case a.Session == nil:
			c.Out = "has no work here"
		}
		if c.Out != "" {
			cs = append(cs, c)
			continue
		}
		r, _, err := at.review().Measure(ctx, a, "no work")
		if err != nil {
			c.Out = "has no work to gate"
			cs = append(cs, c)
			continue
		}
		if d, err := at.worktrees().Numstat(ctx, e.Dir(), r.MergeBase, r.BranchSHA); err == nil {
			c.Lines, c.LinesKnown = d.Additions+d.Deletions, true
		}
		if c.LinesKnown && c.Lines == 0 {
			c.Out = "changed nothing"
			cs = append(cs, c)
			continue
		}
		cs = append(cs, c)
		if res := g.Task.Pick.GateOf(k); res != nil && res.BranchTip == r.BranchSHA {
			judged(&cs[len(cs)-1], res, a.Task.Slug)
			continue
		}
		jobs = append(jobs, gateJob{at: len(cs) - 1, k: k, id: aid, slug: a.Task.Slug, tip: r.BranchSHA})
	}
	if len(jobs) == 0 {
		return cs, pending, nil
	}
	if at.Gater == nil {
		return nil, true, fmt.Errorf("pick %s: no gate to run here", g.Task.Slug)
	}
	recs, err := at.gateAll(ctx, g.Task.ID, jobs)
	for j, rec := range recs {
		if rec == nil {
			continue // not recorded: the next step gates it again
		}
		out.Gated = append(out.Gated, jobs[j].k)
		judged(&cs[jobs[j].at], rec, jobs[j].slug)
		if rec.BranchTip != jobs[j].tip {
			pending = true // the branch moved while it was gated
		}
	}
	if err != nil {
		return nil, true, err
	}
	return cs, pending, nil
}

// gateJob is one attempt judge gates: candidate cs[at], attempt k (task
// id, slug) at branch tip tip.
type gateJob struct {
	at, k         int
	id, slug, tip string
}

// gateAll gates the jobs, up to the Gater's Parallel runs at once, and
// records each result on group id as soon as its run ends (recordGated,
// a compare-and-swap of its own), so a crash midway loses only the runs
// still going and the next step gates just those. recs[j] is job j's
// recorded result, nil when it could not be recorded (the error says
// why); it returns once every run has ended.
func (at *Service) gateAll(ctx context.Context, id string, jobs []gateJob) ([]*task.AttemptGate, error) {
	recs := make([]*task.AttemptGate, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, at.gateParallel())
	var wg sync.WaitGroup
	for j, job := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			rec := at.gateOne(ctx, job)
			if err := at.recordGated(ctx, id, rec); err != nil {
				errs[j] = err
				return
			}
			recs[j] = &rec
		})
	}
	wg.Wait()
	return recs, errors.Join(errs...)
}

// gateParallel is how many pick gates may run at once: the Gater's
// Parallel, at least 1.
func (at *Service) gateParallel() int {
	return max(1, at.Gater.Parallel())
}

// gateOne runs the gate on job's attempt and says its result as the
// group records it.
func (at *Service) gateOne(ctx context.Context, job gateJob) task.AttemptGate {
	gr, err := at.Gater.GateAttempt(ctx, job.id)
	rec := task.AttemptGate{Attempt: job.k, BranchTip: job.tip}
	switch {
	case err != nil:
		rec.State = task.PickGateError
	case gr.NoGate:
		rec.State = task.PickNoGate
	case gr.Passed:
		rec.State, rec.Run = task.GatePassed, gr.Run
	default:
		rec.State, rec.Run, rec.Failed = task.GateFailed, gr.Run, limitFailed(gr.Failed)
	}
	if gr.BranchTip != "" {
		rec.BranchTip = gr.BranchTip
	}
	return rec
}

// judged sets candidate c's verdict from its attempt's gate result (slug
// names the attempt in the words).
func judged(c *Candidate, res *task.AttemptGate, slug string) {
	switch res.State {
	case task.GatePassed:
		c.Passed = true
	case task.GateFailed:
		c.Out = "failed the gate"
	case task.PickNoGate:
		c.Out = "was not gated (the target names no gate command: git config lazy.gate or .lazy/gate)"
	default:
		c.Out = "could not be gated (lazy gate " + slug + " says why)"
	}
}

// closedWord is how an attempt that ended is named in the pick.
func closedWord(a *task.Snapshot) string {
	switch a.Task.Outcome {
	case task.OutcomeAccepted:
		return "accepted"
	case task.OutcomeRejected:
		return "rejected"
	}
	return "closed"
}

// limitFailed bounds the failing command a pick keeps.
func limitFailed(s string) string {
	if len(s) > 1024 {
		return s[:1021] + "..."
	}
	return s
}

// recordGated records attempt rec.Attempt's gate result on the group.
func (at *Service) recordGated(ctx context.Context, id string, rec task.AttemptGate) error {
	_, _, err := at.Env.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		p := s.Task.Pick
		if p == nil || p.Decided() {
			return nil, nil
		}
		p.Gated = slices.DeleteFunc(p.Gated, func(g task.AttemptGate) bool { return g.Attempt == rec.Attempt })
		p.Gated = append(p.Gated, rec)
		slices.SortFunc(p.Gated, func(a, b task.AttemptGate) int { return cmp.Compare(a.Attempt, b.Attempt) })
		return &task.Op{Name: "attempts-pick", Actor: at.Env.Actor, Reason: fmt.Sprintf("attempt %d gated: %s", rec.Attempt, rec.State)}, nil
	})
	return err
}

// recordPick records the pick on the group, with a comment saying it
// and the command that lands it; nil when another step decided first.
func (at *Service) recordPick(ctx context.Context, id string, proposed int, why string) (*task.Snapshot, error) {
	e := at.Env
	decided := false
	sn, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		decided = false
		p := s.Task.Pick
		if p == nil || p.Decided() || s.Task.Status.IsTerminal() {
			return nil, nil
		}
		now := time.Now().UTC().Truncate(time.Second)
		p.DecidedAt, p.Proposed, p.Why = now, proposed, why
		s.AddComment(task.Comment{Actor: e.Actor, At: now, Text: PickLine(s.Task.Slug, p)})
		decided = true
		return &task.Op{Name: "attempts-pick", Actor: e.Actor, Reason: fmt.Sprintf("picked attempt %d", proposed)}, nil
	})
	if err != nil || !decided {
		return nil, err
	}
	return sn, nil
}

// PickLine is the pick in one line for every surface: "picked by the
// gate: attempt 2: gate passed, ...; lazy accept T --attempt 2 lands
// it", or that none passed and nothing lands. "" while nothing was
// decided.
func PickLine(group string, p *task.AttemptPick) string {
	switch {
	case p == nil || p.Rule != task.PickGate:
		return ""
	case !p.Decided():
		return "picked by the gate once every attempt has parked and been gated"
	case p.Proposed == 0:
		return "picked by the gate: " + p.Why + "; nothing lands (lazy accept " + group + " --attempt K lands one anyway, through the gate)"
	case p.Landed != "":
		return fmt.Sprintf("picked by the gate: %s; %s", p.Why, p.Landed)
	case p.Land:
		return fmt.Sprintf("picked by the gate: %s; landing it", p.Why)
	}
	return fmt.Sprintf("picked by the gate: %s; lazy accept %s --attempt %d lands it", p.Why, group, p.Proposed)
}
