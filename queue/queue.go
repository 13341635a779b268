// Package queue is the merge queue of a target branch on this machine:
// the accepts into it, one at a time, each gating the exact tree it
// lands (the target's tip at that moment, which holds every entry ahead
// of it). It keeps what the queue holds (host-local, beside the
// target's accept lock, so lazy queue, watch and the web view can show
// it): the entries in flight with the pid of the accept that carries
// each, the tasks waiting for their agent's fix before they re-enter,
// and a bounded log of why entries left. It runs a train of several
// accepts, gating it speculatively ahead of them when the gate allows
// parallel runs, or in batches it bisects to a failing batch's culprit
// (lazy.gate.batch; bisect.go plans, batch.go runs).
//
// The accept itself and its gate are package landing's: landing sits
// above the queue and takes its place in it with Enter and a Ticket; the
// queue asks landing only through the Lander interface, so the imports
// run one way.
package queue

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/lazyorch/lazy/internal/proc"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// Entry states.
const (
	Waiting = "waiting" // for the target's accept lock
	Gating  = "gating"  // the gate runs on its candidate tree
	Landing = "landing" // the gate passed; the target moves to its tree
	Fixing  = "fixing"  // the gate failed; the agent is fixing it, then it re-enters
)

// Outcomes: why an entry left.
const (
	LeftLanded   = "landed"
	LeftFailed   = "failed"
	LeftConflict = "conflict"
	LeftError    = "error"
	LeftRemoved  = "removed"
	// LeftProtected: its change touches protected paths; it waits for a
	// human's lazy accept --approve-protected and never re-enters by
	// itself.
	LeftProtected = "protected"
)

// Entry is one accept in a target's queue.
type Entry struct {
	Task    string    `json:"task"`
	Slug    string    `json:"slug"`
	Target  string    `json:"target"`
	State   string    `json:"state"`
	Detail  string    `json:"detail,omitempty"`
	Entered time.Time `json:"entered"`
	Since   time.Time `json:"since"`
	PID     int       `json:"pid,omitempty"`
	// Round and AfterTurn, for a fixing entry: the fix round, and the
	// turn whose end lets it re-enter.
	Round     int `json:"round,omitempty"`
	AfterTurn int `json:"after_turn,omitempty"`
	// Forge, for a fixing entry: the task was submitted, and re-enters
	// through its pull request (the forge merges it), not locally.
	Forge bool `json:"forge,omitempty"`
	// Batch is what a batched train (lazy.gate.batch) decided for it.
	Batch *task.BatchOutcome `json:"batch,omitempty"`
	// Lane is the lane of its train it goes through (lazy.gate.lanes):
	// one lane's name, or several joined by "+" for an entry whose change
	// spans them; "" when the train has no lanes.
	Lane string `json:"lane,omitempty"`
}

// Left is an entry that left its queue, and why.
type Left struct {
	Task    string    `json:"task"`
	Slug    string    `json:"slug"`
	Target  string    `json:"target"`
	Outcome string    `json:"outcome"`
	Why     string    `json:"why,omitempty"`
	Commit  string    `json:"commit,omitempty"`
	At      time.Time `json:"at"`
	// Batch is what a batched train decided for it, as on its entry.
	Batch *task.BatchOutcome `json:"batch,omitempty"`
	// Lane is the lane it went through, as on its entry.
	Lane string `json:"lane,omitempty"`
}

// View is one target's queue: entries in the order they entered, and
// the newest that left.
type View struct {
	Target  string  `json:"target"`
	Entries []Entry `json:"entries"`
	Left    []Left  `json:"left"`
	// Lanes says where each lane of its train stands
	// (lazy.gate.lanes; LaneSummary); "" without lanes.
	Lanes string `json:"lanes,omitempty"`
}

// maxLeft bounds the log of entries that left.
const maxLeft = 50

// What the queue consumes, besides the core (session.Env: the task
// store behind the task.Store port, who is asking, lazy's host-local
// directory and this machine's sessions): git's side of branches
// (Worktree) and, for a train, the accept step (Lander, in train.go).

