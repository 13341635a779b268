// Package ops holds the lifecycle operations not yet carved into
// capability packages over the core (package session). Each operation
// takes the task's lifecycle lock, loads, validates against the state
// machine, records first and acts second, with the actor of the channel
// that asked. The CLI and the MCP server both call these functions.
package ops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// Env is what the operations still in ops need: the shared core
// (session.Env: the store, who is asking, how turns run; embedded by
// value, so a copy of an Env is a copy of its settings) and the
// settings only accept uses. The capabilities carved out of ops take the
// core itself.
type Env struct {
	session.Env
	// Store is the task store over git, with what only it has (its Repo,
	// pull); the core's Store is the same store, through the task.Store
	// port.
	Store *gitstore.Store
	// CrashAt is the test-only crash hook (LAZY_TEST_CRASH_AT); nil,
	// which does nothing, everywhere but in tests.
	CrashAt *CrashPoint
	// GateReaper is the argv prefix each merge-gate command runs under
	// (lazy gate-reap --): its child subreaper, which ends everything the
	// command leaves running. nil: the gate ends what its commands leave
	// by their process group and the run's mark only.
	GateReaper []string
}

// New is the Env over st with the core settings of core (its Store and
// Repo are st's).
func New(st *gitstore.Store, core session.Env) *Env {
	core.Store, core.Repo = st, st.Repo()
	return &Env{Env: core, Store: st}
}

// splitTitle keeps a title to one line: anything after the first line
// break moves to the front of the goal, so nothing typed is lost.
func splitTitle(title, goal string) (string, string) {
	title = strings.TrimSpace(title)
	if i := strings.IndexAny(title, "\r\n"); i >= 0 {
		rest := strings.TrimSpace(title[i:])
		title = strings.TrimSpace(title[:i])
		if goal != "" {
			rest += "\n\n" + goal
		}
		goal = rest
	}
	return title, goal
}

// CreateInput describes a task to create. Names (Parent) are anything
// Resolve accepts.
type CreateInput struct {
	Title        string
	Goal         string
	Slug         string
	Parent       string
	TargetBranch string
	AllowedPaths []string
	// Sandbox asks that the task's sessions run sandboxed. A record may
	// only ask for more confinement: start honours it to turn the sandbox
	// on, never to turn it off.
	Sandbox bool
	// RequestID, when set, makes the create idempotent: the same caller
	// creating again with the same RequestID gets the task the first
	// create made (a retried MCP call, say), never a second one.
	RequestID string
	// After names the tasks that must be complete before it starts.
	After []string
	// BudgetUSD is the task's own budget (nil: lazy.budget.task
	// applies; 0 allows no spend).
	BudgetUSD *float64
}

// MaxRequestID bounds a create's request id.
const MaxRequestID = 200

// requestTaskID is the task id a create with request id rid by this
// caller gets: a hash of the caller's channel, its task and rid, so two
// callers' ids never meet and no caller can aim at an existing task.
func (e *Env) requestTaskID(rid string) string {
	sum := sha256.Sum256([]byte("lazy create\x00" + string(e.Actor) + "\x00" + e.CallerTask + "\x00" + rid))
	return hex.EncodeToString(sum[:8])
}

// Create records a new task in backlog. With a RequestID it is
// idempotent: a repeat returns the task the first call created.
func (e *Env) Create(ctx context.Context, in CreateInput) (*task.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if in.RequestID == "" {
		return e.create(ctx, in, "")
	}
	rid := strings.TrimSpace(in.RequestID)
	if rid == "" || len(rid) > MaxRequestID || !sanitize.Clean(rid) {
		return nil, fmt.Errorf("the request id must be 1 to %d printable characters (a UUID, say)", MaxRequestID)
	}
	id := e.requestTaskID(rid)
	// One create per request id at a time: the second waits, then finds
	// the first one's task.
	unlock, err := e.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if sn, err := e.Store.Load(id); err == nil {
		return sn, nil
	} else if !errors.Is(err, task.ErrNotFound) {
		return nil, err
	}
	return e.create(ctx, in, id)
}

