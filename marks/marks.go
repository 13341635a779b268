// Package marks is the live, ephemeral state of a working task that the
// task store does not record: which subtasks its agent waits on (and the
// persisted wait intervals), its latest progress line, and the substate
// every surface derives from them and the supervisor's status. The MCP
// server writes the marks; the CLI, the web view and MCP read them.
package marks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lazyorch/lazy/internal/proc"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
)

// Marker files, in a task's protocol directory.
const (
	WaitingFile  = proto.WaitingFile
	ProgressFile = proto.ProgressFile
	// MaxProgress is the longest progress line kept, in characters.
	MaxProgress = 120
)

// Marks writes and reads the ephemeral markers of MCP calls: which
// subtasks an agent is waiting on, and its latest progress line. Each
// marker carries the writer's pid, and a reader that finds that process
// dead disbelieves the marker, so a SIGKILLed daemon never leaves a false
// "waiting" behind. Bookkeeping never fails the call it observes.
type Marks struct {
	LazyDir string
	PID     int    // the writing process (the daemon)
	Host    string // this machine's host id
	Now     func() time.Time

	mu sync.Mutex
}

func (m *Marks) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Marks) dir(task string) proto.Dir { return proto.ForTask(m.LazyDir, task) }

// Wait is one subtask a task's agent is blocked on.
type Wait struct {
	On    string    `json:"task"`
	Slug  string    `json:"slug"`
	Since time.Time `json:"since"`
	ID    string    `json:"interval"`
}

type waiting struct {
	PID   int    `json:"pid"`
	Waits []Wait `json:"waits"`
}

// Interval is one persisted wait, folded from its start and end lines.
// An interval whose end never arrived (the waiter died) has no EndedAt
// and no Outcome: it is open, bounded above by the turn's end.
type Interval struct {
	ID           string     `json:"id"`
	Task         string     `json:"task"`
	On           string     `json:"on"`
	TurnSequence int        `json:"turn_sequence"` // a hint: the next unused turn sequence at wait time
	StartedAt    time.Time  `json:"started_at"`
	EndedAt      *time.Time `json:"ended_at"`
	Outcome      *string    `json:"outcome"`
}

type intervalLine struct {
	Event        string    `json:"event"` // start | end
	ID           string    `json:"id"`
	Task         string    `json:"task,omitempty"`
	On           string    `json:"on,omitempty"`
	TurnSequence int       `json:"turn_sequence,omitempty"`
	At           time.Time `json:"at"`
	Outcome      string    `json:"outcome,omitempty"`
}

func (m *Marks) intervalsPath() string { return filepath.Join(m.LazyDir, "waits", "intervals.jsonl") }