// Worktree is what the queue asks of git: the tip a train builds on.
// Package worktree's function of the same name (Git), or a fake in
// tests.
type Worktree interface {
	BranchCommit(ctx context.Context, repoDir, branch string) (string, error)
}

// Git is the Worktree of package worktree.
type Git struct{}

// BranchCommit is worktree.BranchCommit.
func (Git) BranchCommit(ctx context.Context, repoDir, branch string) (string, error) {
	return worktree.BranchCommit(ctx, repoDir, branch)
}

// Service is the merge queues of env's repository on this machine.
type Service struct {
	// Env is the core: the store, who is asking, lazy's directory.
	Env *session.Env
	// Worktrees is git's side of branches (nil: Git).
	Worktrees Worktree
	// Now is the clock entries are stamped with (nil: time.Now).
	Now func() time.Time
}

// New is the merge queues of env.
func New(env *session.Env) *Service { return &Service{Env: env} }

func (q *Service) worktrees() Worktree {
	if q.Worktrees == nil {
		return Git{}
	}
	return q.Worktrees
}

func (q *Service) now() time.Time {
	if q.Now == nil {
		return time.Now().UTC()
	}
	return q.Now().UTC()
}

func (q *Service) dir(parts ...string) string {
	return q.Env.Repo.LazyDir(append([]string{"queue"}, parts...)...)
}

func (q *Service) activePath(id string) string { return q.dir("active", id+".json") }
func (q *Service) fixingPath(id string) string { return q.dir("fixing", id+".json") }

// writeEntry replaces the file at path with en.
func writeEntry(path string, en Entry) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(en)
	if err != nil {
		return err
	}
	return renameio.WriteFile(path, append(b, '\n'), 0o644)
}

// Ticket is an accept's place in its target's queue. A nil Ticket is
// no place: its methods do nothing.
type Ticket struct {
	q    *Service
	en   Entry
	path string
}

// Enter puts the accept of task sn into target's queue, waiting.
func (q *Service) Enter(sn *task.Snapshot, target string) *Ticket {
	now := q.now().Truncate(time.Millisecond)
	t := &Ticket{q: q, path: q.activePath(sn.Task.ID), en: Entry{Task: sn.Task.ID, Slug: sn.Task.Slug,
		Target: target, State: Waiting, Entered: now, Since: now, PID: os.Getpid()}}
	// This process entered it already (a speculative train): it keeps
	// its place.
	if b, err := os.ReadFile(t.path); err == nil {
		var old Entry
		if json.Unmarshal(b, &old) == nil && old.PID == t.en.PID && old.Target == target {
			t.en.Entered, t.en.Batch, t.en.Lane = old.Entered, old.Batch, old.Lane
		}
	}
	_ = os.Remove(q.fixingPath(sn.Task.ID))
	_ = writeEntry(t.path, t.en)
	return t
}

// Set moves the entry to state, saying what it does in detail.
func (t *Ticket) Set(state, detail string) {
	if t == nil {
		return
	}
	t.en.State, t.en.Detail, t.en.Since = state, detail, t.q.now().Truncate(time.Millisecond)
	_ = writeEntry(t.path, t.en)
}

// Leave takes the entry out of the queue and logs why.
func (t *Ticket) Leave(outcome, why, commit string) {
	if t == nil {
		return
	}
	_ = os.Remove(t.path)
	t.q.logLeft(Left{Task: t.en.Task, Slug: t.en.Slug, Target: t.en.Target, Outcome: outcome, Why: session.OneLine(why), Commit: commit,
		At: t.q.now().Truncate(time.Second), Batch: t.en.Batch, Lane: t.en.Lane})
}

// Outcome is how an accept's error says why its entry left: landing's
// failed gate, conflict and protected paths each say theirs (an outcome
// above and the line the log keeps). Any other error leaves with
// LeftError and its text.
type Outcome interface {
	QueueOutcome() (outcome, why string)
}

