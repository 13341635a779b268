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
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/ops"
)

// Caller is who is calling: the builder (Task empty) or the agent of Task.
type Caller struct {
	Actor machine.Actor
	Task  string
}

func (c Caller) agent() bool { return c.Task != "" }

// Inputs of the tools. Field descriptions become the JSON schema the
// client sees.
type (
	// CreateIn is lazy_create's input.
	CreateIn struct {
		Title        string   `json:"title" jsonschema:"one-line title of the task"`
		Goal         string   `json:"goal,omitempty" jsonschema:"what done looks like, in prose"`
		Parent       string   `json:"parent,omitempty" jsonschema:"parent task (slug or id); an agent's subtasks always go under its own task"`
		AllowedPaths []string `json:"allowed_paths,omitempty" jsonschema:"globs of files the task may change; others become violations"`
		TargetBranch string   `json:"target_branch,omitempty" jsonschema:"branch a top-level task starts from and is accepted into"`
	}
	// TaskIn names a task.
	TaskIn struct {
		Task string `json:"task" jsonschema:"task slug or id (a unique id prefix works too)"`
	}
	// StartIn is lazy_start's input.
	StartIn struct {
		Task    string `json:"task" jsonschema:"task slug or id"`
		Agent   string `json:"agent,omitempty" jsonschema:"claude, codex or exec (default: the repository's lazy.agent)"`
		Command string `json:"command,omitempty" jsonschema:"the exec agent's command line"`
	}
	// UnblockIn is lazy_unblock's input.
	UnblockIn struct {
		Task           string   `json:"task" jsonschema:"task slug or id"`
		Feedback       string   `json:"feedback" jsonschema:"feedback for the task's agent, delivered verbatim"`
		ApproveFiles   []string `json:"approve_files,omitempty" jsonschema:"pending file-permission violations to keep; the other pending files are reverted"`
		NoApproveFiles bool     `json:"no_approve_files,omitempty" jsonschema:"revert every pending file-permission violation"`
	}
	// AskIn is lazy_ask's input.
	AskIn struct {
		Task           string `json:"task" jsonschema:"task slug or id"`
		Question       string `json:"question" jsonschema:"a question for the task's agent, answered read-only"`
		TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait for the answer (default 600)"`
	}
	// WaitIn is lazy_wait's input.
	WaitIn struct {
		Task           string `json:"task" jsonschema:"task slug or id whose running turn to wait for"`
		TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait (default 1800)"`
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
		Status []string `json:"status,omitempty" jsonschema:"only these statuses"`
		Parent string   `json:"parent,omitempty" jsonschema:"only subtasks of this task"`
	}
	// ProgressIn is lazy_update_progress's input.
	ProgressIn struct {
		Message string `json:"message" jsonschema:"one short line on what you are doing now; replaces the previous one"`
	}
)

// Tool describes one tool for both channels.
type Tool struct {
	Name, Description string
	// AgentOnly tools exist only on an agent's server.
	AgentOnly bool
	// register adds the tool to a server with its typed input.
	register func(*sdk.Server, Tool, Backend)
}

// Tools is every tool, in the order servers list them.
var Tools = []Tool{
	{Name: "lazy_create", Description: "Create a task in backlog (an agent's tasks are its subtasks).", register: add[CreateIn]},
	{Name: "lazy_start", Description: "Start a backlog task: branch, worktree and an agent turn.", register: add[StartIn]},
	{Name: "lazy_unblock", Description: "Give a parked task feedback and start its next turn; decides pending file-permission violations when asked to.", register: add[UnblockIn]},
	{Name: "lazy_ask", Description: "Ask a parked task's agent a read-only question and wait for the answer; the task's status is unchanged.", register: add[AskIn]},
	{Name: "lazy_wait", Description: "Wait until a task's running turn ends, then return its status and last turn.", register: add[WaitIn]},
	{Name: "lazy_accept", Description: "Squash-merge a parked task into its parent's or target branch (an agent may accept its direct subtasks only).", register: add[TaskIn]},
	submitTool,
	{Name: "lazy_reject", Description: "Abandon a task, rejecting its work (its branch is kept).", register: add[EndIn]},
	{Name: "lazy_close", Description: "Abandon a task that will not be done (its branch is kept).", register: add[EndIn]},
	{Name: "lazy_show", Description: "Show a task: summary, substate, goal, recent turns, comments, pending violations.", register: add[TaskIn]},
	{Name: "lazy_list", Description: "List tasks with their substates.", register: add[ListIn]},
	{Name: "lazy_comment", Description: "Add a comment to a task.", register: add[CommentIn]},
	{Name: "lazy_update_progress", Description: "Post one short line about what you are doing; it replaces the previous line and is shown on every surface.", AgentOnly: true, register: add[ProgressIn]},
}

// Hooks connect the dispatcher to the process it runs in.
type Hooks struct {
	// Env returns an operations environment acting as actor, for caller
	// task (empty for the builder).
	Env func(actor machine.Actor, caller string) (*ops.Env, error)
	// StartInput resolves lazy_start's agent and command with the
	// repository's defaults.
	StartInput func(agent, command string) (ops.StartInput, error)
	Launch     ops.Launcher
	// Wait blocks until task id's turn is recorded or timeout.
	Wait func(ctx context.Context, id string, timeout time.Duration) (*gitstore.Snapshot, error)
	// Accept returns the accept options (pre-accept turn) to use.
	Accept func() ops.AcceptOptions
}

