package task

import (
	"fmt"
	"slices"
	"time"

	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
)

// SchemaVersion is written into every task.json; readers refuse records
// from a newer lazy rather than misreading them.
const SchemaVersion = 1

// Task is task.json: the small, frequently rewritten core of a record.
// Long texts live in their own blobs so that an operation which does not
// change them reuses their hashes.
type Task struct {
	Version      int            `json:"version"`
	ID           string         `json:"id"`
	Slug         string         `json:"slug"`
	Title        string         `json:"title"`
	Status       machine.Status `json:"status"`
	Parent       string         `json:"parent,omitempty"`
	TargetBranch string         `json:"target_branch,omitempty"`
	CreatedAt    time.Time      `json:"created_at"`
	UpdatedAt    time.Time      `json:"updated_at"`
	CreatedBy    machine.Actor  `json:"created_by,omitempty"`
	Clock        uint64         `json:"clock"`
	Outcome      string         `json:"outcome,omitempty"` // accepted, rejected, closed
	Reason       string         `json:"reason,omitempty"`  // why it was rejected, closed or reopened
	// ReopenedAt is the newest commit the task's turns had recorded when
	// it was reopened: the merged-branch sweep finishes a reopened task
	// only for work recorded after that, so a reopen sticks even though
	// the branch it reopened was merged.
	ReopenedAt   string            `json:"reopened_at_commit,omitempty"`
	AllowedPaths []string          `json:"allowed_paths,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	Turns        int               `json:"turns"`
	Comments     int               `json:"comments"`
	Sessions     int               `json:"sessions"` // how many sessions this task has had
	// Host is the host its current session runs on: other hosts show the
	// task as working there and never judge it.
	Host string `json:"host,omitempty"`
	// Substate refines working: agent:pre-accept while accept's optional
	// agent turn runs (so it is not mistaken for a human unblock).
	Substate string `json:"substate,omitempty"`
	// Accept, while the task is merging: the durable record, written
	// before the merge, that lets a crashed accept be finished or undone.
	Accept *AcceptRecord `json:"accept,omitempty"`
	// Forge is the pull request lazy submit opened (see ForgeRecord).
	Forge *ForgeRecord `json:"forge,omitempty"`
	// MergeRefused lists operations a merge of two machines' histories
	// could not replay (their commits stay in history).
	MergeRefused []Refused `json:"merge_refused,omitempty"`
	// Usage totals what the task's agent turns cost.
	Usage *Usage `json:"usage,omitempty"`
	// Gate is what the merge gate did for this task (see GateRecord).
	Gate *GateRecord `json:"gate,omitempty"`
	// Pool marks the task for the runner pool (lazy start --pool): a
	// runner whose labels and agents fit claims it through the remote.
	Pool *PoolSpec `json:"pool,omitempty"`
	// After are the tasks that must be complete before this one starts,
	// on the pool and locally alike (lazy create --after).
	After []string `json:"after,omitempty"`
	// BudgetUSD, when set, is this task's own budget (lazy create/edit
	// --budget, lazy unblock --budget +N): it replaces lazy.budget.task
	// for the task, its turns and its subtasks' turns. 0 allows no
	// spend; nil is no budget of its own. See OwnBudget for a figure out
	// of bounds.
	BudgetUSD *float64 `json:"budget_usd,omitempty"`
	// Hold says why a blocked task waits other than for a review: a
	// budget its turns reached, or a usage limit whose reset the daemon
	// waits for. Any turn that starts clears it.
	Hold *Hold `json:"hold,omitempty"`
	// AttemptOf, on an attempt (lazy start --attempts N), is the id of
	// its attempt group, and Attempt its number K (1-based). An attempt
	// is a full task of its own (branch, worktree, session, turns,
	// cost); it is not a subtask of the group: it has the group's Parent
	// and TargetBranch, so it starts from and lands on the branch the
	// group itself would have (see attempts.Service.Start).
	AttemptOf string `json:"attempt_of,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	// Attempts, on an attempt group, are its attempts' ids in order
	// (attempt K is Attempts[K-1]). The group itself never runs: it
	// stays in backlog while they do, and completes when one lands.
	Attempts []string `json:"attempt_ids,omitempty"`
	// Pick, on an attempt group started with --pick gate, is the pick
	// the reconciler makes by the gate (see AttemptPick).
	Pick *AttemptPick `json:"attempts_pick,omitempty"`
}

// IsAttemptGroup reports whether the task is tried as attempts (lazy
// start --attempts).
func (t *Task) IsAttemptGroup() bool { return len(t.Attempts) > 0 }

// Hold kinds.
const (
	// HoldBudget parks a task whose spending reached a budget; only a
	// human (a raised budget) carries it on.
	HoldBudget = "budget"
	// HoldLimit parks a task whose agent hit a usage limit that resets
	// at Until; the daemon resumes it then, without a human.
	HoldLimit = "limit"
)

