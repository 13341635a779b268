// Package owned is the host-local record of the agent sessions this
// machine started. It is the trust anchor for execution: a session's
// agent kind, command, permission mode, worktree and branch are read from
// here, never from the copy in refs/lazy/*, because refs can be fetched
// from a remote that anyone with push access writes. Nothing a fetch
// writes lives under <git common dir>/lazy/, so a session is ours exactly
// when a record here names it.
package owned

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/lazyorch/lazy/internal/confine"
	"github.com/lazyorch/lazy/proto"
)

// Session is what this machine decided when it started (or took over) a
// task's session. Every field is local: the command line and git config
// of this machine at that moment.
type Session struct {
	TaskID         string   `json:"task_id"`
	SessionID      string   `json:"session_id"`
	Agent          string   `json:"agent"`
	Exec           []string `json:"exec,omitempty"`
	PermissionMode string   `json:"permission_mode,omitempty"`
	// Model is the model the session asked its agent for (start --model).
	Model string `json:"model,omitempty"`
	// Worktree is absolute and was derived here (<worktree dir>/<slug>);
	// Branch is lazy/<slug> as it was when the session started.
	Worktree string `json:"worktree"`
	Branch   string `json:"branch"`
	// AgentSessionID is the agent CLI's own session id, as this machine's
	// supervisor last reported it: the --resume argument of the next turn.
	AgentSessionID string    `json:"agent_session_id,omitempty"`
	StartedAt      time.Time `json:"started_at"`
	// Sandbox is the confinement chosen for the session's turns (nil:
	// none), decided from lazy.sandbox or start --sandbox.
	Sandbox *proto.Sandbox `json:"sandbox,omitempty"`
	// TakenOverFrom names the host whose session this one replaced, when
	// the session began with lazy start --take-over.
	TakenOverFrom string `json:"taken_over_from,omitempty"`
	// Prepared says the worktree's preparation (lazy.copyFiles,
	// lazy.setup) succeeded; until then each turn tries it first.
	Prepared bool `json:"prepared,omitempty"`
}

// Confinement is how the session's turns are confined: its sandbox, its
// permission mode and whether its agent runs any command. This record is
// where a session's confinement lives: host-local and written before the
// session's first turn, so neither a pulled record nor the session's own
// agent can lower it, and what the agent starts is held to it
// (confine.Effective).
func (s Session) Confinement() confine.Confinement {
	return confine.Of(s.Agent, s.PermissionMode, s.Sandbox)
}

// ErrNotOwned means no session of the task was started on this machine.
var ErrNotOwned = errors.New("no session of this task was started on this machine")

// Dir is <git common dir>/lazy/sessions.
type Dir string

// For returns the directory under lazyDir (<git common dir>/lazy).
func For(lazyDir string) Dir { return Dir(filepath.Join(lazyDir, "sessions")) }

// validID accepts a task or session id as lazy mints them. The task id names
// the file, so it must never be a path.
func validID(s string) bool {
	return len(s) == 16 && strings.Trim(s, "0123456789abcdef") == ""
}

func (d Dir) path(taskID string) (string, error) {
	if !validID(taskID) {
		return "", fmt.Errorf("%q is not a task id", taskID)
	}
	return filepath.Join(string(d), taskID+".json"), nil
}

// Path is where the task's local session record lives ("" for a
// string that is not a task id).
func (d Dir) Path(taskID string) string {
	p, _ := d.path(taskID)
	return p
}

// Save records s atomically (0600: the exec command may hold private
// arguments), replacing the task's previous session.
func (d Dir) Save(s Session) error {
	if !validID(s.SessionID) {
		return fmt.Errorf("record the session: %q is not a session id", s.SessionID)
	}
	if !filepath.IsAbs(s.Worktree) {
		return fmt.Errorf("record the session: the worktree path %q is not absolute", s.Worktree)
	}
	p, err := d.path(s.TaskID)
	if err != nil {
		return fmt.Errorf("record the session: %w", err)
	}
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("record the session: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("record the session: %w", err)
	}
	if err := renameio.WriteFile(p, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("record the session: %w", err)
	}
	return nil
}

// Load returns the task's local session; ErrNotOwned when there is none.
func (d Dir) Load(taskID string) (Session, error) {
	p, err := d.path(taskID)
	if err != nil {
		return Session{}, ErrNotOwned
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Session{}, ErrNotOwned
	}
	if err != nil {
		return Session{}, fmt.Errorf("read the local session record: %w", err)
	}
	var s Session
	if err := json.Unmarshal(b, &s); err != nil {
		return Session{}, fmt.Errorf("the local session record %s is damaged (delete it and take the task over with lazy start --take-over): %w", p, err)
	}
	if s.TaskID != taskID || !validID(s.SessionID) || !filepath.IsAbs(s.Worktree) {
		return Session{}, fmt.Errorf("the local session record %s does not describe task %s (delete it and take the task over with lazy start --take-over)", p, taskID)
	}
	return s, nil
}

// Match returns the local session of taskID if it is the session
// sessionID, the one the task's record names; ErrNotOwned otherwise.
func (d Dir) Match(taskID, sessionID string) (Session, error) {
	s, err := d.Load(taskID)
	if err != nil {
		return Session{}, err
	}
	if s.SessionID != sessionID {
		return Session{}, ErrNotOwned
	}
	return s, nil
}

// SetAgentSession stores the agent CLI's latest session id for the next
// --resume, if the local session is still sessionID.
func (d Dir) SetAgentSession(taskID, sessionID, agentSession string) error {
	s, err := d.Match(taskID, sessionID)
	if err != nil || s.AgentSessionID == agentSession {
		return err
	}
	s.AgentSessionID = agentSession
	return d.Save(s)
}

// MarkPrepared records that the session's worktree was prepared
// (lazy.copyFiles, lazy.setup), if the local session is still sessionID.
func (d Dir) MarkPrepared(taskID, sessionID string) error {
	s, err := d.Match(taskID, sessionID)
	if err != nil || s.Prepared {
		return err
	}
	s.Prepared = true
	return d.Save(s)
}

// Forget drops the task's local session record: this machine no longer
// runs it (a runner that lost its claim to another), so a record of the
// new owner's may replace it. The worktree and branch stay where they
// are; only the claim to run the session goes.
func (d Dir) Forget(taskID string) error {
	p, err := d.path(taskID)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("forget the session of %s: %w", taskID, err)
	}
	return nil
}
