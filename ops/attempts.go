package ops

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// Attempts: one task tried N ways side by side (lazy start TASK
// --attempts N).
//
// lazy's state machine is one task = one session = one branch, so the N
// ways are N tasks of their own, its attempts: each has its branch
// (lazy/<slug>-a<K>), worktree, session, agent, model, turns and cost,
// and every operation works on it as on any task. The original task
// becomes the attempt group: it never runs, waits in backlog while its
// attempts do (Task.Attempts lists them), and completes when one of
// them is accepted; the others are then closed with the reason.
//
// An attempt is not a subtask of its group (Task.Parent): a subtask
// starts from its parent's branch and lands on it, but the group has no
// branch. An attempt instead carries its group's Parent and TargetBranch,
// so BaseBranch, accept, sync, the merge queue and the merged-branch
// sweep send it exactly where the group itself would have gone (its
// parent's branch, its target branch, or the default branch), with no
// special case; Task.AttemptOf ties it to its group for every surface
// and for the budget tree (a group's budget covers its attempts).

// AttemptsInput is how to try a task several ways.
type AttemptsInput struct {
	// N is how many attempts (2 to task.MaxAttempts).
	N int
	// Agents are cycled over the attempts (attempt K runs
	// Agents[(K-1) % len]); empty: Base.Agent for all.
	Agents []string
	// Base is what every attempt starts with (its Agent the default,
	// its Model the model each attempt asks for).
	Base session.StartInput
}

// AttemptsResult is what StartAttempts did: the group, the attempts it
// started, and those it could not (each waits in backlog).
type AttemptsResult struct {
	Group    *task.Snapshot
	Started  []*task.Snapshot
	NotStart []error
}

// attemptSlug is attempt k's slug: the group's, cut to leave room, and
// "-a<k>".
func attemptSlug(group string, k int) string {
	suffix := "-a" + strconv.Itoa(k)
	base := group
	for base != "" && !task.ValidSlug(base+suffix) {
		base = strings.TrimRight(base[:len(base)-1], "-")
	}
	return base + suffix
}

// CheckAttempts refuses a number of attempts lazy does not run, in one
// sentence.
func CheckAttempts(n int) error {
	switch {
	case n < 2:
		return fmt.Errorf("--attempts %d: attempts try a task 2 to %d ways side by side; for one, lazy start it without --attempts", n, task.MaxAttempts)
	case n > task.MaxAttempts:
		return fmt.Errorf("--attempts %d: lazy runs at most %d attempts of one task (each is a worktree and an agent at work); ask for %d or fewer", n, task.MaxAttempts, task.MaxAttempts)
	}
	return nil
}

// attemptInput is attempt k's start settings.
func (in AttemptsInput) attemptInput(k int) session.StartInput {
	s := in.Base
	if len(in.Agents) > 0 {
		s.Agent = in.Agents[(k-1)%len(in.Agents)]
	}
	if s.Agent != "exec" {
		s.ExecCommand = nil
	} else {
		s.Model = ""
	}
	return s
}

