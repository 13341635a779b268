// Package proto is the file protocol between lazy commands and the
// per-turn supervisor: command.json in, status.json while running,
// response.json at the end, plus the turn's log. Every file is written
// atomically, and every file names the session and turn it belongs to so
// a stale file never acts on a newer turn.
package proto

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"
)

// Dir is one task's protocol directory.
type Dir string

// ForTask returns the protocol directory of a task under lazyDir
// (<git common dir>/lazy).
func ForTask(lazyDir, taskID string) Dir { return Dir(filepath.Join(lazyDir, "proto", taskID)) }

// Path returns a file in the directory.
func (d Dir) Path(name string) string { return filepath.Join(string(d), name) }

// File names.
const (
	CommandFile  = "command.json"
	StatusFile   = "status.json"
	ResponseFile = "response.json"
	LogFile      = "agent.log"
)

// Turn identifies the turn a file belongs to.
type Turn struct {
	TaskID  string `json:"task_id"`
	Session string `json:"session"`
	Seq     int    `json:"turn"` // the human turn that started it
}

// Command tells the supervisor what to run.
type Command struct {
	Turn
	Kind           string            `json:"kind"` // start, unblock, ask, resume
	Agent          string            `json:"agent"`
	Exec           []string          `json:"exec,omitempty"`      // the exec agent's command
	ResumeID       string            `json:"resume_id,omitempty"` // the agent's own session id to resume
	PermissionMode string            `json:"permission_mode,omitempty"`
	Prompt         string            `json:"prompt"`
	Worktree       string            `json:"worktree"`
	BaseSHA        string            `json:"base_sha,omitempty"`  // empty: HEAD after the upstream merge
	SyncFrom       string            `json:"sync_from,omitempty"` // branch to merge before the agent runs
	Env            map[string]string `json:"env,omitempty"`
	Written        time.Time         `json:"written_at"`
}

// Status is what a running supervisor reports.
type Status struct {
	Turn
	PID          int       `json:"pid"`
	StartedAt    time.Time `json:"started_at"`
	Phase        string    `json:"phase"`
	AgentPID     int       `json:"agent_pid,omitempty"`
	LastProgress time.Time `json:"last_progress,omitempty"`
	Progress     string    `json:"progress,omitempty"`
}

// Response statuses.
const (
	Completed = "completed"
	Errored   = "error"
)

// Response is the supervisor's final word on a turn.
type Response struct {
	Turn
	Status         string    `json:"status"`
	Phase          string    `json:"phase"`
	Result         string    `json:"result"`
	AgentSessionID string    `json:"agent_session_id,omitempty"`
	Commits        []string  `json:"commits"`
	ChangedFiles   []string  `json:"changed_files"`
	ExitCode       int       `json:"exit_code"`
	Error          string    `json:"error,omitempty"`
	StderrTail     string    `json:"stderr_tail,omitempty"`
	FailureClass   string    `json:"failure_class,omitempty"`
	FailureReason  string    `json:"failure_reason,omitempty"`
	Attempts       int       `json:"failure_attempts,omitempty"`
	FinishedAt     time.Time `json:"finished_at"`
}

// Write stores v as name, atomically.
func (d Dir) Write(name string, v any) error {
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		return fmt.Errorf("protocol dir: %w", err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	if err := renameio.WriteFile(d.Path(name), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", d.Path(name), err)
	}
	return nil
}

// ErrAbsent means the protocol file does not exist.
var ErrAbsent = errors.New("protocol file absent")

// Read loads name into v. A missing file is ErrAbsent.
func (d Dir) Read(name string, v any) error {
	b, err := os.ReadFile(d.Path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return ErrAbsent
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", d.Path(name), err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s is damaged: %w", d.Path(name), err)
	}
	return nil
}

// Remove deletes name if present.
func (d Dir) Remove(name string) {
	_ = os.Remove(d.Path(name))
}