// LeaveWith takes the entry out with the outcome err implies: landed as
// commit when err is nil.
func (t *Ticket) LeaveWith(err error, commit string) {
	var o Outcome
	switch {
	case err == nil:
		t.Leave(LeftLanded, "", commit)
	case errors.As(err, &o):
		outcome, why := o.QueueOutcome()
		t.Leave(outcome, why, "")
	default:
		t.Leave(LeftError, err.Error(), "")
	}
}

// ReenterThroughForge puts a task that waits for its agent's fix back in
// its queue, gating, as its accept through the forge begins (the forge,
// not the target's accept lock, orders what merges there); nil when it
// was not waiting.
func (q *Service) ReenterThroughForge(id string) *Ticket {
	b, err := os.ReadFile(q.fixingPath(id))
	if err != nil {
		return nil
	}
	var en Entry
	if json.Unmarshal(b, &en) != nil || en.Task != id {
		return nil
	}
	now := q.now().Truncate(time.Millisecond)
	t := &Ticket{q: q, path: q.activePath(id), en: Entry{Task: id, Slug: en.Slug, Target: en.Target,
		State: Gating, Detail: "through the forge", Entered: now, Since: now, PID: os.Getpid()}}
	_ = os.Remove(q.fixingPath(id))
	_ = writeEntry(t.path, t.en)
	return t
}

// Forged is what an accept through the forge did: the commit it merged,
// and why the forge has not merged it yet ("" once merged).
type Forged struct {
	Commit, Pending string
}

// LeaveThroughForge takes an accept through the forge out of the queue:
// landed once the merge is requested (the forge finishes a pending one),
// or with the outcome err implies (as LeaveWith, no commit, when res is
// nil).
func (t *Ticket) LeaveThroughForge(res *Forged, err error) {
	if err != nil || res == nil {
		t.LeaveWith(err, "")
		return
	}
	why := "through the forge"
	if res.Pending != "" {
		why += "; the forge merges it when it can (" + res.Pending + ")"
	}
	t.Leave(LeftLanded, why, res.Commit)
}

// logLeft appends l to the log of entries that left, keeping the newest
// maxLeft (rewritten when it is twice that).
func (q *Service) logLeft(l Left) {
	path := q.dir("left.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	b, err := json.Marshal(l)
	if err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	_, _ = f.Write(append(b, '\n'))
	_ = f.Close()
	if left := q.readLeft(); len(left) > 2*maxLeft {
		var buf bytes.Buffer
		for _, l := range left[len(left)-maxLeft:] {
			b, _ := json.Marshal(l)
			buf.Write(append(b, '\n'))
		}
		_ = renameio.WriteFile(path, buf.Bytes(), 0o644)
	}
}

func (q *Service) readLeft() []Left {
	f, err := os.Open(q.dir("left.jsonl"))
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []Left
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l Left
		if json.Unmarshal(sc.Bytes(), &l) == nil && task.ValidID(l.Task) {
			out = append(out, l)
		}
	}
	return out
}

// readLeftOf is the log of entries that left target's queue, oldest
// first.
func (q *Service) readLeftOf(target string) []Left {
	var out []Left
	for _, l := range q.readLeft() {
		if l.Target == target {
			out = append(out, l)
		}
	}
	return out
}

func readEntries(dir string) []Entry {
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var out []Entry
	for _, p := range names {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var en Entry
		if json.Unmarshal(b, &en) == nil && task.ValidID(en.Task) && en.Task+".json" == filepath.Base(p) {
			out = append(out, en)
		}
	}
	return out
}