// create is Create's record of a new task, with the given id ("": a new
// one).
func (e *Env) create(ctx context.Context, in CreateInput, id string) (*task.Snapshot, error) {
	title, goal := splitTitle(sanitize.Field(in.Title), sanitize.Prose(in.Goal))
	if title == "" {
		// A description alone is enough: its first line becomes the
		// title, and a one-line description is not repeated as the goal.
		first, rest, _ := strings.Cut(strings.TrimSpace(goal), "\n")
		title = strings.TrimSpace(first)
		switch {
		case utf8.RuneCountInString(title) > session.MaxTitle:
			title = session.TruncateRunes(title, session.MaxTitle-3) + "..." // the full text stays in the goal
		case strings.TrimSpace(rest) == "":
			goal = ""
		}
	}
	if title == "" {
		return nil, errors.New("a task needs a title: lazy create \"TITLE\" [-m GOAL]; nothing was created")
	}
	if n := utf8.RuneCountInString(title); n > session.MaxTitle {
		return nil, fmt.Errorf("the title is %d characters; keep it under %d and put the details in the description (-m)", n, session.MaxTitle)
	}
	if err := session.CheckText("the description", goal); err != nil {
		return nil, err
	}
	spec := task.CreateSpec{ID: id, Title: title, Goal: goal, Slug: strings.TrimSpace(in.Slug), Actor: e.Actor}
	if in.Sandbox {
		spec.Metadata = map[string]string{session.MetaSandbox: "on"}
	}
	var parentSn *task.Snapshot
	if in.Parent != "" {
		pid, err := e.Store.Resolve(in.Parent)
		if err != nil {
			return nil, fmt.Errorf("parent: %w", err)
		}
		parent, err := e.Store.Load(pid)
		if err != nil {
			return nil, fmt.Errorf("parent: %w", err)
		}
		if parent.Task.Status.IsTerminal() {
			return nil, fmt.Errorf("parent %s is %s; reopen it before adding subtasks", parent.Task.Slug, parent.Task.Status)
		}
		spec.Parent = pid
		parentSn = parent
	}
	target := strings.TrimSpace(in.TargetBranch)
	if err := CheckTargetBranch(ctx, e.Dir(), target, spec.Parent != ""); err != nil {
		return nil, err
	}
	spec.TargetBranch = target
	after, err := e.resolveAfter(in.After)
	if err != nil {
		return nil, err
	}
	spec.After = after
	if in.BudgetUSD != nil {
		// Checked here for every surface: the CLI parses its own, but an
		// MCP caller's budget_usd is any number JSON can carry.
		if err := task.CheckUSD("budget_usd", *in.BudgetUSD); err != nil {
			return nil, fmt.Errorf("%w; nothing was created", err)
		}
		v := *in.BudgetUSD
		if parentSn != nil && v > 0 && e.Actor != machine.Human {
			if err := e.Budgets().CheckSubtask(parentSn, v); err != nil {
				return nil, err
			}
		}
		spec.BudgetUSD = &v
	}
	for _, p := range sanitize.Fields(in.AllowedPaths) {
		if err := task.ValidPattern(p); err != nil {
			return nil, err
		}
		spec.AllowedPaths = append(spec.AllowedPaths, p)
	}
	return e.Store.Create(spec)
}

// Comment adds a comment to a task. Comments change no status.
func (e *Env) Comment(ctx context.Context, name, text string) (*task.Snapshot, task.Comment, error) {
	text, err := session.RequiredProse("the comment", text, "a comment needs text (-m, stdin or $EDITOR)")
	if err != nil {
		return nil, task.Comment{}, err
	}
	var added task.Comment
	sn, err := e.Update(ctx, name, func(s *task.Snapshot) (*task.Op, error) {
		added = s.AddComment(task.Comment{Actor: e.Actor, At: time.Now().UTC().Truncate(time.Second), Text: text})
		return &task.Op{Name: "comment", Actor: e.Actor}, nil
	})
	return sn, added, err
}

// hasAgentWork reports whether the task ever ran an agent session.
func hasAgentWork(s *task.Snapshot) bool {
	return s.Session != nil || s.Task.Sessions > 0
}