// Dispatcher runs tool calls.
type Dispatcher struct {
	Store *gitstore.Store
	Hooks Hooks
	Marks *Marks // wait and progress markers; nil disables them
}

// ErrUnknownTool is returned for a tool name no server offers.
var ErrUnknownTool = errors.New("unknown tool")

// Call runs tool with its JSON arguments for caller and returns the
// result's JSON. A refusal is an error worded for the caller.
func (d *Dispatcher) Call(ctx context.Context, caller Caller, tool string, args json.RawMessage) (json.RawMessage, error) {
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

func (d *Dispatcher) call(ctx context.Context, caller Caller, tool string, args json.RawMessage) (any, error) {
	if caller.agent() && !knownTool(tool) || !caller.agent() && tool == "lazy_update_progress" {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, tool)
	}
	env, err := d.Hooks.Env(caller.Actor, caller.Task)
	if err != nil {
		return nil, err
	}
	if out, ok, err := d.callForge(ctx, env, caller, tool, args); ok {
		return out, err
	}
	switch tool {
	case "lazy_create":
		in, err := decode[CreateIn](args)
		if err != nil {
			return nil, err
		}
		return d.create(ctx, env, caller, in)
	case "lazy_start":
		in, err := decode[StartIn](args)
		if err != nil {
			return nil, err
		}
		id, err := d.scope(caller, in.Task, scopeChild)
		if err != nil {
			return nil, err
		}
		si, err := d.Hooks.StartInput(in.Agent, in.Command)
		if err != nil {
			return nil, err
		}
		sn, err := env.Start(ctx, id, si, d.Hooks.Launch)
		return summary(d, sn, err)
	case "lazy_unblock":
		in, err := decode[UnblockIn](args)
		if err != nil {
			return nil, err
		}
		id, err := d.scope(caller, in.Task, scopeChild)
		if err != nil {
			return nil, err
		}
		sn, err := env.Unblock(ctx, id, in.Feedback, ops.Decisions{Approve: in.ApproveFiles, RevertRest: in.NoApproveFiles}, d.Hooks.Launch)
		return summary(d, sn, err)
	case "lazy_ask":
		in, err := decode[AskIn](args)
		if err != nil {
			return nil, err
		}
		return d.ask(ctx, env, caller, in)
	case "lazy_wait":
		in, err := decode[WaitIn](args)
		if err != nil {
			return nil, err
		}
		return d.wait(ctx, caller, in)
	case "lazy_accept":
		in, err := decode[TaskIn](args)
		if err != nil {
			return nil, err
		}
		id, err := d.scope(caller, in.Task, scopeAccept)
		if err != nil {
			return nil, err
		}
		var opts ops.AcceptOptions
		if d.Hooks.Accept != nil {
			opts = d.Hooks.Accept()
		}
		res, err := env.Accept(ctx, id, nil, opts)
		if err != nil {
			return nil, err
		}
		return map[string]any{"task": gitstore.NewSummary(&res.Snapshot.Task), "into": res.Into, "commit": res.Commit, "pending": res.Pending, "warnings": nonNil(res.Warnings)}, nil
	case "lazy_reject", "lazy_close":
		in, err := decode[EndIn](args)
		if err != nil {
			return nil, err
		}
		id, err := d.scope(caller, in.Task, scopeChild)
		if err != nil {
			return nil, err
		}
		end := env.Close
		if tool == "lazy_reject" {
			end = env.Reject
		}
		sn, err := end(ctx, id, in.Reason)
		if err != nil {
			return nil, err
		}
		notes, err := env.CleanupAbandoned(ctx, sn, false)
		if err != nil {
			return nil, err
		}
		return map[string]any{"task": d.view(sn), "cleanup": nonNil(notes)}, nil
	case "lazy_show":
		in, err := decode[TaskIn](args)
		if err != nil {
			return nil, err
		}
		id, err := d.scope(caller, in.Task, scopeSelfOrChild)
		if err != nil {
			return nil, err
		}
		return d.show(id)
	case "lazy_list":
		in, err := decode[ListIn](args)
		if err != nil {
			return nil, err
		}
		return d.list(caller, in)
	case "lazy_comment":
		in, err := decode[CommentIn](args)
		if err != nil {
			return nil, err
		}
		id, err := d.scope(caller, in.Task, scopeSelfOrChild)
		if err != nil {
			return nil, err
		}
		sn, _, err := env.Comment(ctx, id, in.Text)
		return summary(d, sn, err)
	case "lazy_update_progress":
		in, err := decode[ProgressIn](args)
		if err != nil {
			return nil, err
		}
		if d.Marks == nil {
			return nil, errors.New("progress is not recorded here")
		}
		return d.Marks.SetProgress(caller.Task, in.Message)
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownTool, tool)
}

func knownTool(tool string) bool {
	for _, t := range Tools {
		if t.Name == tool {
			return true
		}
	}
	return false
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func summary(d *Dispatcher, sn *gitstore.Snapshot, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return d.view(sn), nil
}