func (m *Marks) appendInterval(l intervalLine) {
	b, err := json.Marshal(l)
	if err != nil {
		return
	}
	_ = os.MkdirAll(filepath.Dir(m.intervalsPath()), 0o755)
	f, err := os.OpenFile(m.intervalsPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	_, _ = f.Write(append(b, '\n'))
	_ = f.Close()
}

// StartWait records that task's agent waits on sn's task. The returned
// function settles it and must run however the wait ends (a finally):
// clearing is on settle, not on the response reaching the client. A nil
// Marks, or no task (a human caller), records nothing.
func (m *Marks) StartWait(task string, sn *task.Snapshot) func(err error) {
	if m == nil || task == "" {
		return func(error) {}
	}
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	w := Wait{On: sn.Task.ID, Slug: sn.Task.Slug, Since: m.now().UTC(), ID: hex.EncodeToString(idb[:])}
	seq := 0
	if cur, err := m.runningTurn(task); err == nil {
		seq = cur + 1
	}
	m.appendInterval(intervalLine{Event: "start", ID: w.ID, Task: task, On: w.On, TurnSequence: seq, At: w.Since})
	m.editWaits(task, func(ws []Wait) []Wait { return append(ws, w) })
	return func(err error) {
		outcome := "completed"
		switch {
		case errors.Is(err, context.Canceled):
			outcome = "canceled"
		case err != nil && strings.Contains(err.Error(), "no answer within"):
			outcome = "timeout"
		case err != nil:
			outcome = "error"
		}
		m.editWaits(task, func(ws []Wait) []Wait {
			out := ws[:0]
			for _, x := range ws {
				if x.ID != w.ID {
					out = append(out, x)
				}
			}
			return out
		})
		m.appendInterval(intervalLine{Event: "end", ID: w.ID, At: m.now().UTC(), Outcome: outcome})
	}
}

// runningTurn is the sequence of the human turn the waiting agent's turn
// answers; the next unused sequence is the best hint of the agent turn
// the wait belongs to (agent turns are written when they end).
func (m *Marks) runningTurn(task string) (int, error) {
	var cmd proto.Command
	if err := m.dir(task).Read(proto.CommandFile, &cmd); err != nil {
		return 0, err
	}
	return cmd.Seq, nil
}

func (m *Marks) editWaits(task string, edit func([]Wait) []Wait) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dir(task)
	var cur waiting
	if d.Read(WaitingFile, &cur) != nil || cur.PID != m.PID {
		cur = waiting{}
	}
	cur.PID = m.PID
	cur.Waits = edit(cur.Waits)
	if len(cur.Waits) == 0 {
		d.Remove(WaitingFile)
		return
	}
	_ = d.Write(WaitingFile, cur)
}

// Waits returns the live waits of task's agent: none if the marker's
// writer is dead.
func (m *Marks) Waits(task string) []Wait {
	var cur waiting
	if m.dir(task).Read(WaitingFile, &cur) != nil || !pidAlive(cur.PID) {
		return nil
	}
	return cur.Waits
}