// StartAttempts tries a backlog task N ways: it records the task as an
// attempt group, creates its N attempts and starts each. Everything
// that can be checked is checked before anything is recorded (the
// count, the model, that every agent can run here); an attempt whose
// start fails after that waits in backlog, and the result says so.
func (e *Env) StartAttempts(ctx context.Context, name string, in AttemptsInput) (*AttemptsResult, error) {
	if err := CheckAttempts(in.N); err != nil {
		return nil, err
	}
	if err := e.RequireLauncher("start"); err != nil {
		return nil, err
	}
	if err := agent.ValidModel(in.Base.Model); err != nil {
		return nil, err
	}
	checked := map[string]bool{}
	for k := 1; k <= in.N; k++ {
		s := in.attemptInput(k)
		if checked[s.Agent] {
			continue
		}
		checked[s.Agent] = true
		if err := session.AgentRunnable(s); err != nil {
			return nil, err
		}
	}
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	slug := sn.Task.Slug
	switch {
	case sn.Task.AttemptOf != "":
		return nil, fmt.Errorf("start %s --attempts: the task is itself an attempt; try its group's task again instead", slug)
	case sn.Task.IsAttemptGroup():
		return nil, fmt.Errorf("start %s --attempts: the task is already tried %d ways; lazy show %s compares them", slug, len(sn.Task.Attempts), slug)
	case sn.Task.Status != machine.Backlog:
		return nil, lifecycle.NotStartable(slug, sn.Task.Status)
	}
	if err := lifecycle.ParentOpen(e.Store, sn, "start"); err != nil {
		return nil, err
	}
	if err := lifecycle.DepsDone(e.Store, sn); err != nil {
		return nil, err
	}
	// Each attempt is confined as a start of the task would be (its
	// parent's session, the asking agent's): refused here, before the
	// group is recorded, rather than attempt by attempt.
	for k := 1; k <= in.N; k++ {
		s, err := e.StartConfinement(sn, in.attemptInput(k))
		if err != nil {
			return nil, session.ConfinementRefusal("start", slug, err)
		}
		if err := session.SandboxReady(ctx, s.Sandbox); err != nil {
			return nil, fmt.Errorf("start %s --attempts: %w; nothing was started", slug, err)
		}
	}
	repoDir := in.Base.RepoDir
	if repoDir == "" {
		repoDir = e.Dir()
	}
	if worktree.NoCommits(ctx, repoDir) {
		return nil, fmt.Errorf("start %s: this repository has no commits yet, so there is nothing to branch from; make a first commit (git commit --allow-empty -m init), then start again", slug)
	}
	if _, err := e.BaseBranch(ctx, sn, repoDir); err != nil {
		return nil, fmt.Errorf("start %s: %w", slug, err)
	}
	goal, err := sn.Goal()
	if err != nil {
		return nil, err
	}
	ids := make([]string, in.N)
	for i := range ids {
		if ids[i], err = task.NewID(); err != nil {
			return nil, err
		}
	}
	// The group is recorded first, with its attempts' ids: from here on
	// every surface knows the task is tried N ways, and an attempt a
	// crash leaves uncreated shows as missing rather than not at all.
	var plan []string
	for k := 1; k <= in.N; k++ {
		plan = append(plan, fmt.Sprintf("attempt %d %s (%s)", k, attemptSlug(slug, k), AgentLabel(in.attemptInput(k).Agent, in.attemptInput(k).Model)))
	}
	sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Backlog || s.Task.IsAttemptGroup() {
			return nil, fmt.Errorf("start %s: the task changed meanwhile (it is %s); look at it again", s.Task.Slug, s.Task.Status)
		}
		s.Task.Attempts = ids
		now := time.Now().UTC().Truncate(time.Second)
		s.AddComment(task.Comment{Actor: e.Actor, At: now, Text: fmt.Sprintf("tried %d ways: %s", in.N, strings.Join(plan, ", "))})
		return &task.Op{Name: "attempts", Actor: e.Actor, Reason: fmt.Sprintf("tried %d ways", in.N)}, nil
	})
	if err != nil {
		return nil, err
	}
	res := &AttemptsResult{Group: sn}
	for k := 1; k <= in.N; k++ {
		spec := task.CreateSpec{
			ID: ids[k-1], Title: sn.Task.Title, Goal: goal, Slug: attemptSlug(slug, k),
			Parent: sn.Task.Parent, TargetBranch: sn.Task.TargetBranch, AllowedPaths: sn.Task.AllowedPaths,
			Metadata: maps.Clone(sn.Task.Metadata), AttemptOf: sn.Task.ID, Attempt: k, Actor: e.Actor,
		}
		if _, err := e.Store.Create(spec); err != nil {
			res.NotStart = append(res.NotStart, fmt.Errorf("attempt %d (%s) was not created: %w", k, spec.Slug, err))
			continue
		}
		started, err := e.Lifecycle().Start(ctx, ids[k-1], in.attemptInput(k))
		if err != nil {
			res.NotStart = append(res.NotStart, fmt.Errorf("attempt %d (%s) did not start (it waits in backlog; lazy start %s starts it): %w", k, spec.Slug, spec.Slug, err))
			continue
		}
		res.Started = append(res.Started, started)
	}
	if len(res.Started) == 0 {
		return res, fmt.Errorf("start %s --attempts %d: no attempt started: %w", slug, in.N, errors.Join(res.NotStart...))
	}
	return res, nil
}

