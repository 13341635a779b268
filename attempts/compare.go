package attempts

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// AgentLabel is "claude", "claude --model opus" or "exec": who runs an
// attempt, as every surface prints it.
func AgentLabel(agentName, model string) string {
	if model == "" {
		return agentName
	}
	return agentName + " --model " + model
}

// Attempt is one attempt as show, diff --attempts, MCP and the web
// compare them.
type Attempt struct {
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
	// PickGate is the attempt's gate result as the pick by the gate saw
	// it (lazy start --pick gate), Proposed that the pick proposes it.
	PickGate *task.AttemptGate `json:"pick_gate,omitempty"`
	Proposed bool              `json:"proposed,omitempty"`
	// Review is the range lazy diff --attempts shows ("" fields: none).
	Review *review.Review `json:"-"`
}

// Landed reports whether the attempt is the one that landed.
func (a Attempt) Landed() bool {
	return a.Status == machine.Complete && a.Outcome == task.OutcomeAccepted
}

// The cells below are an attempt's comparison as text, worded once for
// every surface that compares attempts (show, diff --attempts, watch,
// the web view), "-" where there is nothing to say.

// AgentCell is who ran the attempt (AgentLabel).
func (a Attempt) AgentCell() string {
	if a.Agent == "" {
		return "-"
	}
	return AgentLabel(a.Agent, a.Model)
}

// StatusCell is the attempt's status, "(landed)" for the chosen one,
// "(proposed)" for the one the gate picked.
func (a Attempt) StatusCell() string {
	switch {
	case a.Landed():
		return string(a.Status) + " (landed)"
	case a.Proposed:
		return string(a.Status) + " (proposed)"
	}
	return string(a.Status)
}

// CostCell is what the attempt cost: dollars when its turns were priced
// (by the CLI, or lazy's price table), else "unpriced".
func (a Attempt) CostCell() string {
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

// GateCell is the attempt's merge gate state: the pick's result on its
// current tip when the gate picks, else its newest run's.
func (a Attempt) GateCell() string {
	switch {
	case a.PickGate != nil:
		return a.PickGate.State
	case a.Gate == nil:
		return "-"
	}
	return a.Gate.State
}

// DiffCell is the attempt's diff stat; a landed attempt's branch is
// gone, so it says so rather than "-".
func (a Attempt) DiffCell() string {
	switch {
	case a.Diff != nil:
		return a.Diff.String()
	case a.Status == machine.Complete:
		return "landed (branch removed)"
	}
	return "-"
}

// Comparison is a group's attempts, in order, with their cost
// rolled up.
type Comparison struct {
	Group    string    `json:"group"`
	Attempts []Attempt `json:"attempts"`
	// Usage totals every attempt's turns (the cost of trying).
	Usage *task.Usage `json:"usage,omitempty"`
	// Chosen is the attempt that landed, 0 while none has.
	Chosen int `json:"chosen,omitempty"`
	// Pick is the pick by the gate (lazy start --pick gate), PickLine
	// it in words with the command that lands the proposal.
	Pick     *task.AttemptPick `json:"pick,omitempty"`
	PickLine string            `json:"pick_line,omitempty"`
}

// Compare compares the attempts of group name (a task lazy start
// --attempts tried).
func (at *Service) Compare(ctx context.Context, name string) (*Comparison, error) {
	e := at.Env
	sn, err := at.load(name)
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
	return at.compare(ctx, sn), nil
}

// compare builds the comparison of group sn's attempts.
func (at *Service) compare(ctx context.Context, sn *task.Snapshot) *Comparison {
	e := at.Env
	v := &Comparison{Group: sn.Task.Slug, Pick: sn.Task.Pick, PickLine: PickLine(sn.Task.Slug, sn.Task.Pick)}
	var total task.Usage
	counted := false
	for i, id := range sn.Task.Attempts {
		k := i + 1
		a, err := e.Store.Load(id)
		if err != nil {
			v.Attempts = append(v.Attempts, Attempt{K: k, ID: id, Missing: true})
			continue
		}
		av := Attempt{K: k, ID: id, Slug: a.Task.Slug, Status: a.Task.Status, Outcome: a.Task.Outcome, Reason: a.Task.Reason,
			Usage: a.Task.Usage, Gate: a.Task.Gate.Summary()}
		if a.Session != nil {
			av.Agent, av.Model = a.Session.Agent, a.Session.Model
		}
		av.PickGate = sn.Task.Pick.GateOf(k)
		av.Proposed = sn.Task.Pick.Decided() && sn.Task.Pick.Proposed == k
		if a.Task.Usage != nil {
			total.Add(*a.Task.Usage)
			counted = true
		}
		if av.Landed() {
			v.Chosen = k
		}
		if a.Session != nil {
			if r, _, err := at.review().Measure(ctx, a, "no work"); err == nil {
				av.Review = r
				if d, err := at.worktrees().Numstat(ctx, e.Dir(), r.MergeBase, r.BranchSHA); err == nil {
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

// Resolve resolves attempt k of group name, refusing in one sentence a
// task that is not a group or a k it does not have.
func (at *Service) Resolve(name string, k int) (group *task.Snapshot, id string, err error) {
	sn, err := at.load(name)
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
