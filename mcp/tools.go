// Package mcp is lazy's Model Context Protocol surface: the tool
// definitions, the dispatcher that runs them as lifecycle operations with
// the caller's actor and scope, per-session tokens, the stdio proxy agents
// use, and the wait and progress markers those calls leave.
//
// One set of tool definitions serves both channels. The builder's server
// (lazy mcp) dispatches in-process with actor builder; an agent's server
// (lazy mcp-proxy) forwards every call to the daemon with its session
// token, and the daemon dispatches with actor agent, scoped to the task
// the token names, never to one the caller claims.
//
// Every tool declares an output schema, and every result is an object
// that matches it (lists are wrapped, empty lists are [], hashes are hex,
// times RFC 3339), so strict clients such as the TypeScript SDK accept it.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/inbox"
	"github.com/lazyorch/lazy/landing"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lazyorch/lazy/conversation"
	"github.com/lazyorch/lazy/cost"
	"github.com/lazyorch/lazy/internal/confine"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/marks"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// Caller is who is calling: the builder (Task empty) or the agent of Task.
type Caller struct {
	Actor machine.Actor
	Task  string
}

func (c Caller) agent() bool { return c.Task != "" }

// DefaultTimeoutSeconds bounds every long call unless the caller asks for
// another bound: below the TypeScript SDK's 60 s default request timeout,
// so a client that cannot reset its timeout on progress still gets a
// well-formed "still running" answer and simply calls again.
const DefaultTimeoutSeconds = 50

// MaxTimeoutSeconds is the longest bound a caller may ask for.
const MaxTimeoutSeconds = 3600