// AgentLabel is "claude", "claude --model opus" or "exec": who runs an
// attempt, as every surface prints it.
func AgentLabel(agentName, model string) string {
	if model == "" {
		return agentName
	}
	return agentName + " --model " + model
}

// AttemptView is one attempt as show, diff --attempts, MCP and the web
// compare them.
type AttemptView struct {
	K       int               `json:"attempt"`
	ID      string            `json:"id"`
	Slug    string            `json:"slug"`
	Agent   string            `json:"agent,omitempty"`
	Model   string            `json:"model,omitempty"`
	Status  machine.Status    `json:"status"`
	Outcome string            `json:"outcome,omitempty"`
	Reason  string            `json:"reason,omitempty"`
	Usage   *task.Usage       `json:"usage,omitempty"`
	Gate    *task.GateSummary `json:"gate,omitempty"`
	// Diff measures the attempt's work against its merge base (nil
	// while it has no branch here: not started, or landed).
	Diff *worktree.DiffStat `json:"diff,omitempty"`
	// Missing: the group lists the attempt but its record is not here
	// (a crash between the two, or a pull that has not brought it).
	Missing bool `json:"missing,omitempty"`
	// Review is the range lazy diff --attempts shows ("" fields: none).
	Review *review.Review `json:"-"`
}

// Landed reports whether the attempt is the one that landed.
func (a AttemptView) Landed() bool {
	return a.Status == machine.Complete && a.Outcome == task.OutcomeAccepted
}

// The cells below are an attempt's comparison as text, worded once for
// every surface that compares attempts (show, diff --attempts, watch,
// the web view), "-" where there is nothing to say.

// AgentCell is who ran the attempt (AgentLabel).
func (a AttemptView) AgentCell() string {
	if a.Agent == "" {
		return "-"
	}
	return AgentLabel(a.Agent, a.Model)
}

// StatusCell is the attempt's status, "(landed)" for the chosen one.
func (a AttemptView) StatusCell() string {
	if a.Landed() {
		return string(a.Status) + " (landed)"
	}
	return string(a.Status)
}

// CostCell is what the attempt cost: dollars when its turns were priced
// (by the CLI, or lazy's price table), else "unpriced".
func (a AttemptView) CostCell() string {
	return UsageCell(a.Usage)
}

// UsageCell is a usage in a table cell (see CostCell).
func UsageCell(u *task.Usage) string {
	switch {
	case u == nil:
		return "-"
	case u.Flagged != "":
		return "left out (out of bounds)"
	case u.CostUSD > 0 && u.Unpriced > 0:
		return fmt.Sprintf("$%.4f + unpriced", u.CostUSD)
	case u.CostUSD > 0:
		return fmt.Sprintf("$%.4f", u.CostUSD)
	}
	if u.Tokens() > 0 {
		return "unpriced" // never $0.0000: show has the tokens
	}
	return "-"
}

// GateCell is the attempt's merge gate state.
func (a AttemptView) GateCell() string {
	if a.Gate == nil {
		return "-"
	}
	return a.Gate.State
}

// DiffCell is the attempt's diff stat; a landed attempt's branch is
// gone, so it says so rather than "-".
func (a AttemptView) DiffCell() string {
	switch {
	case a.Diff != nil:
		return a.Diff.String()
	case a.Status == machine.Complete:
		return "landed (branch removed)"
	}
	return "-"
}

// AttemptsView is a group's attempts, in order, with their cost
// rolled up.
type AttemptsView struct {
	Group    string        `json:"group"`
	Attempts []AttemptView `json:"attempts"`
	// Usage totals every attempt's turns (the cost of trying).
	Usage *task.Usage `json:"usage,omitempty"`
	// Chosen is the attempt that landed, 0 while none has.
	Chosen int `json:"chosen,omitempty"`
}

