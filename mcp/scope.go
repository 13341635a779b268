package mcp

import (
	"context"
	"errors"
	"fmt"
	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/landing"
	"time"

	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// What a call may reach from an agent's task.
type reach int

const (
	scopeSelfOrChild reach = iota // read, comment
	scopeChild                    // drive: start, unblock, ask, wait, reject, close
	scopeAccept                   // accept: a direct child only
	scopeSelf                     // journal: an agent's own task only
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
	if r == scopeSelf && id != caller.Task {
		return "", fmt.Errorf("%w: an agent writes its own task's journal only", ErrScope)
	}
	if id == caller.Task {
		if r == scopeSelfOrChild || r == scopeSelf {
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

func (d *Dispatcher) create(ctx context.Context, env *wire.Env, caller Caller, in CreateIn) (any, error) {
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
	sn, err := env.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: in.Title, Goal: in.Goal, Parent: parent, TargetBranch: in.TargetBranch, AllowedPaths: in.AllowedPaths, RequestID: in.RequestID, BudgetUSD: in.BudgetUSD})
	return d.taskOut(sn, err)
}

// timeout turns a caller's timeout_seconds into a bound: the default
// below common client limits, and never more than MaxTimeoutSeconds.
func timeout(n int) time.Duration {
	if n <= 0 {
		n = DefaultTimeoutSeconds
	}
	return time.Duration(min(n, MaxTimeoutSeconds)) * time.Second
}

func (d *Dispatcher) ask(ctx context.Context, env *wire.Env, caller Caller, in AskIn) (any, error) {
	id, err := d.scope(caller, in.Task, scopeChild)
	if err != nil {
		return nil, err
	}
	sn, err := env.Conversation().Ask(ctx, id, in.Question)
	if err != nil {
		return nil, err
	}
	final, running, err := d.waitTurn(callerCtx(ctx), caller, sn, timeout(in.TimeoutSeconds))
	if err != nil {
		return nil, err
	}
	if running {
		return AskOut{Status: final.Task.Status, Running: Running{StillRunning: true,
			WaitingOn: "the answer of " + final.Task.Slug + "'s agent (" + d.view(final).Live + ")",
			Next:      "call lazy_wait with task " + final.Task.Slug + "; the answer is its last_turn"}}, nil
	}
	turns, err := d.Store.Turns(final)
	if err != nil {
		return nil, err
	}
	if len(turns) == 0 {
		return nil, fmt.Errorf("%s has no turns; the question was not recorded", final.Task.Slug)
	}
	answer := turns[len(turns)-1]
	text, _ := task.ClipText(answer.Content, showClip, "")
	return AskOut{Answer: text, Status: final.Task.Status, Error: answer.Error}, nil
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
	final, running, err := d.waitTurn(ctx, caller, sn, timeout(in.TimeoutSeconds))
	if err != nil {
		return nil, err
	}
	out := WaitOut{Task: d.view(final)}
	if running {
		out.Running = Running{StillRunning: true, WaitingOn: "the turn of " + final.Task.Slug + " (" + orWorking(out.Task.Live) + ")",
			Next: "call lazy_wait with task " + final.Task.Slug + " again to keep waiting"}
		return out, nil
	}
	if turns, err := d.Store.Turns(final); err == nil && len(turns) > 0 {
		last := turns[len(turns)-1]
		last.Content, _ = task.ClipText(last.Content, showClip, "")
		out.LastTurn = &last
	}
	return out, nil
}

func orWorking(live string) string {
	if live == "" {
		return "working"
	}
	return live
}

// waitTurn waits up to limit for sn's turn to end, reporting the task's
// substate as progress meanwhile. running is true (with the task as it
// is now) when the limit passed first: the turn goes on regardless.
func (d *Dispatcher) waitTurn(ctx context.Context, caller Caller, sn *task.Snapshot, limit time.Duration) (final *task.Snapshot, running bool, err error) {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	stop := d.watch(wctx, sn.Task.ID)
	final, err = d.tracked(wctx, caller, sn, limit)
	stop()
	if err == nil {
		return final, false, nil
	}
	if ctx.Err() != nil {
		return nil, false, ctx.Err()
	}
	cur, lerr := d.Store.Load(sn.Task.ID)
	if lerr == nil && cur.Task.Status == machine.Working {
		return cur, true, nil
	}
	return nil, false, err
}

// tracked waits for sn's turn with the wait marked: the marker is
// settled in a deferred call, however the wait ends.
func (d *Dispatcher) tracked(ctx context.Context, caller Caller, sn *task.Snapshot, timeout time.Duration) (final *task.Snapshot, err error) {
	done := d.Marks.StartWait(caller.Task, sn)
	defer func() { done(err) }()
	return d.Hooks.Wait(ctx, sn.Task.ID, timeout)
}

// View is a task as the tools show it: its summary plus the derived
// substate.
type View struct {
	task.Summary
	Live string `json:"live_substate,omitempty" jsonschema:"what a working task is doing this second (agent phase, waiting on subtasks, progress)"`
}

func (d *Dispatcher) view(sn *task.Snapshot) View {
	v := View{Summary: task.NewSummary(&sn.Task)}
	if d.Marks != nil {
		v.Live = d.Marks.Substate(&v.Summary)
	}
	return v
}

// showClip is how much of one text lazy_show returns: a client's context
// window is no place for a 30 MB comment.
const showClip = 32 << 10

// Show is lazy_show's result for task id: the same shape as lazy show
// --json, with the most recent 20 turns and every text cut to showClip
// (Truncated says what was cut or left out).
func (d *Dispatcher) Show(ctx context.Context, env *wire.Env, id string) (*ShowOut, error) {
	sn, err := d.Store.Load(id)
	if err != nil {
		return nil, err
	}
	det, err := d.Store.Detail(sn, 20)
	if err != nil {
		return nil, err
	}
	det.Clip(showClip, "")
	if d.Marks != nil {
		det.Live = d.Marks.Substate(&det.Summary)
	}
	if env != nil && d.Hooks.StartInput != nil {
		if in, err := d.Hooks.StartInput("", ""); err == nil {
			det.Permissions = env.Permissions(ctx, sn, in)
		}
	}
	ov := overlapsOf(ctx, env, d.Store, sn)
	var protected *landing.ProtectedView
	if env != nil {
		// A gate run is this machine's only if its own record says so.
		env.Landing().Gates().VerifyDetail(det)
		protected, _ = env.Landing().Gates().ProtectedChanges(ctx, sn)
	}
	out := &ShowOut{Detail: *det, Overlaps: ov.With, LandedOverlap: ov.Landed, OverlapsTruncated: ov.Truncated, ProtectedChanges: protected}
	if env != nil && sn.Task.IsAttemptGroup() {
		if v, err := env.Attempts().Compare(ctx, sn.Task.ID); err == nil {
			out.Attempts, out.AttemptsUsage, out.AttemptChosen = v.Attempts, v.Usage, v.Chosen
			out.AttemptsPick, out.AttemptsPickLine = v.Pick, v.PickLine
		}
	}
	return out, nil
}

// ShowOut is lazy_show's result: the shape of lazy show --json, the
// detail with the task's overlaps with other active tasks. The overlap
// fields are spelled out (not review.TaskOverlaps embedded): two embedded
// Truncated fields would hide both from the schema the SDK infers, and
// the SDK then refuses the result it validates.
type ShowOut struct {
	task.Detail
	Overlaps          map[string][]string `json:"overlaps,omitempty"`
	LandedOverlap     []string            `json:"landed_overlap,omitempty"`
	OverlapsTruncated bool                `json:"overlaps_truncated,omitempty"`
	// Attempts compares an attempt group's attempts as lazy show --json
	// does: status, agent, model, cost, gate and diff stat of each, the
	// cost of them all, and the attempt that landed.
	Attempts      []attempts.Attempt `json:"attempts,omitempty"`
	AttemptsUsage *task.Usage        `json:"attempts_usage,omitempty"`
	AttemptChosen int                `json:"attempt_chosen,omitempty"`
	// AttemptsPick is the pick by the gate (lazy start --pick gate),
	// AttemptsPickLine it in words.
	AttemptsPick     *task.AttemptPick `json:"attempts_pick,omitempty"`
	AttemptsPickLine string            `json:"attempts_pick_line,omitempty"`
	// ProtectedChanges names the protected paths the task's change
	// touches: it lands only when a human approves them (lazy accept
	// TASK --approve-protected), never through this server.
	ProtectedChanges *landing.ProtectedView `json:"protected_changes,omitempty"`
}

// overlapsOf is what a task started on this machine shares with the
// other active tasks; any other task has no branch here to compare.
func overlapsOf(ctx context.Context, env *wire.Env, st task.Store, sn *task.Snapshot) review.TaskOverlaps {
	if env == nil || sn.Task.Status.IsTerminal() || !env.Owns(sn) {
		return review.TaskOverlaps{}
	}
	entries, err := st.List()
	if err != nil {
		return review.TaskOverlaps{}
	}
	ov, err := env.Review().OverlapsOf(ctx, entries, nil)
	if err != nil {
		return review.TaskOverlaps{}
	}
	return ov[sn.Task.ID]
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
	want := map[machine.Status]bool{}
	for _, s := range in.Status {
		want[s] = true
	}
	out := ListOut{Tasks: []View{}}
	for _, e := range entries {
		if e.Err != nil {
			continue
		}
		if caller.agent() && e.ID != caller.Task && e.Parent != caller.Task {
			continue // an agent sees its own task and its subtasks
		}
		if parent != "" && e.Parent != parent || len(want) > 0 && !want[e.Status] || in.Open && e.Status.IsTerminal() {
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
		out.Tasks = append(out.Tasks, v)
	}
	out.Count = len(out.Tasks)
	return out, nil
}
