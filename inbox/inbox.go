// Package inbox is what waits on a human, everywhere: every task of the
// repository (this clone's, and those other clones and runners pushed
// and lazy pull or the pool brought here) that is parked for a person,
// with where it waits, since when, and the one command that answers it.
//
// It invents no state of its own: which states need a human is
// notify's derivation (blocked, conflict, a failed gate, a budget, an
// interruption the breaker or lazy.autoResume leaves, an answered ask),
// read from the same records; protected paths are landing's check,
// consumed through Protected. An attempt group picked by the gate is one
// item once the pick is made, and its blocked attempts none (pick.go).
// What a record says (a title, a host, a pick's ranking) is cleaned
// before any surface shows it, and the command shown is built from
// lazy's own words and the task's slug, which the task model validated
// when it read the record.
package inbox

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/notify"
	"github.com/lazyorch/lazy/task"
)

// Kind is why an item waits on a human.
type Kind string

// The kinds of item.
const (
	// Blocked: a work turn ended; the task waits for review.
	Blocked Kind = "blocked"
	// Asked: a lazy ask was answered; the answer waits to be read and
	// replied to.
	Asked Kind = "asked"
	// Conflict: the turn changed files outside the allowed paths.
	Conflict Kind = "conflict"
	// GateFailed: the merge gate failed and no automatic fix is left.
	GateFailed Kind = "gate_failed"
	// OverBudget: the task's spending reached a budget.
	OverBudget Kind = "over_budget"
	// Interrupted: lazy will not resume it by itself.
	Interrupted Kind = "interrupted"
	// Protected: the change touches protected paths the gate alone may
	// not decide; it lands only with a human's approval.
	Protected Kind = "protected"
	// Pick: an attempt group's pick by the gate (lazy start --attempts N
	// --pick gate) was made and nothing lands by itself; one item for the
	// group, in place of its parked attempts.
	Pick Kind = "pick"
)

// Item is one task that waits on a human.
type Item struct {
	Kind   Kind           `json:"kind"`
	TaskID string         `json:"task"`
	Slug   string         `json:"slug"`
	Title  string         `json:"title"`
	Status machine.Status `json:"status"`
	// Why is one line of lazy's wording (notify's), cleaned.
	Why string `json:"why"`
	// Host is the host the task's session ran on (the record's), and
	// Runner the pool runner whose claim last moved it; both cleaned,
	// "" when the record names none.
	Host   string `json:"host,omitempty"`
	Runner string `json:"runner,omitempty"`
	// Since is when it began to wait: when the budget held it, else
	// when its record last changed (never later than now).
	Since time.Time `json:"since"`
	// WaitingSeconds is how long it has waited, as of the listing.
	WaitingSeconds int64 `json:"waiting_seconds"`
	// Command is the one command that answers it.
	Command string `json:"command"`
	// Files are the protected paths a Protected item's change touches
	// (a Pick item's: its proposed attempt's).
	Files []string `json:"files,omitempty"`
	// Proposed is, on a Pick item, the slug of the attempt the gate
	// proposes ("" when none passed or the record names no attempt of
	// the group that waits for review).
	Proposed string `json:"proposed,omitempty"`
}

// Where is where the item waits, as a surface prints it: the runner,
// else the host, else "-".
func (it *Item) Where() string {
	switch {
	case it.Runner != "" && it.Host != "":
		return "runner " + it.Runner + " (" + it.Host + ")"
	case it.Runner != "":
		return "runner " + it.Runner
	case it.Host != "":
		return it.Host
	}
	return "-"
}

// Store is what the inbox reads of the task store: every task, and the
// snapshot (session, turns) of one that is parked.
type Store interface {
	List() ([]task.Entry, error)
	Load(id string) (*task.Snapshot, error)
	Turns(sn *task.Snapshot) ([]task.Turn, error)
}