// Attempts compares the attempts of group name (a task lazy start
// --attempts tried).
func (e *Env) Attempts(ctx context.Context, name string) (*AttemptsView, error) {
	sn, err := e.load(name)
	if err != nil {
		return nil, err
	}
	if !sn.Task.IsAttemptGroup() {
		if sn.Task.AttemptOf != "" {
			if g, err := e.Store.Load(sn.Task.AttemptOf); err == nil {
				return nil, fmt.Errorf("%s is attempt %d of %s; lazy show %s compares the attempts", sn.Task.Slug, sn.Task.Attempt, g.Task.Slug, g.Task.Slug)
			}
		}
		return nil, fmt.Errorf("%s is not tried as attempts (lazy start %s --attempts N tries a backlog task N ways)", sn.Task.Slug, sn.Task.Slug)
	}
	return e.attemptsOf(ctx, sn), nil
}

// attemptsOf builds the view of group sn's attempts.
func (e *Env) attemptsOf(ctx context.Context, sn *task.Snapshot) *AttemptsView {
	v := &AttemptsView{Group: sn.Task.Slug}
	var total task.Usage
	counted := false
	for i, id := range sn.Task.Attempts {
		k := i + 1
		a, err := e.Store.Load(id)
		if err != nil {
			v.Attempts = append(v.Attempts, AttemptView{K: k, ID: id, Missing: true})
			continue
		}
		av := AttemptView{K: k, ID: id, Slug: a.Task.Slug, Status: a.Task.Status, Outcome: a.Task.Outcome, Reason: a.Task.Reason,
			Usage: a.Task.Usage, Gate: a.Task.Gate.Summary()}
		if a.Session != nil {
			av.Agent, av.Model = a.Session.Agent, a.Session.Model
		}
		if a.Task.Usage != nil {
			total.Add(*a.Task.Usage)
			counted = true
		}
		if av.Landed() {
			v.Chosen = k
		}
		if a.Session != nil {
			if r, _, err := e.Review().Measure(ctx, a, "no work"); err == nil {
				av.Review = r
				if d, err := worktree.Numstat(ctx, e.Dir(), r.MergeBase, r.BranchSHA); err == nil {
					av.Diff = &d
				}
			}
		}
		v.Attempts = append(v.Attempts, av)
	}
	if counted {
		v.Usage = &total
	}
	return v
}

// AttemptID resolves attempt k of group name, refusing in one sentence a
// task that is not a group or a k it does not have.
func (e *Env) AttemptID(name string, k int) (group *task.Snapshot, id string, err error) {
	sn, err := e.load(name)
	if err != nil {
		return nil, "", err
	}
	slug := sn.Task.Slug
	if !sn.Task.IsAttemptGroup() {
		return nil, "", fmt.Errorf("%s is not tried as attempts, so it has no attempt %d; lazy accept %s lands it", slug, k, slug)
	}
	if n := len(sn.Task.Attempts); k < 1 || k > n {
		return nil, "", fmt.Errorf("%s has %d attempts; --attempt %d is not one of them (give 1 to %d)", slug, n, k, n)
	}
	return sn, sn.Task.Attempts[k-1], nil
}

// AcceptAttempt lands attempt k of group name through the normal accept
// (its gate, its place in the target's queue), then completes the group
// and closes the other attempts (see Accept). Run again after a crash,
// it finishes what the first run left: an attempt already accepted is
// not merged twice.
func (e *Env) AcceptAttempt(ctx context.Context, name string, k int, n Narrator, opts AcceptOptions) (*AcceptResult, error) {
	group, id, err := e.AttemptID(name, k)
	if err != nil {
		return nil, err
	}
	a, err := e.Store.Load(id)
	if err != nil {
		return nil, fmt.Errorf("accept %s --attempt %d: its record is not here (lazy pull, or run this where it was started): %w", group.Task.Slug, k, err)
	}
	switch {
	case landedAttempt(a):
		_, warnings, err := e.finishAttemptGroup(ctx, a)
		return &AcceptResult{Snapshot: a, Warnings: warnings}, err
	case group.Task.Status.IsTerminal():
		return nil, fmt.Errorf("accept %s --attempt %d: the group is %s already (%s); lazy reopen %s first to choose again", group.Task.Slug, k, group.Task.Status, group.Task.Reason, group.Task.Slug)
	case a.Task.Status.IsTerminal():
		return nil, fmt.Errorf("accept %s --attempt %d: attempt %d (%s) is %s (%s); lazy reopen %s first, or choose another attempt", group.Task.Slug, k, k, a.Task.Slug, a.Task.Status, a.Task.Reason, a.Task.Slug)
	}
	return e.Accept(ctx, id, n, opts)
}

