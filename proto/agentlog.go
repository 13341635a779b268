package proto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// The agent log (LogFile) is a sequence of lines. The supervisor writes
// each agent launch as a frame line of lazy's own, then what the agent
// printed, one line per line it printed, with the terminal's escapes and
// carriage returns taken out (agent.Capture): for Claude Code and Codex,
// each line is one of their JSON events. A launch always ends on a
// newline, so the next one can never run into it. Between launches lazy
// adds notes of its own: a task held over budget or by a usage limit, a
// gate that failed. Lazy's own lines, and only they, begin with
// LogLinePrefix; the capture wraps an agent line that would look like one
// (see agent.Capture). A log an older lazy wrote has no frames and may
// have the agent's escapes in it; its index (LogIndexFile) says where
// each launch began, and the readers (agent.SplitLog) make it read the
// same.

// LogLinePrefix begins every line lazy itself writes into an agent log.
const LogLinePrefix = `{"lazy":"`

// What one of lazy's own log lines is (LogLine.Lazy).
const (
	// LogTurn begins an agent launch: the frame.
	LogTurn = "turn"
	// LogNote is what lazy did or found between launches, with the
	// command that carries the task on.
	LogNote = "note"
	// LogOut is a line an agent printed that is not a JSON event of its
	// own, as lazy logs --raw gives it, or an agent's line that began as
	// lazy's do, as the capture stores it.
	LogOut = "out"
)

// Kinds of LogNote (LogLine.Kind).
const (
	NoteBudget = "budget" // a budget held the task
	NoteLimit  = "limit"  // a usage limit holds the task until it resets
	NoteGate   = "gate"   // the merge gate failed
	NoteEnded  = "ended"  // what the agent (or the setup) left running was ended
)

// LogLine is one of lazy's own lines in an agent log.
type LogLine struct {
	Lazy string `json:"lazy"` // LogTurn, LogNote or LogOut
	// Turn is the turn a launch belongs to (LogTurn), or the task's turn
	// when a note was written.
	Turn int `json:"turn,omitempty"`
	// Kind is the turn's kind (start, unblock, resume, handoff, setup ...)
	// for a frame, or the note's kind (NoteBudget ...).
	Kind  string `json:"kind,omitempty"`
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	// Run numbers the launches of one turn from 1: a later one is a
	// retry, a relaunch after the watchdog, or the push-back on
	// uncommitted changes (Why).
	Run int    `json:"run,omitempty"`
	Why string `json:"why,omitempty"`
	// At is when the launch began or the note was written.
	At time.Time `json:"at,omitzero"`
	// Text is a note's or an out line's text.
	Text string `json:"text,omitempty"`
	// Next is the command that carries the task on after a note.
	Next string `json:"next,omitempty"`
}

// Bytes is the line as it is written, newline included.
func (l LogLine) Bytes() []byte {
	if !l.At.IsZero() {
		l.At = l.At.UTC().Truncate(time.Second)
	}
	b, err := json.Marshal(l)
	if err != nil || !bytes.HasPrefix(b, []byte(LogLinePrefix)) {
		// Cannot happen for this struct; never write a line that would
		// not read back as lazy's.
		return nil
	}
	return append(b, '\n')
}

// ParseLogLine reads one of lazy's own log lines; ok is false for every
// other line, an agent's included.
func ParseLogLine(line string) (LogLine, bool) {
	if !strings.HasPrefix(line, LogLinePrefix) {
		return LogLine{}, false
	}
	var l LogLine
	if err := json.Unmarshal([]byte(strings.TrimRight(line, "\r\n")), &l); err != nil || l.Lazy == "" {
		return LogLine{}, false
	}
	return l, true
}

// StartLaunch opens the agent log for one agent launch: it ends what is
// there on a newline (a launch an older lazy, or a killed supervisor,
// left mid-line), records the launch in the index (where lazy logs
// --turn finds it) and writes the frame. The caller writes the agent's
// output after it and closes the file. A launch runs without its index
// entry if that cannot be written.
func (d Dir) StartLaunch(frame LogLine) (*os.File, error) {
	frame.Lazy = LogTurn
	f, err := d.OpenLog()
	if err != nil {
		return nil, err
	}
	off, err := endLine(f, d.Path(LogFile))
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("agent log: %w", err)
	}
	_ = d.MarkLog(frame.Turn, frame.Kind, off, frame.At)
	if _, err := f.Write(frame.Bytes()); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("agent log: %w", err)
	}
	return f, nil
}

// Launches counts the launches of turn seq of kind in the index so far.
func (d Dir) Launches(seq int, kind string) int {
	n := 0
	for _, m := range d.LogMarks() {
		if m.Seq == seq && m.Kind == kind {
			n++
		}
	}
	return n
}

// AppendLogNote writes one of lazy's notes into the agent log, between
// launches (no turn of the task runs while lazy holds it, or after its
// gate ran).
func (d Dir) AppendLogNote(note LogLine) error {
	note.Lazy = LogNote
	if note.At.IsZero() {
		note.At = time.Now()
	}
	f, err := d.OpenLog()
	if err != nil {
		return err
	}
	if _, err := endLine(f, d.Path(LogFile)); err != nil {
		_ = f.Close()
		return fmt.Errorf("agent log: %w", err)
	}
	_, err = f.Write(note.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("agent log: %w", err)
	}
	return nil
}

// endLine makes the log at path, open for appending as f, end on a
// newline, and returns its size after that: where the next line begins.
func endLine(f *os.File, path string) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if size == 0 {
		return 0, nil
	}
	r, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return size, nil
	}
	if err != nil {
		return 0, err
	}
	last := make([]byte, 1)
	_, err = r.ReadAt(last, size-1)
	_ = r.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	if last[0] == '\n' {
		return size, nil
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return 0, err
	}
	return size + 1, nil
}