// endTask moves a task to abandoned with an outcome and reason.
func (e *Env) endTask(ctx context.Context, name, opName, outcome, reason string, allowed func(*task.Snapshot) error) (*task.Snapshot, error) {
	reason, err := session.CleanReason(reason)
	if err != nil {
		return nil, err
	}
	var sn *task.Snapshot
	err = e.WithTask(ctx, name, func(id string) error {
		cur, err := e.Store.Load(id)
		if err != nil {
			return err
		}
		// A parent abandoned under open subtasks would leave them to be
		// started, and merged, into work nobody wants.
		if open, err := e.openSubtasks(id); err != nil {
			return err
		} else if len(open) > 0 {
			return fmt.Errorf("%s %s: its subtasks %s are not finished; %s them first (or move them with lazy reparent), since their work merges into this task's branch", opName, cur.Task.Slug, strings.Join(open, ", "), opName)
		}
		// A group closed under open attempts would leave them running
		// for a task nobody wants done.
		if open := e.openAttempts(cur); len(open) > 0 {
			return fmt.Errorf("%s %s: its attempts %s are not finished; %s them first, or land one with lazy accept %s --attempt K", opName, cur.Task.Slug, strings.Join(open, ", "), opName, cur.Task.Slug)
		}
		// A local accept that died is undone (or finished) first: the
		// destination checkout and the user's stash are put back.
		if _, err := e.escapeStranded(ctx, cur, opName); err != nil {
			return err
		}
		sn, _, err = e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
			return endOp(s, e, opName, outcome, reason, allowed)
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	why := opName
	if reason != "" {
		why += ": " + reason
	}
	// The task is abandoned first (the durable record), then its pull
	// request is closed with the reason as a comment.
	return sn, e.ClosePR(ctx, sn, why)
}

// endOp is endTask's change to the record.
func endOp(s *task.Snapshot, e *Env, opName, outcome, reason string, allowed func(*task.Snapshot) error) (*task.Op, error) {
	if err := allowed(s); err != nil {
		return nil, err
	}
	if err := machine.Validate(s.Task.Status, machine.Abandoned, e.Actor); err != nil {
		return nil, fmt.Errorf("%s %s: %w", opName, s.Task.Slug, err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	s.Task.Status = machine.Abandoned
	s.Task.Outcome = outcome
	s.Task.Reason = reason
	if s.Session != nil && s.Session.EndedAt == nil {
		s.Session.EndedAt = &now
		s.Session.Outcome = outcome
	}
	switch {
	case reason == "":
	case opName == "reject" && s.Session != nil:
		// Why the work was rejected is feedback for the agent: pending,
		// so the first turn after a reopen delivers it.
		s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "reject", Content: reason, At: now, Session: s.Session.ID, FeedbackDelivery: task.FeedbackPending})
	default:
		s.AddComment(task.Comment{Actor: e.Actor, At: now, Text: opName + ": " + reason})
	}
	return &task.Op{Name: opName, Actor: e.Actor, Reason: reason}, nil
}

// Close abandons a task that will not be done ("won't do", duplicate).
func (e *Env) Close(ctx context.Context, name, reason string) (*task.Snapshot, error) {
	return e.endTask(ctx, name, "close", task.OutcomeClosed, reason, func(*task.Snapshot) error { return nil })
}

// Reject abandons a task whose agent work is not wanted.
func (e *Env) Reject(ctx context.Context, name, reason string) (*task.Snapshot, error) {
	return e.endTask(ctx, name, "reject", task.OutcomeRejected, reason, func(s *task.Snapshot) error {
		if s.Task.Status == machine.Backlog {
			return fmt.Errorf("reject %s: the task never started, so there is no work to reject; use lazy close", s.Task.Slug)
		}
		return nil
	})
}

// Reopen brings a finished task back: to blocked when it has agent work
// to review again, to backlog when it never ran. A reopened task whose
// worktree was removed (by accept or cleanup) gets it back: on its kept
// branch, or on a new branch from its base when the branch is gone too.
func (e *Env) Reopen(ctx context.Context, name, reason string) (*task.Snapshot, error) {
	reason, err := session.CleanReason(reason)
	if err != nil {
		return nil, err
	}
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	plan := func(s *task.Snapshot) (machine.Status, error) {
		if !s.Task.Status.IsTerminal() {
			return "", fmt.Errorf("reopen %s: the task is %s, not finished; only complete or abandoned tasks can be reopened", s.Task.Slug, s.Task.Status)
		}
		if err := e.parentOpen(s, "reopen"); err != nil {
			return "", err
		}
		// A task with agent work parks: blocked, or conflict while
		// file-permission violations are still pending (the label is
		// derived, never asserted).
		to := machine.Backlog
		if hasAgentWork(s) {
			to = machine.Park(s.PendingViolations())
		}
		if s.Task.Status == machine.Complete && to != machine.Backlog && reason == "" {
			return "", fmt.Errorf("reopen %s: an accepted task needs a reason (--reason \"...\")", s.Task.Slug)
		}
		return to, machine.Validate(s.Task.Status, to, e.Actor)
	}
	to, err := plan(sn)
	if err != nil {
		return nil, err
	}
	// Only a session this machine started gets its worktree back, at the
	// path this machine chose.
	if s, err := e.Owned(sn); to != machine.Backlog && err == nil {
		if _, err := os.Stat(s.Worktree); os.IsNotExist(err) {
			base, err := e.BaseBranch(ctx, sn, e.Dir())
			if err != nil {
				return nil, err
			}
			if _, err := worktree.Create(ctx, e.Dir(), s.Worktree, s.Branch, base); err != nil {
				return nil, fmt.Errorf("reopen %s: recreate its worktree: %w", sn.Task.Slug, err)
			}
			// A new worktree: its next turn prepares it again.
			s.Prepared = false
			if err := e.Sessions().Save(s); err != nil {
				return nil, err
			}
		}
	}
	sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		to, err := plan(s)
		if err != nil {
			return nil, err
		}
		s.Task.Status = to
		s.Task.Outcome = ""
		s.Task.Reason = reason
		turns, err := e.Store.Turns(s)
		if err != nil {
			return nil, err
		}
		s.Task.ReopenedAt = NewestCommit(turns)
		if s.Session != nil {
			s.Session.EndedAt = nil
			s.Session.Outcome = ""
			s.Session.ConsecutiveInterruptions = 0
		}
		if reason != "" {
			// Why the task came back is feedback for the agent: the next
			// turn delivers it (with a reject's reason still pending).
			t := task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "reopen", Content: reason, At: time.Now().UTC().Truncate(time.Second), FeedbackDelivery: task.FeedbackPending}
			if s.Session != nil {
				t.Session = s.Session.ID
			}
			s.AddTurn(t)
		}
		return &task.Op{Name: "reopen", Actor: e.Actor, Reason: reason}, nil
	})
	return sn, err
}

// parentOpen refuses verb on a subtask whose parent is finished: its work
// would merge into a branch that is gone or that nobody wants.
func (e *Env) parentOpen(s *task.Snapshot, verb string) error {
	if s.Task.Parent == "" {
		return nil
	}
	p, err := e.Store.Load(s.Task.Parent)
	if err != nil {
		return nil // a missing parent is reported by doctor; the task is a root in effect
	}
	if p.Task.Status.IsTerminal() {
		return fmt.Errorf("%s %s: its parent %s is %s; reopen the parent first, or move the task with lazy reparent %s --root", verb, s.Task.Slug, p.Task.Slug, p.Task.Status, s.Task.Slug)
	}
	return nil
}

// NewestCommit is the last commit any of turns recorded, or "".
func NewestCommit(turns []task.Turn) string {
	newest := ""
	for _, t := range turns {
		if len(t.Commits) > 0 {
			newest = t.Commits[len(t.Commits)-1]
		}
	}
	return newest
}

// WithAccept sets what only accept uses: the crash hook and the gate's
// reaper. It returns e.
func (e *Env) WithAccept(crash *CrashPoint, gateReaper []string) *Env {
	e.CrashAt, e.GateReaper = crash, gateReaper
	return e
}