// Intervals reads every persisted wait interval, folded.
func Intervals(lazyDir string) ([]Interval, error) {
	b, err := os.ReadFile(filepath.Join(lazyDir, "waits", "intervals.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Interval
	index := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		var l intervalLine
		if json.Unmarshal([]byte(line), &l) != nil {
			continue // a torn last line from a crash
		}
		switch l.Event {
		case "start":
			index[l.ID] = len(out)
			out = append(out, Interval{ID: l.ID, Task: l.Task, On: l.On, TurnSequence: l.TurnSequence, StartedAt: l.At})
		case "end":
			if i, ok := index[l.ID]; ok {
				at, oc := l.At, l.Outcome
				out[i].EndedAt, out[i].Outcome = &at, &oc
			}
		}
	}
	return out, nil
}

type progressMark struct {
	PID     int       `json:"pid"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// ProgressResult is what lazy_update_progress answers.
type ProgressResult struct {
	Recorded  string `json:"recorded"`
	Truncated bool   `json:"truncated"`
	Note      string `json:"note,omitempty"`
}

// CleanProgress collapses whitespace and caps a progress line at
// MaxProgress characters; it reports whether it cut.
func CleanProgress(s string) (string, bool) {
	// Whitespace (CR included) collapses; any other control character is
	// escaped, as at every intake.
	s = sanitize.Field(strings.Join(strings.Fields(s), " "))
	if utf8.RuneCountInString(s) <= MaxProgress {
		return s, false
	}
	r := []rune(s)
	return string(r[:MaxProgress-1]) + "…", true
}

// SetProgress replaces task's progress line (latest wins, no history).
func (m *Marks) SetProgress(task, message string) (ProgressResult, error) {
	msg, cut := CleanProgress(message)
	if msg == "" {
		return ProgressResult{}, errors.New("a progress line needs some text")
	}
	res := ProgressResult{Recorded: msg, Truncated: cut}
	if cut {
		res.Note = fmt.Sprintf("your line was longer than %d characters and was truncated to what is recorded", MaxProgress)
	}
	if err := m.dir(task).Write(ProgressFile, progressMark{PID: m.PID, Message: msg, At: m.now().UTC()}); err != nil {
		// Losing a status line must never cost the agent its call.
		res.Note = strings.TrimSpace(res.Note + " (the line could not be stored: " + err.Error() + ")")
	}
	return res, nil
}

// Progress returns task's live progress line, or "".
func (m *Marks) Progress(task string) string {
	var p progressMark
	if m.dir(task).Read(ProgressFile, &p) != nil || !pidAlive(p.PID) {
		return ""
	}
	msg, _ := CleanProgress(p.Message) // a foreign file must not break a table cell
	return msg
}

// Substate derives what a working task is doing this second from its
// live files, through machine.Substate, and why a parked task is held (a
// budget, a usage limit): the one derivation every surface uses.
func (m *Marks) Substate(s *task.Summary) string {
	if s.Hold != nil && (s.Status == machine.Blocked || s.Status == machine.Conflict) {
		// Why a parked task waits, when a human's review is not all of
		// it: a budget, or a usage limit the daemon waits out.
		return s.Hold.String()
	}
	if s.Status == machine.Backlog && len(s.Attempts) > 0 {
		// An attempt group waits in backlog while its attempts run.
		return fmt.Sprintf("tried %d ways", len(s.Attempts)) // lazy show compares them
	}
	if s.Status != machine.Working {
		return ""
	}
	if s.Host != "" && m.Host != "" && s.Host != m.Host {
		return "on " + s.Host // its files are on that machine
	}
	in := machine.SubstateInput{Kind: s.Substate}
	var st proto.Status
	if m.dir(s.ID).Read(proto.StatusFile, &st) == nil && proc.Runs(st.PID, "supervise", s.ID) {
		in.Alive, in.Phase = true, st.Phase
		in.Attempt, in.RetryClass, in.RetryReason, in.AgentRetrying = st.Attempt, st.RetryFailureClass, st.RetryFailureReason, st.AgentRetrying
	} else if m.starting(s.ID) {
		return "starting" // the supervisor has not reported yet
	}
	now := m.now()
	for _, w := range m.Waits(s.ID) {
		in.Waits = append(in.Waits, machine.WaitLabel{Slug: w.Slug, For: now.Sub(w.Since)})
	}
	in.Progress = m.Progress(s.ID)
	return machine.Substate(in)
}

// startGrace matches the reconciler's default: a turn launched this
// recently without a supervisor report is starting, not dead.
const startGrace = 30 * time.Second

// starting reports whether task's current command was written recently
// and no supervisor reported for it yet.
func (m *Marks) starting(task string) bool {
	var cmd proto.Command
	if m.dir(task).Read(proto.CommandFile, &cmd) != nil {
		return false
	}
	var st proto.Status
	if m.dir(task).Read(proto.StatusFile, &st) == nil && st.Session == cmd.Session && st.Seq == cmd.Seq {
		return false // it reported, and is gone
	}
	return m.now().Sub(cmd.Written) < startGrace
}

// pidAlive reports whether the daemon that wrote a marker still runs.
func pidAlive(pid int) bool { return proc.Runs(pid, "daemon") }

// ClearOwned removes every marker this process wrote, settling its open
// waits: a clean daemon stop leaves no marker behind.
func (m *Marks) ClearOwned() {
	dirs, err := os.ReadDir(filepath.Join(m.LazyDir, "proto"))
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range dirs {
		pd := m.dir(d.Name())
		var w waiting
		if pd.Read(WaitingFile, &w) == nil && w.PID == m.PID {
			for _, x := range w.Waits {
				m.appendInterval(intervalLine{Event: "end", ID: x.ID, At: m.now().UTC(), Outcome: "daemon-stopped"})
			}
			pd.Remove(WaitingFile)
		}
		var p progressMark
		if pd.Read(ProgressFile, &p) == nil && p.PID == m.PID {
			pd.Remove(ProgressFile)
		}
	}
}