// landedAttempt reports whether sn is an attempt that landed, whose
// group is then settled.
func landedAttempt(sn *task.Snapshot) bool {
	return sn != nil && sn.Task.AttemptOf != "" && sn.Task.Status == machine.Complete && sn.Task.Outcome == task.OutcomeAccepted
}

// SettleAttemptGroup settles the group of task id when id is an attempt
// that landed (see finishAttemptGroup), and does nothing for any other
// task. lazy accept settles the group itself; this is for the paths
// that complete a task outside it (the reconciler's merged-branch
// sweep, a stranded accept it finishes, a pull request the forge
// merged), which must not leave the group waiting and the other
// attempts running. group is the group if this call completed it.
func (e *Env) SettleAttemptGroup(ctx context.Context, id string) (group *task.Snapshot, warnings []string, err error) {
	sn, err := e.Store.Load(id)
	if err != nil || !landedAttempt(sn) {
		return nil, nil, err
	}
	return e.finishAttemptGroup(ctx, sn)
}

// finishAttemptGroup settles the group of attempt a, which just landed:
// the group completes (outcome accepted, the reason naming the attempt)
// and every other open attempt is stopped if it runs and closed with
// "attempt K was chosen". A closed attempt keeps its worktree and branch
// (never destroy work: lazy diff and lazy reopen still reach it). What
// could not be settled comes back as warnings; the landing stands.
// group is the group if this call completed it (nil: it was already).
func (e *Env) finishAttemptGroup(ctx context.Context, a *task.Snapshot) (group *task.Snapshot, warnings []string, err error) {
	k, slug := a.Task.Attempt, a.Task.Slug
	var others []string
	unlock, err := e.LockTask(ctx, a.Task.AttemptOf)
	if err != nil {
		return nil, nil, fmt.Errorf("attempt %d (%s) landed, but its group is busy; lazy accept GROUP --attempt %d again finishes it: %w", k, slug, k, err)
	}
	completed := false
	sn, _, err := e.Store.Update(ctx, a.Task.AttemptOf, func(s *task.Snapshot) (*task.Op, error) {
		others, completed = nil, false
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
	why := fmt.Sprintf("attempt %d was chosen", k)
	for _, id := range others {
		o, err := e.Store.Load(id)
		if err != nil || o.Task.Status.IsTerminal() {
			continue
		}
		if o.Task.Status == machine.Working {
			if _, err := e.Lifecycle().Stop(ctx, id, why); err != nil {
				warnings = append(warnings, fmt.Sprintf("attempt %d (%s) still runs: %v; lazy stop and lazy close it", o.Task.Attempt, o.Task.Slug, err))
				continue
			}
		}
		if _, err := e.Lifecycle().Close(ctx, id, why); err != nil {
			warnings = append(warnings, fmt.Sprintf("attempt %d (%s) was not closed: %v; lazy close %s -m %q closes it", o.Task.Attempt, o.Task.Slug, err, o.Task.Slug, why))
		}
	}
	return group, warnings, nil
}

// siblingChosen refuses to accept an attempt whose group another attempt
// settled already (one named later in lazy accept A B C, say): landing
// a second way of the same task would put both on the target.
func (e *Env) siblingChosen(sn *task.Snapshot) error {
	if sn.Task.AttemptOf == "" || landedAttempt(sn) {
		return nil
	}
	g, err := e.Store.Load(sn.Task.AttemptOf)
	if err != nil || g.Task.Status != machine.Complete {
		return nil
	}
	return fmt.Errorf("accept %s: it is attempt %d of %s, which is complete already (%s); lazy reopen %s first to choose again", sn.Task.Slug, sn.Task.Attempt, g.Task.Slug, g.Task.Reason, g.Task.Slug)
}