// Queues returns this machine's merge queues, one per target with
// entries or history, targets in name order. An entry whose accept
// process died is dropped and logged as having left with an error.
func (q *Service) Queues() []View {
	byTarget := map[string]*View{}
	view := func(t string) *View {
		if byTarget[t] == nil {
			byTarget[t] = &View{Target: t, Entries: []Entry{}, Left: []Left{}}
		}
		return byTarget[t]
	}
	for _, en := range readEntries(q.dir("active")) {
		if en.PID <= 0 || !proc.Alive(en.PID) {
			t := &Ticket{q: q, en: en, path: q.activePath(en.Task)}
			t.Leave(LeftError, fmt.Sprintf("the accept carrying it (pid %d) ended without leaving the queue", en.PID), "")
			continue
		}
		v := view(en.Target)
		v.Entries = append(v.Entries, en)
	}
	for _, en := range readEntries(q.dir("fixing")) {
		en.State = Fixing
		v := view(en.Target)
		v.Entries = append(v.Entries, en)
	}
	left := q.readLeft()
	if len(left) > maxLeft {
		left = left[len(left)-maxLeft:]
	}
	for _, l := range left {
		v := view(l.Target)
		v.Left = append(v.Left, l)
	}
	var out []View
	for _, v := range byTarget {
		slices.SortFunc(v.Entries, func(a, b Entry) int { return a.Entered.Compare(b.Entered) })
		v.Lanes = LaneSummary(*v)
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b View) int { return strings.Compare(a.Target, b.Target) })
	return out
}

// InQueue returns the task's entry if it is in a queue on this machine.
func (q *Service) InQueue(id string) (Entry, bool) {
	for _, v := range q.Queues() {
		for _, en := range v.Entries {
			if en.Task == id {
				return en, true
			}
		}
	}
	return Entry{}, false
}

// Requeue records that task sn re-enters target's queue once the turn
// afterTurn has ended (its agent is fixing what the gate found in fix
// round round), through the forge when viaForge.
func (q *Service) Requeue(sn *task.Snapshot, target string, round, afterTurn int, viaForge bool) error {
	now := q.now().Truncate(time.Millisecond)
	return writeEntry(q.fixingPath(sn.Task.ID), Entry{Task: sn.Task.ID, Slug: sn.Task.Slug, Target: target, State: Fixing,
		Detail:  fmt.Sprintf("the agent is fixing the gate's failure (round %d); re-enters after its turn", round),
		Entered: now, Since: now, Round: round, AfterTurn: afterTurn, Forge: viaForge})
}

// Dequeue takes a task waiting for its agent's fix out of its queue: it
// will not re-enter by itself. An accept in flight is another process's
// to stop.
func (q *Service) Dequeue(name string) (Entry, error) {
	id, err := q.Env.Store.Resolve(name)
	if err != nil {
		return Entry{}, err
	}
	en, ok := q.InQueue(id)
	switch {
	case !ok:
		return Entry{}, fmt.Errorf("%s is in no merge queue on this machine (lazy queue lists them)", name)
	case en.State != Fixing:
		return en, fmt.Errorf("%s is %s in the queue of %s, carried by lazy accept (pid %d); interrupt that command to take it out", en.Slug, en.State, en.Target, en.PID)
	}
	if err := os.Remove(q.fixingPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return en, err
	}
	q.logLeft(Left{Task: id, Slug: en.Slug, Target: en.Target, Outcome: LeftRemoved, Why: "taken out by " + string(q.Env.Actor), At: q.now().Truncate(time.Second)})
	return en, nil
}

// Requeued is a task whose agent has fixed (or tried to fix) what its
// gate found, ready to re-enter its queue.
type Requeued struct {
	Task  string
	Round int
	// ViaForge: it re-enters through its pull request.
	ViaForge bool
}

// ReadyToRequeue returns the fixing tasks whose fix turn has ended, and
// drops those that ended otherwise (finished, or taken elsewhere).
func (q *Service) ReadyToRequeue() []Requeued {
	var out []Requeued
	for _, en := range readEntries(q.dir("fixing")) {
		sn, err := q.Env.Store.Load(en.Task)
		if err != nil {
			continue
		}
		switch st := sn.Task.Status; {
		case st.IsTerminal():
			_ = os.Remove(q.fixingPath(en.Task))
			q.logLeft(Left{Task: en.Task, Slug: en.Slug, Target: en.Target, Outcome: LeftRemoved, Why: "the task is " + string(st), At: q.now().Truncate(time.Second)})
		case st.IsActive() || sn.Session == nil || sn.Session.Turn < en.AfterTurn:
			// its fix turn has not ended yet
		case st == machine.Blocked:
			out = append(out, Requeued{Task: en.Task, Round: en.Round, ViaForge: en.Forge})
		}
	}
	return out
}