// ProtectedFunc names the protected paths a task's change touches (none:
// nil), as an accept would refuse them; landing's check where the
// task's branch is on this machine.
type ProtectedFunc func(ctx context.Context, sn *task.Snapshot) ([]string, error)

// Service lists the inbox.
type Service struct {
	Store Store
	// Policy is notify's: the breaker, lazy.autoResume, the gate's fix
	// rounds, the secrets to take out.
	Policy notify.Policy
	// Protected, when set, is asked about every parked task.
	Protected ProtectedFunc
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Result is the inbox: the items, oldest first, and the tasks whose
// records could not be read (they hide no other).
type Result struct {
	Items      []Item   `json:"items"`
	Unreadable []string `json:"unreadable"`
}

// maxTitle and maxHost bound what a record's words take of a line,
// maxPickWhy a pick's ranking.
const (
	maxTitle   = 120
	maxHost    = 80
	maxPickWhy = 600
)

// List returns every task that waits on a human, oldest first.
func (s *Service) List(ctx context.Context) (*Result, error) {
	entries, err := s.Store.List()
	if err != nil {
		return nil, fmt.Errorf("list the tasks: %w", err)
	}
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	out := &Result{Items: []Item{}, Unreadable: []string{}}
	groups := map[string]*group{}
	for i := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := &entries[i]
		if e.Err != nil {
			out.Unreadable = append(out.Unreadable, e.ID)
			continue
		}
		if !notify.NeedsSession(e.Status) {
			continue // only a parked or interrupted task waits on a person
		}
		sn, err := s.Store.Load(e.ID)
		if err != nil {
			out.Unreadable = append(out.Unreadable, e.ID)
			continue
		}
		if g := s.groupOf(ctx, groups, sn, now); g != nil {
			// A parked attempt of a group picked by the gate: the pick
			// answers it, so it is no item of its own.
			if g.item != nil && !g.listed {
				g.listed = true
				out.Items = append(out.Items, *g.item)
			}
			continue
		}
		it, err := s.item(ctx, sn, now)
		if err != nil {
			out.Unreadable = append(out.Unreadable, e.ID)
			continue
		}
		if it != nil {
			out.Items = append(out.Items, *it)
		}
	}
	slices.SortStableFunc(out.Items, func(a, b Item) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return cmp.Compare(a.Slug, b.Slug)
	})
	return out, nil
}

