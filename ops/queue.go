package ops

import (
	"bufio"
	"bytes"
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
)

// The merge queue of a target branch is the accepts into it on this
// machine: they take the target's accept lock one at a time, and each
// gates the exact tree it lands (the target's tip at that moment, which
// holds every entry ahead of it). What the queue holds is kept beside
// the lock, host-local like it, so lazy queue, watch and the web view can
// show it: one file per entry in flight (with the pid of the accept that
// carries it), one per task waiting for its agent's fix before it
// re-enters, and a bounded log of why entries left.

// Queue entry states.
const (
	QueueWaiting = "waiting" // for the target's accept lock
	QueueGating  = "gating"  // the gate runs on its candidate tree
	QueueLanding = "landing" // the gate passed; the target moves to its tree
	QueueFixing  = "fixing"  // the gate failed; the agent is fixing it, then it re-enters
)

// Queue outcomes: why an entry left.
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

// QueueEntry is one accept in a target's queue.
type QueueEntry struct {
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
}

// QueueLeft is an entry that left its queue, and why.
type QueueLeft struct {
	Task    string    `json:"task"`
	Slug    string    `json:"slug"`
	Target  string    `json:"target"`
	Outcome string    `json:"outcome"`
	Why     string    `json:"why,omitempty"`
	Commit  string    `json:"commit,omitempty"`
	At      time.Time `json:"at"`
}

// QueueView is one target's queue: entries in the order they entered,
// and the newest that left.
type QueueView struct {
	Target  string       `json:"target"`
	Entries []QueueEntry `json:"entries"`
	Left    []QueueLeft  `json:"left"`
}

// maxLeft bounds the log of entries that left.
const maxLeft = 50

func (e *Env) queueDir(parts ...string) string {
	return e.Repo.LazyDir(append([]string{"queue"}, parts...)...)
}

func (e *Env) activePath(id string) string { return e.queueDir("active", id+".json") }
func (e *Env) fixingPath(id string) string { return e.queueDir("fixing", id+".json") }

// writeEntry replaces the file at path with en.
func writeEntry(path string, en QueueEntry) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(en)
	if err != nil {
		return err
	}
	return renameio.WriteFile(path, append(b, '\n'), 0o644)
}

// queueTicket is an accept's place in its target's queue.
type queueTicket struct {
	e    *Env
	en   QueueEntry
	path string
}

// enterQueue puts the accept of task sn into target's queue, waiting.
func (e *Env) enterQueue(sn *task.Snapshot, target string) *queueTicket {
	now := time.Now().UTC().Truncate(time.Millisecond)
	t := &queueTicket{e: e, path: e.activePath(sn.Task.ID), en: QueueEntry{Task: sn.Task.ID, Slug: sn.Task.Slug,
		Target: target, State: QueueWaiting, Entered: now, Since: now, PID: os.Getpid()}}
	// This process entered it already (a speculative train): it keeps
	// its place.
	if b, err := os.ReadFile(t.path); err == nil {
		var old QueueEntry
		if json.Unmarshal(b, &old) == nil && old.PID == t.en.PID && old.Target == target {
			t.en.Entered = old.Entered
		}
	}
	_ = os.Remove(e.fixingPath(sn.Task.ID))
	_ = writeEntry(t.path, t.en)
	return t
}

// set moves the entry to state, saying what it does in detail.
func (t *queueTicket) set(state, detail string) {
	if t == nil {
		return
	}
	t.en.State, t.en.Detail, t.en.Since = state, detail, time.Now().UTC().Truncate(time.Millisecond)
	_ = writeEntry(t.path, t.en)
}

// leave takes the entry out of the queue and logs why.
func (t *queueTicket) leave(outcome, why, commit string) {
	if t == nil {
		return
	}
	_ = os.Remove(t.path)
	t.e.logLeft(QueueLeft{Task: t.en.Task, Slug: t.en.Slug, Target: t.en.Target, Outcome: outcome, Why: session.OneLine(why), Commit: commit,
		At: time.Now().UTC().Truncate(time.Second)})
}

