package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/ops"
)

// What a call may reach from an agent's task.
type reach int

const (
	scopeSelfOrChild reach = iota // read, comment
	scopeChild                    // drive: start, unblock, ask, wait, reject, close
	scopeAccept                   // accept: a direct child only
)

// ErrScope is a call outside the caller's scope.
var ErrScope = errors.New("outside this agent's scope")

// scope resolves name and checks the caller may act on it. The builder
// reaches everything; an agent its own task (for reading and comments)
// and its direct subtasks, nothing above or beside it.
func (d *Dispatcher) scope(caller Caller, name string, r reach) (string, error) {
	id, err := d.Store.Resolve(name)
	if err != nil {
		return "", err
	}
	if !caller.agent() {
		return id, nil
	}
	if id == caller.Task {
		if r == scopeSelfOrChild {
			return id, nil
		}
		return "", fmt.Errorf("%w: a task's agent cannot start, unblock, ask, wait for, finish or accept its own task", ErrScope)
	}
	sn, err := d.Store.Load(id)
	if err != nil {
		return "", err
	}
	if sn.Task.Parent != caller.Task {
		// Named as the caller named it: nothing about a task outside the
		// scope is told.
		return "", fmt.Errorf("%w: %q is not a subtask of this agent's task; an agent may act on its own task and its direct subtasks only", ErrScope, name)
	}
	return id, nil
}

func (d *Dispatcher) create(ctx context.Context, env *ops.Env, caller Caller, in CreateIn) (any, error) {
	parent := in.Parent
	if caller.agent() {
		if parent != "" {
			id, err := d.Store.Resolve(parent)
			if err != nil {
				return nil, err
			}
			if id != caller.Task {
				return nil, fmt.Errorf("%w: an agent creates subtasks of its own task only", ErrScope)
			}
		}
		parent = caller.Task
	}
	sn, err := env.Create(ctx, ops.CreateInput{Title: in.Title, Goal: in.Goal, Parent: parent, TargetBranch: in.TargetBranch, AllowedPaths: in.AllowedPaths})
	return summary(d, sn, err)
}

func seconds(n, def int) time.Duration {
	if n <= 0 {
		n = def
	}
	return time.Duration(n) * time.Second
}

func (d *Dispatcher) ask(ctx context.Context, env *ops.Env, caller Caller, in AskIn) (any, error) {
	id, err := d.scope(caller, in.Task, scopeChild)
	if err != nil {
		return nil, err
	}
	sn, err := env.Ask(ctx, id, in.Question, d.Hooks.Launch)
	if err != nil {
		return nil, err
	}
	final, err := d.tracked(ctx, caller, sn, seconds(in.TimeoutSeconds, 600))
	if err != nil {
		return nil, err
	}
	turns, err := d.Store.Turns(final)
	if err != nil || len(turns) == 0 {
		return nil, err
	}
	answer := turns[len(turns)-1]
	out := map[string]any{"answer": answer.Content, "status": final.Task.Status}
	if answer.Error != "" {
		out["error"] = answer.Error
	}
	return out, nil
}

func (d *Dispatcher) wait(ctx context.Context, caller Caller, in WaitIn) (any, error) {
	id, err := d.scope(caller, in.Task, scopeChild)
	if err != nil {
		return nil, err
	}
	sn, err := d.Store.Load(id)
	if err != nil {
		return nil, err
	}
	final, err := d.tracked(ctx, caller, sn, seconds(in.TimeoutSeconds, 1800))
	if err != nil {
		return nil, err
	}
	out := map[string]any{"task": d.view(final)}
	if turns, err := d.Store.Turns(final); err == nil && len(turns) > 0 {
		out["last_turn"] = turns[len(turns)-1]
	}
	return out, nil
}

// tracked waits for sn's turn with the wait marked: the marker is
// settled in a deferred call, however the wait ends.
func (d *Dispatcher) tracked(ctx context.Context, caller Caller, sn *gitstore.Snapshot, timeout time.Duration) (final *gitstore.Snapshot, err error) {
	done := d.Marks.startWait(caller, sn)
	defer func() { done(err) }()
	return d.Hooks.Wait(ctx, sn.Task.ID, timeout)
}

// View is a task as the tools show it: its summary plus the derived
// substate.
type View struct {
	gitstore.Summary
	Live string `json:"live_substate,omitempty"`
}

func (d *Dispatcher) view(sn *gitstore.Snapshot) View {
	v := View{Summary: gitstore.NewSummary(&sn.Task)}
	if d.Marks != nil {
		v.Live = d.Marks.Substate(&v.Summary)
	}
	return v
}

func (d *Dispatcher) show(id string) (any, error) {
	sn, err := d.Store.Load(id)
	if err != nil {
		return nil, err
	}
	goal, err := sn.Goal()
	if err != nil {
		return nil, err
	}
	turns, err := d.Store.Turns(sn)
	if err != nil {
		return nil, err
	}
	if len(turns) > 20 {
		turns = turns[len(turns)-20:] // the recent ones; lazy show has them all
	}
	comments, err := d.Store.Comments(sn)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"task": d.view(sn), "goal": goal, "turns": turns, "comments": comments,
		"pending_violations": nonNil(sn.Violations.Pending)}
	if s := sn.Session; s != nil {
		out["session"] = map[string]any{"branch": s.Branch, "worktree": s.Worktree, "host": s.Host, "agent": s.Agent,
			"interrupt_reason": s.InterruptReason, "consecutive_interruptions": s.ConsecutiveInterruptions}
	}
	return out, nil
}

func (d *Dispatcher) list(caller Caller, in ListIn) (any, error) {
	entries, err := d.Store.List()
	if err != nil {
		return nil, err
	}
	parent := ""
	if in.Parent != "" {
		if parent, err = d.Store.Resolve(in.Parent); err != nil {
			return nil, err
		}
	}
	want := map[string]bool{}
	for _, s := range in.Status {
		want[s] = true
	}
	out := []View{}
	for _, e := range entries {
		if e.Err != nil {
			continue
		}
		if caller.agent() && e.ID != caller.Task && e.Parent != caller.Task {
			continue // an agent sees its own task and its subtasks
		}
		if parent != "" && e.Parent != parent || len(want) > 0 && !want[string(e.Status)] {
			continue
		}
		s, err := e.Summary()
		if err != nil {
			continue
		}
		v := View{Summary: *s}
		if d.Marks != nil {
			v.Live = d.Marks.Substate(s)
		}
		out = append(out, v)
	}
	return out, nil
}
