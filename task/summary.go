package task

import (
	"time"

	"github.com/lazyorch/lazy/machine"
)

// Summary is the public JSON shape of a task on every listing surface
// (lazy list --json, show --json, MCP). It is derived from task.json.
type Summary struct {
	ID           string            `json:"id"`
	Slug         string            `json:"slug"`
	Title        string            `json:"title"`
	Status       machine.Status    `json:"status"`
	Substate     string            `json:"substate,omitempty"`
	Category     machine.Category  `json:"category"`
	Parent       string            `json:"parent,omitempty"`
	TargetBranch string            `json:"target_branch,omitempty"`
	CreatedAt    string            `json:"created_at"`
	UpdatedAt    string            `json:"updated_at"`
	CreatedBy    machine.Actor     `json:"created_by,omitempty"`
	Outcome      string            `json:"outcome,omitempty"`
	Reason       string            `json:"reason,omitempty"`
	AllowedPaths []string          `json:"allowed_paths,omitempty"`
	Sessions     int               `json:"sessions"`
	Host         string            `json:"host,omitempty"`          // the host its session runs on
	Refused      int               `json:"merge_refused,omitempty"` // operations a merge refused`
	Turns        int               `json:"turns"`
	Comments     int               `json:"comments"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	// PR is the task's pull request, when lazy submit opened one.
	PR *PRSummary `json:"pr,omitempty"`
	// Usage totals what the task's agent turns cost.
	Usage *Usage `json:"usage,omitempty"`
	// Gate is how the task's newest merge-gate run ended.
	Gate *GateSummary `json:"gate,omitempty"`
	// Pool is what the task asks of the runner pool, if it is pooled.
	Pool *PoolSpec `json:"pool,omitempty"`
	// After are the tasks it waits for.
	After []string `json:"after,omitempty"`
	// BudgetUSD is the task's own budget, when it has one (0 allows no
	// spend).
	BudgetUSD *float64 `json:"budget_usd,omitempty"`
	// Hold is why a parked task waits (a budget, a usage limit).
	Hold *Hold `json:"hold,omitempty"`
	// AttemptOf and Attempt: the task is attempt K of that group;
	// Attempts: the task is a group tried these ways (see Task).
	AttemptOf string   `json:"attempt_of,omitempty"`
	Attempt   int      `json:"attempt,omitempty"`
	Attempts  []string `json:"attempt_ids,omitempty"`
	// Picking: the group's attempts are picked by the gate (lazy start
	// --pick gate) and the pick has a step left (AttemptPick.Moving);
	// the reconciler looks only at such groups.
	Picking bool `json:"attempts_picking,omitempty"`
}

// PRSummary is a task's pull request on listing surfaces.
type PRSummary struct {
	Forge    string `json:"forge"`
	Number   int    `json:"number,omitempty"`
	URL      string `json:"url,omitempty"`
	State    string `json:"state,omitempty"`
	Checks   string `json:"checks,omitempty"`
	Review   string `json:"review,omitempty"`
	Revising bool   `json:"revising,omitempty"`
}

// TimeLayout is how lazy prints instants in JSON: UTC, seconds.
const TimeLayout = "2006-01-02T15:04:05Z"

// NewSummary derives the summary of a task.
func NewSummary(t *Task) Summary {
	var pr *PRSummary
	if f := t.Forge; f != nil {
		pr = &PRSummary{Forge: f.Kind, Number: f.Number, URL: f.URL, State: f.State, Checks: f.Checks, Review: f.Review, Revising: f.Revising}
	}
	return Summary{
		PR: pr,
		ID: t.ID, Slug: t.Slug, Title: t.Title, Status: t.Status, Substate: t.Substate, Category: t.Status.Category(),
		Parent: t.Parent, TargetBranch: t.TargetBranch,
		CreatedAt: t.CreatedAt.UTC().Format(TimeLayout), UpdatedAt: t.UpdatedAt.UTC().Format(TimeLayout),
		CreatedBy: t.CreatedBy, Outcome: t.Outcome, Reason: t.Reason, AllowedPaths: t.AllowedPaths,
		Sessions: t.Sessions, Host: t.Host, Refused: len(t.MergeRefused), Turns: t.Turns, Comments: t.Comments, Metadata: t.Metadata,
		Usage: t.Usage, Gate: t.Gate.Summary(), Pool: t.Pool, After: t.After,
		BudgetUSD: t.BudgetUSD, Hold: t.Hold,
		AttemptOf: t.AttemptOf, Attempt: t.Attempt, Attempts: t.Attempts,
		Picking: t.Pick.Moving() && !t.Status.IsTerminal(),
	}
}

// Created parses the summary's creation time.
func (s *Summary) Created() time.Time {
	t, _ := time.Parse(TimeLayout, s.CreatedAt)
	return t
}