// reenterThroughForge puts a task that waits for its agent's fix back in
// its queue, gating, as its accept through the forge begins (the forge,
// not the target's accept lock, orders what merges there); nil when it
// was not waiting.
func (e *Env) reenterThroughForge(id string) *queueTicket {
	b, err := os.ReadFile(e.fixingPath(id))
	if err != nil {
		return nil
	}
	var en QueueEntry
	if json.Unmarshal(b, &en) != nil || en.Task != id {
		return nil
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	t := &queueTicket{e: e, path: e.activePath(id), en: QueueEntry{Task: id, Slug: en.Slug, Target: en.Target,
		State: QueueGating, Detail: "through the forge", Entered: now, Since: now, PID: os.Getpid()}}
	_ = os.Remove(e.fixingPath(id))
	_ = writeEntry(t.path, t.en)
	return t
}

// leaveThroughForge takes an accept through the forge out of the queue:
// landed once the merge is requested (the forge finishes a pending one),
// or with the outcome err implies.
func (t *queueTicket) leaveThroughForge(res *AcceptResult, err error) {
	if err != nil || res == nil {
		t.leaveWith(err, "")
		return
	}
	why := "through the forge"
	if res.Pending != "" {
		why += "; the forge merges it when it can (" + res.Pending + ")"
	}
	t.leave(LeftLanded, why, res.Commit)
}

// leaveWith takes the entry out with the outcome err implies.
func (t *queueTicket) leaveWith(err error, commit string) {
	var ge *GateError
	var ce *ConflictError
	var pe *ProtectedError
	switch {
	case err == nil:
		t.leave(LeftLanded, "", commit)
	case errors.As(err, &pe):
		t.leave(LeftProtected, pe.QueueWhy(), "")
	case errors.As(err, &ge):
		t.leave(LeftFailed, ge.Error(), "")
	case errors.As(err, &ce):
		t.leave(LeftConflict, ce.Error(), "")
	default:
		t.leave(LeftError, err.Error(), "")
	}
}

// logLeft appends l to the log of entries that left, keeping the newest
// maxLeft (rewritten when it is twice that).
func (e *Env) logLeft(l QueueLeft) {
	path := e.queueDir("left.jsonl")
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
	if left := e.readLeft(); len(left) > 2*maxLeft {
		var buf bytes.Buffer
		for _, l := range left[len(left)-maxLeft:] {
			b, _ := json.Marshal(l)
			buf.Write(append(b, '\n'))
		}
		_ = renameio.WriteFile(path, buf.Bytes(), 0o644)
	}
}

func (e *Env) readLeft() []QueueLeft {
	f, err := os.Open(e.queueDir("left.jsonl"))
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []QueueLeft
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l QueueLeft
		if json.Unmarshal(sc.Bytes(), &l) == nil && task.ValidID(l.Task) {
			out = append(out, l)
		}
	}
	return out
}

func readEntries(dir string) []QueueEntry {
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var out []QueueEntry
	for _, p := range names {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var en QueueEntry
		if json.Unmarshal(b, &en) == nil && task.ValidID(en.Task) && en.Task+".json" == filepath.Base(p) {
			out = append(out, en)
		}
	}
	return out
}

// Queues returns this machine's merge queues, one per target with
// entries or history, targets in name order. An entry whose accept
// process died is dropped and logged as having left with an error.
func (e *Env) Queues() []QueueView {
	byTarget := map[string]*QueueView{}
	view := func(t string) *QueueView {
		if byTarget[t] == nil {
			byTarget[t] = &QueueView{Target: t, Entries: []QueueEntry{}, Left: []QueueLeft{}}
		}
		return byTarget[t]
	}
	for _, en := range readEntries(e.queueDir("active")) {
		if en.PID <= 0 || !proc.Alive(en.PID) {
			t := &queueTicket{e: e, en: en, path: e.activePath(en.Task)}
			t.leave(LeftError, fmt.Sprintf("the accept carrying it (pid %d) ended without leaving the queue", en.PID), "")
			continue
		}
		v := view(en.Target)
		v.Entries = append(v.Entries, en)
	}
	for _, en := range readEntries(e.queueDir("fixing")) {
		en.State = QueueFixing
		v := view(en.Target)
		v.Entries = append(v.Entries, en)
	}
	left := e.readLeft()
	if len(left) > maxLeft {
		left = left[len(left)-maxLeft:]
	}
	for _, l := range left {
		v := view(l.Target)
		v.Left = append(v.Left, l)
	}
	var out []QueueView
	for _, v := range byTarget {
		slices.SortFunc(v.Entries, func(a, b QueueEntry) int { return a.Entered.Compare(b.Entered) })
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b QueueView) int { return strings.Compare(a.Target, b.Target) })
	return out
}

