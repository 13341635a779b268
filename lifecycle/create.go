package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

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
func (l *Service) requestTaskID(rid string) string {
	e := l.Env
	sum := sha256.Sum256([]byte("lazy create\x00" + string(e.Actor) + "\x00" + e.CallerTask + "\x00" + rid))
	return hex.EncodeToString(sum[:8])
}

// Create records a new task in backlog. With a RequestID it is
// idempotent: a repeat returns the task the first call created.
func (l *Service) Create(ctx context.Context, in CreateInput) (*task.Snapshot, error) {
	e := l.Env
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if in.RequestID == "" {
		return l.create(ctx, in, "")
	}
	rid := strings.TrimSpace(in.RequestID)
	if rid == "" || len(rid) > MaxRequestID || !sanitize.Clean(rid) {
		return nil, fmt.Errorf("the request id must be 1 to %d printable characters (a UUID, say)", MaxRequestID)
	}
	id := l.requestTaskID(rid)
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
	return l.create(ctx, in, id)
}

// create is Create's record of a new task, with the given id ("": a new
// one).
func (l *Service) create(ctx context.Context, in CreateInput, id string) (*task.Snapshot, error) {
	e := l.Env
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
	if err := checkTargetBranch(ctx, l.worktrees(), e.Dir(), target, spec.Parent != ""); err != nil {
		return nil, err
	}
	spec.TargetBranch = target
	after, err := resolveAfter(e.Store, in.After)
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
func (l *Service) Comment(ctx context.Context, name, text string) (*task.Snapshot, task.Comment, error) {
	e := l.Env
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