// Inputs of the tools. Field descriptions become the JSON schema the
// client sees.
type (
	// CreateIn is lazy_create's input.
	CreateIn struct {
		Title        string   `json:"title" jsonschema:"one-line title of the task"`
		Goal         string   `json:"goal,omitempty" jsonschema:"what done looks like, in prose; the agent reads this first"`
		Parent       string   `json:"parent,omitempty" jsonschema:"parent task (slug or id); an agent's subtasks always go under its own task"`
		AllowedPaths []string `json:"allowed_paths,omitempty" jsonschema:"globs of files the task may change; others become violations"`
		TargetBranch string   `json:"target_branch,omitempty" jsonschema:"existing branch a top-level task starts from and is accepted into (default: the repository's default branch)"`
		RequestID    string   `json:"request_id,omitempty" jsonschema:"an id you choose for this create, unique to it (a UUID): calling lazy_create again with the same request_id returns the task the first call created instead of making another, so retrying a call whose answer was lost never duplicates the task"`
		BudgetUSD    *float64 `json:"budget_usd,omitempty" jsonschema:"the task's own budget in US dollars for its turns and its subtasks', from 0 (no spend allowed) to 1000000000000 (default: git config lazy.budget.task); a parent's budget still holds it"`
	}
	// TaskIn names a task.
	TaskIn struct {
		Task string `json:"task" jsonschema:"task slug or id (a unique id prefix works too)"`
	}
	// StartIn is lazy_start's input.
	StartIn struct {
		Task    string `json:"task" jsonschema:"task slug or id of a backlog task"`
		Agent   string `json:"agent,omitempty" jsonschema:"claude, codex or exec (default: the repository's lazy.agent); with attempts, a comma-separated list cycled over the attempts (claude,codex)"`
		Command string `json:"command,omitempty" jsonschema:"the exec agent's command line"`
		Model   string `json:"model,omitempty" jsonschema:"the model the agent runs (Claude's and Codex's --model, such as sonnet or gpt-5-codex); default: the CLI's own"`
		// Attempts tries the task several ways side by side.
		Attempts int `json:"attempts,omitempty" jsonschema:"try the task this many ways side by side (2 to 8): each attempt is a task of its own (branch, worktree, agent, cost); compare them with lazy_show on the task and land one with lazy_accept on the task with attempt K, which closes the others"`
		// Sandbox, Network and PermissionMode ask for more confinement
		// than the task gets anyway, never less (lifecycle's confinement of a start).
		Sandbox        string `json:"sandbox,omitempty" jsonschema:"on: run the task's agent under bubblewrap (its worktree writable, the rest read-only, secrets and other worktrees hidden); off is refused wherever the task would run less confined than it must (the asking agent's session is sandboxed, or git config lazy.sandbox is on): only a human loosens confinement"`
		Network        string `json:"network,omitempty" jsonschema:"the sandbox's network, no more open than the task gets anyway: off (loopback only), on, or the hosts it may reach (api.anthropic.com,*.github.com); asking for a network runs the task sandboxed"`
		PermissionMode string `json:"permission_mode,omitempty" jsonschema:"Claude Code's permission mode for the task's work turns, no looser than it gets anyway: plan, dontAsk, default, acceptEdits or bypassPermissions"`
	}
	// StartOut is lazy_start's result: the task, and with attempts the
	// attempts that started and why any did not.
	StartOut struct {
		Task       View     `json:"task"`
		Attempts   []View   `json:"attempts,omitempty"`
		NotStarted []string `json:"not_started,omitempty"`
	}
	// UnblockIn is lazy_unblock's input.
	UnblockIn struct {
		Task          string   `json:"task" jsonschema:"task slug or id of a blocked, conflict or interrupted task"`
		Feedback      string   `json:"feedback" jsonschema:"feedback for the task's agent, delivered verbatim as its next prompt"`
		ApprovedFiles []string `json:"approved_files,omitempty" jsonschema:"pending file-permission violations to keep (the spec's name); the other pending files are reverted"`
		// ApproveFiles is approved_files under the name lazy first gave
		// it, kept so that existing clients keep working.
		ApproveFiles   []string `json:"approve_files,omitempty" jsonschema:"the same as approved_files (an alias kept for older clients); give one of the two, or both with the same files"`
		NoApproveFiles bool     `json:"no_approve_files,omitempty" jsonschema:"revert every pending file-permission violation"`
	}
	// AskIn is lazy_ask's input.
	AskIn struct {
		Task           string `json:"task" jsonschema:"task slug or id of a parked task"`
		Question       string `json:"question" jsonschema:"a question for the task's agent, answered read-only"`
		TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait for the answer before returning still_running (default 50)"`
	}
	// WaitIn is lazy_wait's input.
	WaitIn struct {
		Task           string `json:"task" jsonschema:"task slug or id whose running turn to wait for"`
		TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait before returning still_running (default 50); call again to keep waiting"`
	}
	// AcceptIn is lazy_accept's input.
	AcceptIn struct {
		Task           string `json:"task" jsonschema:"task slug or id"`
		Attempt        int    `json:"attempt,omitempty" jsonschema:"for a task tried several ways (lazy_start with attempts): which attempt K to land; the task then completes and its other attempts are closed (lazy_show on the task compares them)"`
		TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait before returning still_running (default 50); calling again with the same task picks the same run up"`
	}
	// EndIn is lazy_reject's and lazy_close's input.
	EndIn struct {
		Task   string `json:"task" jsonschema:"task slug or id"`
		Reason string `json:"reason,omitempty" jsonschema:"why, in prose"`
	}
	// CommentIn is lazy_comment's input.
	CommentIn struct {
		Task string `json:"task" jsonschema:"task slug or id"`
		Text string `json:"text" jsonschema:"the comment"`
	}
	// ListIn is lazy_list's input.
	ListIn struct {
		Status []machine.Status `json:"status,omitempty" jsonschema:"only these statuses"`
		Parent string           `json:"parent,omitempty" jsonschema:"only subtasks of this task"`
		Open   bool             `json:"open,omitempty" jsonschema:"leave out complete and abandoned tasks"`
	}
	// CostIn is lazy_cost's input: lazy cost's flags.
	CostIn struct {
		By    string `json:"by,omitempty" jsonschema:"group by task (the default), agent, model, day (local time) or outcome (accepted, rejected, closed, open)"`
		Since string `json:"since,omitempty" jsonschema:"count only turns from this day on: 2026-05-01, today, yesterday or 7d (the last seven days)"`
		Task  string `json:"task,omitempty" jsonschema:"only this task (slug or id) and its subtasks"`
	}
	// ProgressIn is lazy_update_progress's input.
	ProgressIn struct {
		Message string `json:"message" jsonschema:"one short line on what you are doing now; replaces the previous one"`
	}
	// ReasonIn is the input of lazy_stop and lazy_reopen.
	ReasonIn struct {
		Task   string `json:"task" jsonschema:"task slug or id"`
		Reason string `json:"reason,omitempty" jsonschema:"why, in prose (reopening an accepted task requires one)"`
	}
	// ReparentIn is lazy_reparent's input.
	ReparentIn struct {
		Task   string `json:"task" jsonschema:"task slug or id of a parked or backlog task"`
		Parent string `json:"parent,omitempty" jsonschema:"the new parent (slug or id); leave out with root to make it top-level"`
		Root   bool   `json:"root,omitempty" jsonschema:"make the task top-level"`
	}
	// EditIn is lazy_edit's input; a field left out is unchanged.
	EditIn struct {
		Task         string  `json:"task" jsonschema:"task slug or id"`
		Title        *string `json:"title,omitempty" jsonschema:"new one-line title"`
		Goal         *string `json:"goal,omitempty" jsonschema:"new goal, replacing the old one"`
		TargetBranch *string `json:"target_branch,omitempty" jsonschema:"new target branch (must exist; empty string: the default branch); top-level tasks before their first start only"`
	}
	// DiffIn is lazy_diff's input.
	DiffIn struct {
		Task     string `json:"task" jsonschema:"task slug or id of a started task"`
		Patch    bool   `json:"patch,omitempty" jsonschema:"include the patch itself, not only the stat"`
		MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"cut the patch after this many bytes (default 65536, at most 1048576)"`
	}
	// LogsIn is lazy_logs's input.
	LogsIn struct {
		Task  string `json:"task" jsonschema:"task slug or id"`
		Lines int    `json:"lines,omitempty" jsonschema:"how many of the last lines (default 100, at most 5000)"`
	}
	// JournalIn is lazy_journal's input.
	JournalIn struct {
		Task      string   `json:"task,omitempty" jsonschema:"task slug or id (an agent's journal is always its own task's; it may leave this out)"`
		Rationale string   `json:"rationale" jsonschema:"why this turn did what it did, in prose"`
		Decisions []string `json:"decisions,omitempty" jsonschema:"decisions made, one per item"`
		Deferrals []string `json:"deferrals,omitempty" jsonschema:"what was left for later, one per item"`
	}
)

// Outputs of the tools: always objects, so structuredContent is valid MCP.
type (
	// TaskOut is the result of a tool that changes one task.
	TaskOut struct {
		Task View `json:"task"`
	}
	// QueueIn is lazy_queue's input: it takes none.
	QueueIn struct{}
	// QueueOut is lazy_queue's result: this machine's merge queues.
	QueueOut struct {
		Queues []queue.View `json:"queues"`
	}
	// InboxIn is lazy_inbox's input: it takes none.
	InboxIn struct{}
	// InboxOut is lazy_inbox's result: what lazy inbox --json prints.
	InboxOut = inbox.Result
	// CostOut is lazy_cost's result: what lazy cost --json prints.
	CostOut = cost.Report
	// ListOut is lazy_list's result.
	ListOut struct {
		Tasks []View `json:"tasks"`
		Count int    `json:"count"`
	}
	// WaitOut is lazy_wait's result.
	WaitOut struct {
		Task     View       `json:"task"`
		LastTurn *task.Turn `json:"last_turn,omitempty"`
		Running
	}
	// AskOut is lazy_ask's result.
	AskOut struct {
		Answer string         `json:"answer"`
		Status machine.Status `json:"status"`
		Error  string         `json:"error,omitempty"`
		Running
	}
	// AcceptOut is lazy_accept's result.
	AcceptOut struct {
		Task     *View    `json:"task,omitempty"`
		Into     string   `json:"into"`
		Commit   string   `json:"commit"`
		Pending  string   `json:"pending"`
		Warnings []string `json:"warnings"`
		// GateRun is the merge-gate run that passed on the landed tree.
		GateRun string `json:"gate_run,omitempty"`
		Running
	}
	// SubmitOut is lazy_submit's result.
	SubmitOut struct {
		Task     *View  `json:"task,omitempty"`
		PRNumber int    `json:"pr_number"`
		PRURL    string `json:"pr_url"`
		Updated  bool   `json:"updated"`
		Running
	}
	// EndOut is lazy_reject's and lazy_close's result.
	EndOut struct {
		Task    View     `json:"task"`
		Cleanup []string `json:"cleanup"`
	}
	// DiffOut is lazy_diff's result.
	DiffOut struct {
		Task        string   `json:"task"`
		Branch      string   `json:"branch"`
		Base        string   `json:"base"`
		Stat        string   `json:"stat"`
		Files       []string `json:"files"`
		Patch       string   `json:"patch"`
		Truncated   bool     `json:"truncated"`
		Uncommitted []string `json:"uncommitted"`
		// ProtectedChanges names the protected paths the change touches,
		// which only a human can approve.
		ProtectedChanges *landing.ProtectedView `json:"protected_changes,omitempty"`
	}
	// LogsOut is lazy_logs's result.
	LogsOut struct {
		Task      string   `json:"task"`
		Lines     []string `json:"lines"`
		Truncated bool     `json:"truncated"`
	}
	// JournalOut is lazy_journal's result.
	JournalOut struct {
		Task  View         `json:"task"`
		Entry task.Comment `json:"entry"`
	}
	// Running says a long call returned before what it waits on ended.
	Running struct {
		StillRunning bool   `json:"still_running"`
		WaitingOn    string `json:"waiting_on,omitempty" jsonschema:"what the call is waiting on, when still_running"`
		Next         string `json:"next,omitempty" jsonschema:"what to call next"`
	}
)

// Hints are a tool's MCP annotations.
type Hints struct {
	ReadOnly, Destructive, Idempotent, OpenWorld bool
}

// Tool describes one tool for both channels.
type Tool struct {
	Name, Title, Description string
	Hints                    Hints
	// AgentOnly tools exist only on an agent's server, BuilderOnly ones
	// only on the builder's.
	AgentOnly, BuilderOnly bool
	// Long tools send progress notifications while they run.
	Long bool
	// register adds the tool to a server with its typed input and output.
	register func(*sdk.Server, Tool, Backend) error
}

var (
	readOnly    = Hints{ReadOnly: true, Idempotent: true}
	additive    = Hints{}
	runsAgent   = Hints{OpenWorld: true} // launches an agent CLI, which talks to its model provider
	destructive = Hints{Destructive: true}
)

// Tools is every tool, in the order servers list them.
var Tools = []Tool{
	{Name: "lazy_create", Title: "Create task", Hints: additive, register: add[CreateIn, TaskOut],
		Description: "Create a task in backlog (an agent's tasks are its subtasks). Changes nothing else. Next: lazy_start it, or lazy_create more first."},
	{Name: "lazy_start", Title: "Start task", Hints: runsAgent, register: add[StartIn, StartOut],
		Description: "Start a backlog task: create its branch and worktree and launch an agent turn (backlog -> working). Returns at once. With attempts: N, the task is tried N ways side by side, each attempt a task of its own that runs instead (agent may list agents to cycle, model picks the model). The task runs at least as confined as the session that asks and as lazy's config (sandbox, network, permission mode): sandbox, network and permission_mode may tighten that, never loosen it. Next: lazy_wait until the turn ends (each attempt's)."},
	{Name: "lazy_wait", Title: "Wait for turn", Hints: readOnly, Long: true, register: add[WaitIn, WaitOut],
		Description: "Wait until a working task's turn ends, then return its status and last turn (returns at once for a task that is not working). Sends progress with the agent's phase. After timeout_seconds it returns still_running: true; call it again to keep waiting. Next: review with lazy_show or lazy_diff, then lazy_unblock or lazy_accept."},
	{Name: "lazy_show", Title: "Show task", Hints: readOnly, register: add[TaskIn, ShowOut],
		Description: "Show one task: summary, live substate, goal, session, the last 20 turns, comments, journal, pending file-permission violations and its status history. Also available as the resource lazy://task/{task}."},
	{Name: "lazy_list", Title: "List tasks", Hints: readOnly, register: add[ListIn, ListOut],
		Description: "List tasks with their statuses and live substates, optionally filtered by status or parent. Blocked and conflict tasks wait for you: review them, then lazy_unblock or lazy_accept."},
	{Name: "lazy_queue", Title: "Merge queues", Hints: readOnly, BuilderOnly: true, register: add[QueueIn, QueueOut],
		Description: "This machine's merge queues, one per target branch: the accepts waiting or running in order (waiting, gating, landing, or fixing: the agent is fixing a failed gate), and the newest entries that left with why (landed, failed, conflict, removed). lazy_accept of a task enters its target's queue; each accept gates the exact tree it lands."},
	{Name: "lazy_inbox", Title: "What waits on a human", Hints: readOnly, BuilderOnly: true, register: add[InboxIn, InboxOut],
		Description: "Every task that waits on a human, from this clone and from the clones and runners whose records lazy pull brought here, oldest first: why (blocked, asked, conflict, gate_failed, over_budget, interrupted, protected, pick: an attempt group's pick by the gate, one item for the group), the host or runner it waits on, since when, and the one lazy command that answers it (a human's to run). Reads records only."},
	{Name: "lazy_cost", Title: "What work cost", Hints: readOnly, BuilderOnly: true, register: add[CostIn, CostOut],
		Description: "What agent turns cost, in US dollars and tokens, grouped by task (with each task's subtasks rolled up), agent, model, day or outcome (accepted, rejected, closed, open: what thrown-away work cost), with a total; optionally since a day and for one task and its subtasks. Reads records only."},
	{Name: "lazy_diff", Title: "Diff task", Hints: readOnly, register: add[DiffIn, DiffOut],
		Description: "What a started task's branch changed since it left its base branch: a stat and file list, with the patch (bounded by max_bytes) when patch is true, and the worktree's uncommitted files."},
	{Name: "lazy_logs", Title: "Agent log", Hints: readOnly, register: add[LogsIn, LogsOut],
		Description: "The last lines of the agent log of a task's latest turn on this machine: what the agent printed, for a turn that is slow, failed or was interrupted."},
	{Name: "lazy_unblock", Title: "Unblock task", Hints: runsAgent, register: add[UnblockIn, TaskOut],
		Description: "Give a blocked, conflict or interrupted task feedback and start its next turn (-> working); decides pending file-permission violations when asked to: approved_files keeps those files and reverts the other pending ones (approve_files is the same, an alias), no_approve_files reverts them all. Next: lazy_wait."},
	{Name: "lazy_ask", Title: "Ask agent", Hints: runsAgent, Long: true, register: add[AskIn, AskOut],
		Description: "Ask a parked task's agent a read-only question and wait for the answer; the task's status is unchanged afterwards. Sends progress. After timeout_seconds it returns still_running: true; then lazy_wait the task and read the answer in its last_turn."},
	{Name: "lazy_accept", Title: "Accept task", Hints: Hints{Destructive: true, OpenWorld: true}, Long: true, register: add[AcceptIn, AcceptOut],
		Description: "Squash-merge a blocked task into its parent's or target branch and finish it (-> complete), removing its worktree and branch; a submitted task merges through its forge; for a task tried several ways, attempt names the one to land. An agent may accept its direct subtasks only. Sends the merge's narration as progress. After timeout_seconds it returns still_running: true; call it again with the same task to pick the same accept up."},
	submitTool,
	{Name: "lazy_resume", Title: "Resume task", Hints: runsAgent, register: add[TaskIn, TaskOut],
		Description: "Restart an interrupted task's agent without new feedback (interrupted -> working); feedback it never received is re-delivered. Next: lazy_wait."},
	{Name: "lazy_stop", Title: "Stop turn", Hints: destructive, register: add[ReasonIn, TaskOut],
		Description: "Stop a working task's running turn (the agent is killed; committed and uncommitted work stays in the worktree) and park it as blocked. Next: lazy_unblock with new directions, or lazy_close."},
	{Name: "lazy_sync", Title: "Sync task", Hints: runsAgent, register: add[TaskIn, TaskOut],
		Description: "Merge upstream (the parent's or target branch) into a parked task's branch in a short turn that resolves conflicts (-> working, then back to where it was). Next: lazy_wait."},
	{Name: "lazy_comment", Title: "Comment", Hints: additive, register: add[CommentIn, TaskOut],
		Description: "Add a comment to a task. It changes no status and is not delivered to the agent (use lazy_unblock for that)."},
	{Name: "lazy_journal", Title: "Journal entry", Hints: additive, register: add[JournalIn, JournalOut],
		Description: "Append a durable journal entry for the current turn: the rationale, the decisions made and what was deferred, stamped with your actor. Read it back in lazy_show's journal. An agent writes to its own task's journal."},
	{Name: "lazy_edit", Title: "Edit task", Hints: additive, register: add[EditIn, TaskOut],
		Description: "Change a task's title, goal or target branch (the branch must exist; top-level tasks before their first start only). Recorded in the task's history. A running agent sees a new goal on its next turn."},
	{Name: "lazy_reparent", Title: "Reparent task", Hints: additive, BuilderOnly: true, register: add[ReparentIn, TaskOut],
		Description: "Move a parked or backlog task under another parent, or to the top level with root: true. It then merges upstream from, and is accepted into, the new parent's branch."},
	{Name: "lazy_reject", Title: "Reject task", Hints: destructive, register: add[EndIn, EndOut],
		Description: "Abandon a task, rejecting its work (-> abandoned); its worktree is removed when clean, its branch is kept. lazy_reopen undoes it."},
	{Name: "lazy_close", Title: "Close task", Hints: destructive, register: add[EndIn, EndOut],
		Description: "Abandon a task that will not be done (-> abandoned); its worktree is removed when clean, its branch is kept. lazy_reopen undoes it."},
	{Name: "lazy_reopen", Title: "Reopen task", Hints: additive, register: add[ReasonIn, TaskOut],
		Description: "Reopen a complete or abandoned task (-> blocked, or backlog if it never ran); an accepted task needs a reason. Next: lazy_unblock it."},
	{Name: "lazy_update_progress", Title: "Update progress", Hints: Hints{Idempotent: true}, AgentOnly: true, register: add[ProgressIn, marks.ProgressResult],
		Description: "Post one short line about what you are doing; it replaces the previous line and is shown on every surface. It is not history: put durable rationale in lazy_journal."},
}

// Hooks connect the dispatcher to the process it runs in.
type Hooks struct {
	// Env returns an operations environment acting as actor, for caller
	// task (empty for the builder).
	Env func(actor machine.Actor, caller string) (*wire.Env, error)
	// StartInput resolves lazy_start's agent and command with the
	// repository's defaults.
	StartInput func(agent, command string) (session.StartInput, error)
	// Wait blocks until task id's turn is recorded or timeout.
	Wait func(ctx context.Context, id string, timeout time.Duration) (*task.Snapshot, error)
	// Accept returns the accept options (pre-accept turn) to use.
	Accept func() landing.AcceptOptions
}

// Store is the task store the tools read: the task.Store port and a
// task's detail (goal, turns, comments) in one bounded read
// (gitstore.Store in lazy).
type Store interface {
	task.Store
	Detail(sn *task.Snapshot, lastTurns int) (*task.Detail, error)
}

// Dispatcher runs tool calls.
type Dispatcher struct {
	Store Store
	Hooks Hooks
	Marks *marks.Marks // wait and progress markers; nil disables them
	// Tick is how often a long call looks at its task to report progress
	// (0: every second).
	Tick time.Duration

	mu      sync.Mutex
	flights map[string]*flight
	// changing counts the calls in flight that change something: each
	// runs to its end even if its caller cancels or goes away, and Drain
	// waits for them.
	changing sync.WaitGroup
}

// ErrUnknownTool is returned for a tool name no server offers.
var ErrUnknownTool = errors.New("unknown tool")

// Call runs tool with its JSON arguments for caller and returns the
// result's JSON. A refusal is an error worded for the caller.
//
// A call that changes something is not cancelled halfway (a closed stdin,
// notifications/cancelled): stopping between its steps would leave work
// half done and report an error about whatever step was cut. It runs to
// its end, and a client that retries finds it done (lazy_create with a
// request_id returns the same task).
func (d *Dispatcher) Call(ctx context.Context, caller Caller, tool string, args json.RawMessage) (json.RawMessage, error) {
	if changes(tool) {
		d.changing.Add(1)
		defer d.changing.Done()
		ctx = context.WithValue(context.WithoutCancel(ctx), callerKey{}, ctx)
	}
	out, err := d.call(ctx, caller, tool, args)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func decode[T any](args json.RawMessage) (T, error) {
	var in T
	if len(args) == 0 {
		args = []byte("{}")
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return in, fmt.Errorf("bad arguments: %w", err)
	}
	return in, nil
}

// callerKey holds the caller's own context of a call that runs
// uncancelled (see Call).
type callerKey struct{}

// callerCtx is the context to wait in: a call that runs uncancelled still
// stops waiting (for a turn, for an accept) when its caller cancels, and
// what it started goes on without it.
func callerCtx(ctx context.Context) context.Context {
	if c, ok := ctx.Value(callerKey{}).(context.Context); ok {
		return c
	}
	return ctx
}

// changes reports whether tool changes anything (it is not read-only).
func changes(tool string) bool {
	for _, t := range Tools {
		if t.Name == tool {
			return !t.Hints.ReadOnly
		}
	}
	return false
}

func offered(tool string, agent bool) bool {
	for _, t := range Tools {
		if t.Name == tool {
			return agent && !t.BuilderOnly || !agent && !t.AgentOnly
		}
	}
	return false
}

// run decodes In and runs f on it.
func run[In any](args json.RawMessage, f func(In) (any, error)) (any, error) {
	in, err := decode[In](args)
	if err != nil {
		return nil, err
	}
	return f(in)
}

// namesTask is an input that names the one task its tool acts on.
type namesTask interface{ taskName() string }

func (in StartIn) taskName() string   { return in.Task }
func (in UnblockIn) taskName() string { return in.Task }
func (in AcceptIn) taskName() string  { return in.Task }
func (in EndIn) taskName() string     { return in.Task }
func (in TaskIn) taskName() string    { return in.Task }
func (in CommentIn) taskName() string { return in.Task }
func (in ReasonIn) taskName() string  { return in.Task }
func (in EditIn) taskName() string    { return in.Task }
func (in DiffIn) taskName() string    { return in.Task }
func (in LogsIn) taskName() string    { return in.Task }

// runOnTask decodes In, resolves the task it names within reach r (a
// task out of reach is refused before f runs) and runs f on its id.
func runOnTask[In namesTask](args json.RawMessage, resolve func(string, reach) (string, error), r reach, f func(id string, in In) (any, error)) (any, error) {
	return run(args, func(in In) (any, error) {
		id, err := resolve(in.taskName(), r)
		if err != nil {
			return nil, err
		}
		return f(id, in)
	})
}

// call runs one tool call: a tool the caller is not offered is unknown
// to it; the others run in an operations environment acting as the
// caller, by the group of tools they belong to.
func (d *Dispatcher) call(ctx context.Context, caller Caller, tool string, args json.RawMessage) (any, error) {
	if !offered(tool, caller.agent()) {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, tool)
	}
	env, err := d.Hooks.Env(caller.Actor, caller.Task)
	if err != nil {
		return nil, err
	}
	if out, ok, err := d.callForge(ctx, env, caller, tool, args); ok {
		return out, err
	}
	c := &toolCall{d: d, env: env, caller: caller, tool: tool, args: args}
	for _, group := range c.groups() {
		if out, ok, err := group(ctx); ok {
			return out, err
		}
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownTool, tool)
}

// toolCall is one tool call on its way to the operation it names.
type toolCall struct {
	d      *Dispatcher
	env    *wire.Env
	caller Caller
	tool   string
	args   json.RawMessage
}

// groups are the tool groups a call is offered to; exactly one runs each
// tool but lazy_submit (callForge).
func (c *toolCall) groups() []func(context.Context) (any, bool, error) {
	return []func(context.Context) (any, bool, error){c.turnTool, c.recordTool, c.readTool}
}

// task resolves a task argument within the caller's reach.
func (c *toolCall) task(name string, r reach) (string, error) { return c.d.scope(c.caller, name, r) }

// handled is a tool group's answer for a tool it runs.
func handled(out any, err error) (any, bool, error) { return out, true, err }

// turnTool runs the tools that move a task through its lifecycle (start
// a turn, wait for it, park, accept, end); ok is false for any other.
func (c *toolCall) turnTool(ctx context.Context) (out any, ok bool, err error) {
	d, env, args := c.d, c.env, c.args
	switch c.tool {
	case "lazy_start":
		return handled(runOnTask(args, c.task, scopeChild, func(id string, in StartIn) (any, error) {
			return d.start(ctx, env, id, in)
		}))
	case "lazy_unblock":
		return handled(runOnTask(args, c.task, scopeChild, func(id string, in UnblockIn) (any, error) {
			approved, err := in.approved()
			if err != nil {
				return nil, err
			}
			return d.taskOut(env.Lifecycle().Unblock(ctx, id, in.Feedback, lifecycle.Decisions{Approve: approved, RevertRest: in.NoApproveFiles}))
		}))
	case "lazy_ask":
		return handled(run(args, func(in AskIn) (any, error) { return d.ask(ctx, env, c.caller, in) }))
	case "lazy_wait":
		return handled(run(args, func(in WaitIn) (any, error) { return d.wait(ctx, c.caller, in) }))
	case "lazy_accept":
		return handled(runOnTask(args, c.task, scopeAccept, func(id string, in AcceptIn) (any, error) {
			return d.accept(ctx, env, id, in)
		}))
	case "lazy_reject", "lazy_close":
		return handled(runOnTask(args, c.task, scopeChild, func(id string, in EndIn) (any, error) { return c.end(ctx, id, in) }))
	case "lazy_resume":
		return handled(runOnTask(args, c.task, scopeChild, func(id string, _ TaskIn) (any, error) {
			return d.taskOut(env.Lifecycle().Resume(ctx, id))
		}))
	case "lazy_stop":
		return handled(runOnTask(args, c.task, scopeChild, func(id string, in ReasonIn) (any, error) {
			return d.taskOut(env.Lifecycle().Stop(ctx, id, in.Reason))
		}))
	case "lazy_sync":
		return handled(runOnTask(args, c.task, scopeChild, func(id string, _ TaskIn) (any, error) {
			return d.taskOut(env.Conversation().Sync(ctx, id))
		}))
	case "lazy_reopen":
		return handled(runOnTask(args, c.task, scopeChild, func(id string, in ReasonIn) (any, error) {
			return d.taskOut(env.Lifecycle().Reopen(ctx, id, in.Reason))
		}))
	}
	return nil, false, nil
}

// end rejects or closes task id, as the tool says, and cleans up what
// the ended session leaves (a branch with unmerged work is kept).
func (c *toolCall) end(ctx context.Context, id string, in EndIn) (any, error) {
	end := c.env.Lifecycle().Close
	if c.tool == "lazy_reject" {
		end = c.env.Lifecycle().Reject
	}
	sn, err := end(ctx, id, in.Reason)
	if err != nil {
		return nil, err
	}
	notes, err := c.env.Landing().Cleanups().CleanupAbandoned(ctx, sn, false)
	if err != nil {
		return nil, err
	}
	return EndOut{Task: c.d.view(sn), Cleanup: nonNil(notes)}, nil
}

// recordTool runs the tools that write to a task's record without
// starting a turn (create, comment, journal, edit, reparent, progress);
// ok is false for any other.
func (c *toolCall) recordTool(ctx context.Context) (out any, ok bool, err error) {
	d, env, args := c.d, c.env, c.args
	switch c.tool {
	case "lazy_create":
		return handled(run(args, func(in CreateIn) (any, error) { return d.create(ctx, env, c.caller, in) }))
	case "lazy_comment":
		return handled(runOnTask(args, c.task, scopeSelfOrChild, func(id string, in CommentIn) (any, error) {
			sn, _, err := env.Lifecycle().Comment(ctx, id, in.Text)
			return d.taskOut(sn, err)
		}))
	case "lazy_journal":
		return handled(run(args, func(in JournalIn) (any, error) { return c.journal(ctx, in) }))
	case "lazy_reparent":
		return handled(run(args, func(in ReparentIn) (any, error) { return c.reparent(ctx, in) }))
	case "lazy_edit":
		return handled(runOnTask(args, c.task, scopeChild, func(id string, in EditIn) (any, error) {
			return d.taskOut(env.Lifecycle().Edit(ctx, id, lifecycle.EditInput{Title: in.Title, Goal: in.Goal, TargetBranch: in.TargetBranch}))
		}))
	case "lazy_update_progress":
		return handled(run(args, func(in ProgressIn) (any, error) {
			if d.Marks == nil {
				return nil, errors.New("progress is not recorded here")
			}
			return d.Marks.SetProgress(c.caller.Task, in.Message)
		}))
	}
	return nil, false, nil
}

// journal records a journal entry on the task named, which for an agent
// defaults to its own task: the journal is the agent's own record.
func (c *toolCall) journal(ctx context.Context, in JournalIn) (any, error) {
	name := in.Task
	if c.caller.agent() && name == "" {
		name = c.caller.Task
	}
	if name == "" {
		return nil, errors.New("name the task whose journal this entry belongs to (task)")
	}
	id, err := c.task(name, scopeSelf)
	if err != nil {
		return nil, err
	}
	sn, entry, err := c.env.Conversation().Journal(ctx, id, conversation.JournalInput{Rationale: in.Rationale, Decisions: in.Decisions, Deferrals: in.Deferrals})
	if err != nil {
		return nil, err
	}
	return JournalOut{Task: c.d.view(sn), Entry: entry}, nil
}

// reparent moves a task under a new parent or to the top level; exactly
// one of the two is asked for.
func (c *toolCall) reparent(ctx context.Context, in ReparentIn) (any, error) {
	if in.Root == (in.Parent != "") {
		return nil, errors.New("give either parent (the new parent task) or root: true (top level), not both or neither")
	}
	id, err := c.task(in.Task, scopeChild)
	if err != nil {
		return nil, err
	}
	return c.d.taskOut(c.env.Lifecycle().Reparent(ctx, id, in.Parent))
}

// readTool runs the tools that only read (show, list, diff, logs); ok is
// false for any other.
func (c *toolCall) readTool(ctx context.Context) (out any, ok bool, err error) {
	d, env, args := c.d, c.env, c.args
	switch c.tool {
	case "lazy_show":
		return handled(runOnTask(args, c.task, scopeSelfOrChild, func(id string, _ TaskIn) (any, error) {
			return d.Show(ctx, env, id)
		}))
	case "lazy_list":
		return handled(run(args, func(in ListIn) (any, error) { return d.list(c.caller, in) }))
	case "lazy_queue":
		return handled(run(args, func(QueueIn) (any, error) {
			q := env.Queue().Queues()
			if q == nil {
				q = []queue.View{}
			}
			return QueueOut{Queues: q}, nil
		}))
	case "lazy_inbox":
		return handled(run(args, func(InboxIn) (any, error) {
			svc, err := env.Inbox()
			if err != nil {
				return nil, err
			}
			res, err := svc.List(ctx)
			if err != nil {
				return nil, err
			}
			return *res, nil
		}))
	case "lazy_cost":
		return handled(run(args, func(in CostIn) (any, error) { return costReport(d.Store, in, time.Now()) }))
	case "lazy_diff":
		return handled(runOnTask(args, c.task, scopeSelfOrChild, func(id string, in DiffIn) (any, error) {
			r, err := env.Review().Diff(ctx, id, in.Patch, in.MaxBytes)
			if err != nil {
				return nil, err
			}
			out := DiffOut{Task: id, Branch: r.Branch, Base: r.Base, Stat: r.Stat, Files: r.Files, Patch: r.Patch, Truncated: r.Truncated, Uncommitted: r.Uncommitted}
			if sn, err := d.Store.Load(id); err == nil {
				out.ProtectedChanges, _ = env.Landing().Gates().ProtectedChanges(ctx, sn)
			}
			return out, nil
		}))
	case "lazy_logs":
		return handled(runOnTask(args, c.task, scopeSelfOrChild, func(id string, in LogsIn) (any, error) {
			r, err := env.Review().Logs(ctx, id, in.Lines)
			if err != nil {
				return nil, err
			}
			return LogsOut{Task: id, Lines: r.Lines, Truncated: r.Truncated}, nil
		}))
	}
	return nil, false, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// start runs lazy_start: one start, or the task's attempts.
func (d *Dispatcher) start(ctx context.Context, env *wire.Env, id string, in StartIn) (any, error) {
	var agents []string
	for _, a := range strings.Split(in.Agent, ",") {
		if a = strings.TrimSpace(a); a != "" {
			agents = append(agents, a)
		}
	}
	if len(agents) > 1 && in.Attempts == 0 {
		return nil, fmt.Errorf("a list of agents (%s) goes with attempts, which cycles it over the attempts", in.Agent)
	}
	first := ""
	if len(agents) > 0 {
		first = agents[0]
	}
	si, err := d.Hooks.StartInput(first, in.Command)
	if err != nil {
		return nil, err
	}
	si.Model = strings.TrimSpace(in.Model)
	si.Request = confine.Request{Sandbox: sanitize.Field(in.Sandbox), Network: sanitize.Field(in.Network), PermissionMode: sanitize.Field(in.PermissionMode)}
	if in.Attempts == 0 {
		sn, err := env.Lifecycle().Start(ctx, id, si)
		if err != nil {
			return nil, err
		}
		return StartOut{Task: d.view(sn)}, nil
	}
	if len(agents) > 0 {
		agents[0] = si.Agent
	}
	res, err := env.Attempts().Start(ctx, id, attempts.Input{N: in.Attempts, Agents: agents, Base: si})
	if err != nil {
		return nil, err
	}
	out := StartOut{Task: d.view(res.Group)}
	for _, sn := range res.Started {
		out.Attempts = append(out.Attempts, d.view(sn))
	}
	for _, e := range res.NotStart {
		out.NotStarted = append(out.NotStarted, e.Error())
	}
	return out, nil
}

// approved is the files lazy_unblock keeps: approved_files (the
// spec's name) or approve_files (its alias). Both may be given only when
// they name the same files: which one the caller meant is otherwise a
// guess, and a guess here reverts files.
func (in UnblockIn) approved() ([]string, error) {
	switch {
	case len(in.ApproveFiles) == 0:
		return in.ApprovedFiles, nil
	case len(in.ApprovedFiles) == 0:
		return in.ApproveFiles, nil
	}
	a, b := slices.Clone(in.ApprovedFiles), slices.Clone(in.ApproveFiles)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(slices.Compact(a), slices.Compact(b)) {
		return nil, errors.New("approved_files and approve_files (its alias) name different files; give the files to keep in approved_files alone")
	}
	return in.ApprovedFiles, nil
}

func (d *Dispatcher) taskOut(sn *task.Snapshot, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return TaskOut{Task: d.view(sn)}, nil
}

// costReport is lazy_cost: lazy cost's fetch and aggregation, the
// builder's view of every task.
func costReport(store Store, in CostIn, now time.Time) (CostOut, error) {
	q := cost.Query{By: cost.ByTask, Loc: time.Local}
	if strings.TrimSpace(in.By) != "" {
		by, err := cost.ParseBy(in.By)
		if err != nil {
			return CostOut{}, errors.New(strings.Replace(err.Error(), "--by", "by", 1))
		}
		q.By = by
	}
	if strings.TrimSpace(in.Since) != "" {
		since, err := cost.ParseSince(in.Since, now, time.Local)
		if err != nil {
			return CostOut{}, errors.New(strings.Replace(err.Error(), "--since", "since", 1))
		}
		q.Since = since
	}
	if in.Task != "" {
		id, err := store.Resolve(in.Task)
		if err != nil {
			return CostOut{}, err
		}
		q.Task = id
	}
	recs, unreadable, err := cost.Fetch(store, q)
	if err != nil {
		return CostOut{}, err
	}
	rep := cost.Aggregate(recs, q)
	rep.Unreadable = unreadable
	return rep, nil
}