// InQueue returns the task's entry if it is in a queue on this machine.
func (e *Env) InQueue(id string) (QueueEntry, bool) {
	for _, v := range e.Queues() {
		for _, en := range v.Entries {
			if en.Task == id {
				return en, true
			}
		}
	}
	return QueueEntry{}, false
}

// requeue records that task sn re-enters target's queue once the turn
// AfterTurn has ended (its agent is fixing what the gate found), through
// the forge when viaForge.
func (e *Env) requeue(sn *task.Snapshot, target string, round, afterTurn int, viaForge bool) error {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return writeEntry(e.fixingPath(sn.Task.ID), QueueEntry{Task: sn.Task.ID, Slug: sn.Task.Slug, Target: target, State: QueueFixing,
		Detail:  fmt.Sprintf("the agent is fixing the gate's failure (round %d); re-enters after its turn", round),
		Entered: now, Since: now, Round: round, AfterTurn: afterTurn, Forge: viaForge})
}

// Dequeue takes a task waiting for its agent's fix out of its queue: it
// will not re-enter by itself. An accept in flight is another process's
// to stop.
func (e *Env) Dequeue(name string) (QueueEntry, error) {
	id, err := e.Store.Resolve(name)
	if err != nil {
		return QueueEntry{}, err
	}
	en, ok := e.InQueue(id)
	switch {
	case !ok:
		return QueueEntry{}, fmt.Errorf("%s is in no merge queue on this machine (lazy queue lists them)", name)
	case en.State != QueueFixing:
		return en, fmt.Errorf("%s is %s in the queue of %s, carried by lazy accept (pid %d); interrupt that command to take it out", en.Slug, en.State, en.Target, en.PID)
	}
	if err := os.Remove(e.fixingPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return en, err
	}
	e.logLeft(QueueLeft{Task: id, Slug: en.Slug, Target: en.Target, Outcome: LeftRemoved, Why: "taken out by " + string(e.Actor), At: time.Now().UTC().Truncate(time.Second)})
	return en, nil
}

// Requeued is a task whose agent has fixed (or tried to fix) what its
// gate found, ready to re-enter its queue.
type Requeued struct {
	Task  string
	Round int
	// ViaForge: it re-enters through its pull request (AcceptOptions).
	ViaForge bool
}

// ReadyToRequeue returns the fixing tasks whose fix turn has ended, and
// drops those that ended otherwise (finished, or taken elsewhere).
func (e *Env) ReadyToRequeue() []Requeued {
	var out []Requeued
	for _, en := range readEntries(e.queueDir("fixing")) {
		sn, err := e.Store.Load(en.Task)
		if err != nil {
			continue
		}
		switch st := sn.Task.Status; {
		case st.IsTerminal():
			_ = os.Remove(e.fixingPath(en.Task))
			e.logLeft(QueueLeft{Task: en.Task, Slug: en.Slug, Target: en.Target, Outcome: LeftRemoved, Why: "the task is " + string(st), At: time.Now().UTC().Truncate(time.Second)})
		case st.IsActive() || sn.Session == nil || sn.Session.Turn < en.AfterTurn:
			// its fix turn has not ended yet
		case st == machine.Blocked:
			out = append(out, Requeued{Task: en.Task, Round: en.Round, ViaForge: en.Forge})
		}
	}
	return out
}