// Hold is why a parked task waits: see Task.Hold.
type Hold struct {
	Kind   string    `json:"kind"`
	Reason string    `json:"reason,omitempty"` // as the agent or lazy said it
	At     time.Time `json:"at"`
	// Until is when a usage limit resets (HoldLimit).
	Until time.Time `json:"until,omitzero"`
	// Scope names the budget that was reached (HoldBudget): "task",
	// "parent <slug>" or "day"; LimitUSD is what it allows and SpentUSD
	// what was spent against it.
	Scope    string  `json:"scope,omitempty"`
	LimitUSD float64 `json:"limit_usd,omitempty"`
	SpentUSD float64 `json:"spent_usd,omitempty"`
}

// String is the hold as every surface shows it: "over budget: $4.02 of
// $0.50 (task)", "waiting for the limit to reset at 2026-12-06 06:10 UTC".
func (h *Hold) String() string {
	if h == nil {
		return ""
	}
	switch h.Kind {
	case HoldBudget:
		if CheckUSD("", h.SpentUSD) != nil || CheckUSD("", h.LimitUSD) != nil {
			// A record from elsewhere: its figures are not printed.
			return fmt.Sprintf("over budget (%s budget; the recorded figures are out of bounds)", h.Scope)
		}
		return fmt.Sprintf("over budget: $%.2f spent of $%.2f (%s budget)", h.SpentUSD, h.LimitUSD, h.Scope)
	case HoldLimit:
		return "waiting for the limit to reset at " + h.Until.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return h.Kind
}

// SettleHold ends a hold the task has left (a store calls it on every
// snapshot it commits): a hold lasts while the task
// is parked (blocked, conflict) or runs a status-neutral turn (an ask, a
// sync) from there, after which it parks back held. Any work turn, and
// any other status, ends it, whoever made the change.
func (s *Snapshot) SettleHold() {
	if s.Task.Hold == nil {
		return
	}
	switch s.Task.Status {
	case machine.Blocked, machine.Conflict:
		return
	case machine.Working:
		if s.Session != nil && (s.Session.TurnKind == "ask" || s.Session.TurnKind == "sync") {
			return
		}
	}
	s.Task.Hold = nil
}

func (h *Hold) clone() *Hold {
	if h == nil {
		return nil
	}
	c := *h
	return &c
}

// PoolSpec is what a pooled task asks of the runner that takes it, and
// who holds it now. What a runner runs is its own decision: it takes
// the task only if its configuration allows Agent, and runs that agent
// as it is configured there.
type PoolSpec struct {
	Labels   []string  `json:"labels,omitempty"`
	Priority int       `json:"priority,omitempty"`
	Agent    string    `json:"agent,omitempty"`
	MarkedAt time.Time `json:"marked_at"`
	MarkedBy string    `json:"marked_by,omitempty"`
	// Runner and Generation are the claim the newest runner write was
	// made under (the remote's claim ref is the authority).
	Runner     string `json:"runner,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
}

func (p *PoolSpec) clone() *PoolSpec {
	if p == nil {
		return nil
	}
	c := *p
	c.Labels = slices.Clone(p.Labels)
	return &c
}

// AcceptRecord is what an accept in flight has committed to.
type AcceptRecord struct {
	// From is the status the task held before the accept (spec:
	// accept_in_flight_from); every abort restores it.
	From machine.Status `json:"accept_in_flight_from"`
	// Into is the branch the task is merged into, and IntoSHA its tip
	// before the merge: a squash commit with the task's Lazy-Task trailer
	// above IntoSHA means the merge happened.
	Into    string    `json:"into"`
	IntoSHA string    `json:"into_sha"`
	Started time.Time `json:"started_at"`
	Host    string    `json:"host"`
	// Dest is the worktree the merge runs in, and StashSHA the stash that
	// holds its uncommitted changes while it does: recorded before the
	// merge touches that worktree, so a crash can say where they are.
	Dest     string `json:"dest,omitempty"`
	StashSHA string `json:"stash_sha,omitempty"`
	// DestDirty says the destination had uncommitted changes when the
	// accept began, so a stash of them is owed back even if a crash came
	// before StashSHA was recorded (the stash message names the task).
	DestDirty bool `json:"dest_dirty,omitempty"`
	// ID is the accept's random id. The host that began the accept keeps
	// its own record of it (never pushed); only a merging record whose id
	// matches one there is that host's to recover, whatever Host says.
	ID string `json:"id,omitempty"`
}

// Outcomes recorded on a task that reached a terminal status.
const (
	OutcomeAccepted = "accepted"
	OutcomeRejected = "rejected"
	OutcomeClosed   = "closed"
)

// Session is session.json: the current (or last) agent session.
type Session struct {
	ID     string `json:"id"`
	Number int    `json:"number"`
	Host   string `json:"host"`
	Agent  string `json:"agent,omitempty"`
	// Model is the model the session asked its agent for (start
	// --model), "" for the CLI's default.
	Model          string   `json:"model,omitempty"`
	ExecCommand    []string `json:"exec_command,omitempty"`
	PermissionMode string   `json:"permission_mode,omitempty"`
	Branch         string   `json:"branch,omitempty"`
	Worktree       string   `json:"worktree,omitempty"`
	GitStartSHA    string   `json:"git_start_sha,omitempty"`
	AgentSessionID string   `json:"agent_session_id,omitempty"`
	// Turn is the sequence number of the human turn the running (or last)
	// agent turn answers; a response for any other turn is stale.
	Turn int `json:"turn,omitempty"`
	// TurnKind is the kind of that turn (start, unblock, resume, ask,
	// sync): asks and syncs park back where they came from on any response.
	TurnKind          string     `json:"turn_kind,omitempty"`
	StartedAt         time.Time  `json:"started_at"`
	EndedAt           *time.Time `json:"ended_at,omitempty"`
	Outcome           string     `json:"outcome,omitempty"`
	InterruptReason   string     `json:"interrupt_reason,omitempty"`
	InterruptExitCode *int       `json:"interrupt_exit_code,omitempty"`
	InterruptAt       *time.Time `json:"interrupt_at,omitempty"`
	InterruptLogs     string     `json:"interrupt_logs,omitempty"`
	// InterruptPhase is the supervisor phase the turn died in; a
	// merge_and_fix failure is never auto-resumed.
	InterruptPhase           string `json:"interrupt_phase,omitempty"`
	ConsecutiveInterruptions int    `json:"consecutive_interruptions"`
	AutoResumed              bool   `json:"auto_resumed,omitempty"`
	// ParkTo is the status a status-neutral turn (the pre-accept turn)
	// parks back to when it is not blocked: submitted, for a pre-accept
	// turn of a submitted task (spec: accept restores the status the task
	// actually had). Pending violations still make it conflict.
	ParkTo machine.Status `json:"park_to,omitempty"`
	// GoalEditedAfter, when not 0, says lazy edit changed the goal while
	// Turn was this number: every later work turn's prompt carries the
	// new goal until one of them completes.
	GoalEditedAfter int `json:"goal_edited_after,omitempty"`
}

// Turn roles.
const (
	RoleHuman = "human" // a command's content: feedback, a question, the task prompt
	RoleAgent = "agent" // the agent's reply
)

// Feedback delivery states (spec: "Feedback Redelivery").
const (
	FeedbackPending  = "pending"
	FeedbackConsumed = "consumed"
)

// Turn is turns/<seq>.json. Turns are append-only.
type Turn struct {
	Seq              int           `json:"seq"`
	Role             string        `json:"role"`
	Actor            machine.Actor `json:"actor,omitempty"`
	Kind             string        `json:"kind,omitempty"` // start, unblock, ask, resume, ...
	Content          string        `json:"content"`
	At               time.Time     `json:"at"`
	Session          string        `json:"session,omitempty"`
	FeedbackDelivery string        `json:"feedback_delivery,omitempty"`
	// Agent turns: what the turn produced.
	Commits      []string `json:"commits,omitempty"`
	ChangedFiles []string `json:"changed_files,omitempty"`
	ExitCode     *int     `json:"exit_code,omitempty"`
	Error        string   `json:"error,omitempty"`
	FailureClass string   `json:"failure_class,omitempty"`
	Attempts     int      `json:"failure_attempts,omitempty"`
	// Usage is what the agent CLI reported the turn cost; Agent and
	// Model are who ran it (Model as the CLI reported it, "" if it did
	// not), for lazy cost's breakdowns.
	Usage *Usage `json:"usage,omitempty"`
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	// PricedBy says where Usage's dollars came from: the agent CLI's own
	// report (budget.PricedByAgent), lazy's price table or a lazy.price
	// setting, from the tokens; "" when nothing priced them.
	PricedBy string `json:"priced_by,omitempty"`
	// Tools counts the tool calls of an agent turn that returned, and
	// how many failed (nil: none, or an agent lazy cannot read).
	Tools *Tools `json:"tools,omitempty"`
	// Resume says whether an agent turn that continued its session
	// resumed the agent's own conversation or had to start a new one
	// (nil: a first turn, or an agent that keeps no conversation).
	Resume *Resume `json:"resume,omitempty"`
}

// Resume is how a turn that continued a session met the agent's own
// conversation (Claude's session, Codex's thread): resumed, keeping the
// agent's context, or a new one started because the old one could not
// be resumed, with the task's prompt and the turn's message.
type Resume struct {
	// Resumed is the agent's session id the turn resumed ("" when a new
	// one was started).
	Resumed string `json:"resumed,omitempty"`
	// NewSession is the agent's session id started instead ("" when the
	// CLI reported none).
	NewSession string `json:"new_session,omitempty"`
	// Reason says why the old one could not be resumed.
	Reason string `json:"reason,omitempty"`
}

// String says it in words: "resumed the agent's session 01a2...", or
// "started a new session (the old one could not be resumed: ...)".
// Every part is record text: callers sanitize it for a terminal.
func (r *Resume) String() string {
	switch {
	case r == nil:
		return ""
	case r.Resumed != "":
		return "resumed the agent's session " + r.Resumed
	case r.Reason != "":
		return "started a new session (the old one could not be resumed: " + r.Reason + ")"
	}
	return "started a new session"
}

// Tools is how many tool calls a turn made that returned, and how many
// of them failed.
type Tools struct {
	Calls  int `json:"calls"`
	Failed int `json:"failed"`
}

// AllFailed reports whether the turn made tool calls and every one of
// them failed: the agent worked blind (no permission, a broken
// environment), whatever its last words say. A record whose counts do
// not add up (from another clone) says nothing.
func (t *Tools) AllFailed() bool { return t.sane() && t.Failed == t.Calls }

// String is the tally in words: "5 tool calls", "5 tool calls (2
// failed)", "all 5 tool calls failed"; "" for none.
func (t *Tools) String() string {
	if !t.sane() {
		return ""
	}
	calls := words.Count(t.Calls, "tool call", "tool calls")
	switch {
	case t.Failed == 0:
		return calls
	case t.Failed == t.Calls && t.Calls == 1:
		return "its only tool call failed"
	case t.Failed == t.Calls:
		return "all " + calls + " failed"
	}
	return fmt.Sprintf("%s (%d failed)", calls, t.Failed)
}

func (t *Tools) sane() bool {
	return t != nil && t.Calls > 0 && t.Failed >= 0 && t.Failed <= t.Calls
}

// Comment is comments/<seq>.json: a note on a task that is not delivered
// to an agent by itself.
type Comment struct {
	Seq   int           `json:"seq"`
	Actor machine.Actor `json:"actor"`
	At    time.Time     `json:"at"`
	Text  string        `json:"text"`
	// Journal marks a journal entry: an agent's (or a human's) durable
	// account of one turn. It is stored beside the comments so the
	// two-machine merge keeps it with no rule of its own, and shown apart.
	Journal *JournalEntry `json:"journal,omitempty"`
}

// JournalEntry is what a journal entry says beyond its Text (the
// rationale): the decisions a turn made and what it deferred, and the
// turn it belongs to.
type JournalEntry struct {
	Turn      int      `json:"turn,omitempty"`
	Decisions []string `json:"decisions"`
	Deferrals []string `json:"deferrals"`
}

// Violations is violations.json: file-permission violations of the
// session. Pending files still owe a decision; decided ones are sticky.
type Violations struct {
	Pending []string          `json:"pending"`
	Decided map[string]string `json:"decided,omitempty"` // path -> approved | reverted
	// Bases maps a pending file to the pre-turn commit whose content a
	// revert restores.
	Bases map[string]string `json:"bases,omitempty"`
}

// Violation decisions.
const (
	Approved = "approved"
	Reverted = "reverted"
)

// Flag adds files changed outside the allowed paths to the pending set.
// An approved file is never flagged again (decisions are sticky); a
// reverted file the agent changed anew is flagged again, since a silent
// second revert would destroy work nobody decided about.
func (v *Violations) Flag(files []string, base string) {
	for _, f := range files {
		if v.Decided[f] == Approved || slices.Contains(v.Pending, f) {
			continue
		}
		delete(v.Decided, f)
		v.Pending = append(v.Pending, f)
		if v.Bases == nil {
			v.Bases = map[string]string{}
		}
		v.Bases[f] = base
	}
}

// ApprovedFiles lists the files approved so far.
func (v *Violations) ApprovedFiles() []string {
	var out []string
	for f, d := range v.Decided {
		if d == Approved {
			out = append(out, f)
		}
	}
	return out
}

// Op is op.json: the operation a commit applied, also mirrored in the
// commit's trailers so `git log` alone tells the story.
type Op struct {
	Name   string         `json:"op"`
	Actor  machine.Actor  `json:"actor"`
	From   machine.Status `json:"from,omitempty"`
	To     machine.Status `json:"to"`
	Clock  uint64         `json:"clock"`
	Host   string         `json:"host"`
	At     time.Time      `json:"at"`
	Reason string         `json:"reason,omitempty"`
}