// item is the inbox item of a parked or interrupted entry, or nil when
// it waits on nobody (a usage limit the daemon waits out, a resume lazy
// makes by itself).
func (s *Service) item(ctx context.Context, sn *task.Snapshot, now time.Time) (*Item, error) {
	var err error
	// The observation is of the loaded record, which may be newer than
	// the listing.
	cur := task.NewSummary(&sn.Task)
	sum := &cur
	obs := notify.Observe(sum)
	obs.AddSession(sn.Session)
	if obs.TurnKind == "ask" && sum.Status.IsBlocked() {
		obs.AnswerFailed, err = s.answerFailed(sn, obs.Turn)
		if err != nil {
			return nil, err
		}
	}
	ev, _ := notify.Derive(nil, obs, s.Policy)
	if ev == nil || (!ev.NeedsHuman() && ev.Kind != notify.KindAnswered) {
		return nil, nil
	}
	t := &sn.Task
	it := &Item{TaskID: t.ID, Slug: t.Slug, Title: notify.Clean(t.Title, maxTitle), Status: t.Status, Why: ev.Reason,
		Host: notify.Clean(t.Host, maxHost), Since: t.UpdatedAt.UTC().Truncate(time.Second)}
	if it.Host == "" && sn.Session != nil {
		it.Host = notify.Clean(sn.Session.Host, maxHost)
	}
	if t.Pool != nil {
		it.Runner = notify.Clean(t.Pool.Runner, maxHost)
	}
	if h := t.Hold; h != nil && h.Kind == task.HoldBudget && !h.At.IsZero() {
		it.Since = h.At.UTC().Truncate(time.Second)
	}
	slug := t.Slug // validated by the task model on read: safe on a command line
	switch ev.Kind {
	case notify.KindBlocked:
		it.Kind, it.Command = Blocked, "lazy accept "+slug
	case notify.KindAnswered:
		it.Kind, it.Command = Asked, "lazy unblock "+slug+" -m TEXT"
		it.Why = "its agent answered your question (lazy show " + slug + " has the answer); the task still waits for you"
		if obs.AnswerFailed {
			it.Why = "its agent could not answer your question (lazy show " + slug + " says why); the task still waits for you"
		}
	case notify.KindConflict:
		it.Kind, it.Command = Conflict, "lazy unblock "+slug+" --approve-file PATH"
	case notify.KindGateFailed:
		it.Kind, it.Command = GateFailed, "lazy unblock "+slug+" -m TEXT"
	case notify.KindBudget:
		it.Kind, it.Command = OverBudget, "lazy unblock "+slug+" --budget +N"
		if t.Hold != nil && t.Hold.Scope == "day" {
			// This machine's day budget is raised in its git config.
			it.Command = "lazy config lazy.budget.day N"
		}
	case notify.KindInterrupted:
		it.Kind, it.Command = Interrupted, "lazy resume "+slug
	default:
		return nil, nil
	}
	if it.Kind == Blocked || it.Kind == GateFailed {
		if err := s.protected(ctx, sn, it); err != nil {
			// The item still waits; the check that failed is said, so an
			// accept's refusal is no surprise.
			it.Why += "; its protected paths could not be checked: " + notify.Clean(err.Error(), 200)
		}
	}
	waited(it, now)
	return it, nil
}

// waited sets how long the item has waited, as of now; a record from
// elsewhere that says it changed in the future waits since now.
func waited(it *Item, now time.Time) {
	it.WaitingSeconds = int64(max(now.Sub(it.Since), 0) / time.Second)
	if it.Since.After(now) {
		it.Since = now.UTC().Truncate(time.Second)
	}
}

// protected turns an item whose change touches protected paths into the
// approval it waits for: no other answer lands it.
func (s *Service) protected(ctx context.Context, sn *task.Snapshot, it *Item) error {
	files, err := s.protectedFiles(ctx, sn)
	if err != nil || len(files) == 0 {
		return err
	}
	it.Kind, it.Command, it.Files = Protected, "lazy accept "+sn.Task.Slug+" --approve-protected", files
	it.Why = "its change touches protected paths the gate alone may not decide; a human reviews them (lazy diff " + sn.Task.Slug + ") and approves"
	return nil
}

// protectedFiles are the protected paths blocked task sn's change
// touches, cleaned.
func (s *Service) protectedFiles(ctx context.Context, sn *task.Snapshot) ([]string, error) {
	if s.Protected == nil || sn.Task.Status != machine.Blocked {
		return nil, nil
	}
	files, err := s.Protected(ctx, sn)
	if err != nil || len(files) == 0 {
		return nil, err
	}
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, notify.Clean(f, 200))
	}
	return out, nil
}

// answerFailed reports whether the ask of turn seq ended without an
// answer: the answer is the agent's turn right after the question.
func (s *Service) answerFailed(sn *task.Snapshot, seq int) (bool, error) {
	turns, err := s.Store.Turns(sn)
	if err != nil {
		return false, fmt.Errorf("task %s: read its turns: %w", sn.Task.Slug, err)
	}
	for _, t := range turns {
		if t.Seq == seq+1 {
			return t.Role != task.RoleAgent || t.Error != "", nil
		}
	}
	return true, nil
}

// Wait renders how long an item has waited: 45s, 12m, 3h05m, 2d4h.
func Wait(seconds int64) string {
	d := time.Duration(seconds) * time.Second
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", seconds)
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}
