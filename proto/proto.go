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
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/renameio/v2"
)

// Dir is one task's protocol directory.
type Dir string

// ForTask returns the protocol directory of a task under lazyDir
// (<git common dir>/lazy).
func ForTask(lazyDir, taskID string) Dir { return Dir(filepath.Join(lazyDir, "proto", taskID)) }

// Path returns a file in the directory. The agent's log and its index
// live in <lazy dir>/logs/<task id>/ instead: the protocol directory goes
// when the task finishes, and the log must outlive accept, reject and
// reopen.
func (d Dir) Path(name string) string {
	if name == LogFile || name == LogIndexFile {
		return filepath.Join(d.LogDir(), name)
	}
	return filepath.Join(string(d), name)
}

// LazyDir is the lazy directory the task's protocol directory is in
// (ForTask's lazyDir).
func (d Dir) LazyDir() string { return filepath.Dir(filepath.Dir(string(d))) }

// LogDir is where the task's agent log is kept.
func (d Dir) LogDir() string {
	return filepath.Join(d.LazyDir(), "logs", filepath.Base(string(d)))
}

// OpenLog opens the agent log for appending, creating its directory.
// A log an older lazy kept in the protocol directory moves there first,
// so a task that ran before keeps its history.
func (d Dir) OpenLog() (*os.File, error) {
	if err := os.MkdirAll(d.LogDir(), 0o755); err != nil {
		return nil, fmt.Errorf("agent log: %w", err)
	}
	for _, name := range []string{LogFile, LogIndexFile} {
		old := filepath.Join(string(d), name)
		if _, err := os.Stat(d.Path(name)); errors.Is(err, fs.ErrNotExist) {
			_ = os.Rename(old, d.Path(name))
		}
	}
	return os.OpenFile(d.Path(LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// File names.
const (
	CommandFile  = "command.json"
	StatusFile   = "status.json"
	ResponseFile = "response.json"
	LogFile      = "agent.log"
	// LogIndexFile has one line per agent launch: "seq kind offset time",
	// where offset is the size of agent.log when it started, so lazy logs
	// can show one turn without marker lines in the log itself.
	LogIndexFile = "agent.log.idx"
	// SupervisorLogFile is the supervisor's own stderr.
	SupervisorLogFile = "supervisor.log"
	// SupervisorExitFile holds the supervisor's exit status, written by
	// the shell that launched it (so a SIGKILL is recorded too).
	SupervisorExitFile = "supervisor.exit"
	// TurnEnv is the environment variable every agent process of a turn
	// carries (value: the task id), inherited by whatever it starts: what
	// lets lazy find and end an agent its dead supervisor left behind.
	TurnEnv = "LAZY_TURN_TASK"
	// TurnRepoEnv is the turn marker's scope: every agent process of a
	// turn carries it too (value: the repository's lazy directory, see
	// TurnScope). Two clones of one repository on one machine share task
	// ids, and neither may end the other's agents as its own leftovers.
	TurnRepoEnv = "LAZY_TURN_REPO"
	// PairingFile names the process a human pairs through.
	PairingFile = "pairing.json"
	// WaitingFile lists the subtasks the task's agent waits on, and
	// ProgressFile holds its latest progress line; both are written by
	// the daemon for MCP calls and carry its pid.
	WaitingFile  = "waiting.json"
	ProgressFile = "progress.json"
)

// Pairing is written by lazy pair before the task enters pairing, so a
// pairing whose process is gone can be told from a live one.
type Pairing struct {
	Session   string    `json:"session"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
}

// Turn identifies the turn a file belongs to.
type Turn struct {
	TaskID  string `json:"task_id"`
	Session string `json:"session"`
	Seq     int    `json:"turn"` // the human turn that started it
}

// Command tells the supervisor what to run.
type Command struct {
	Turn
	Kind           string   `json:"kind"` // start, unblock, ask, resume
	Agent          string   `json:"agent"`
	Exec           []string `json:"exec,omitempty"`      // the exec agent's command
	ResumeID       string   `json:"resume_id,omitempty"` // the agent's own session id to resume
	PermissionMode string   `json:"permission_mode,omitempty"`
	// Model is the model the session asked the agent for ("": its default).
	Model  string `json:"model,omitempty"`
	Prompt string `json:"prompt"`
	// FreshPrompt, on a turn that continues a session, is the prompt of
	// a new agent session for when the old one cannot be resumed (none
	// recorded, or the CLI refuses the id): the task's prompt, why, and
	// Prompt. Empty: the turn runs Prompt whatever happens.
	FreshPrompt string            `json:"fresh_prompt,omitempty"`
	Worktree    string            `json:"worktree"`
	BaseSHA     string            `json:"base_sha,omitempty"`  // empty: HEAD after the upstream merge
	SyncFrom    string            `json:"sync_from,omitempty"` // branch to merge before the agent runs
	Env         map[string]string `json:"env,omitempty"`
	// AllowedPaths is the task's file policy; Approved are files a human
	// already approved (sticky), never reported again.
	AllowedPaths []string `json:"allowed_paths,omitempty"`
	Approved     []string `json:"approved,omitempty"`
	// Sandbox, when set, runs the agent under bubblewrap (package
	// sandbox); an ask always runs it with the worktree read-only.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	// Policy is the repository's local turn configuration; Prepare, on
	// the first turn in a new worktree, what to do before the agent runs.
	Policy  Policy   `json:"policy"`
	Prepare *Prepare `json:"prepare,omitempty"`
	// MaxBudgetUSD, when not 0, is what the turn may still spend before
	// the tightest of its budgets (task, parent, day) is reached.
	MaxBudgetUSD float64 `json:"max_budget_usd,omitempty"`
	// MCP is the agent's MCP server, filled in by the supervisor itself
	// (with the session token in Env); never read from or written to disk.
	MCP     *MCPServer `json:"-"`
	Timing  Timing     `json:"timing"`
	Written time.Time  `json:"written_at"`
}

// Sandbox is the confinement a local decision (lazy.sandbox, or start
// --sandbox) chose for a session's turns.
type Sandbox struct {
	Network string   `json:"network,omitempty"` // on (default), off, or allow
	Allow   []string `json:"allow,omitempty"`   // with allow: the hosts the agent may reach (host or *.domain)
	Hidden  []string `json:"hidden,omitempty"`  // more secret paths (lazy.sandbox.hide)
	Expose  []string `json:"expose,omitempty"`  // more read-only paths (lazy.sandbox.expose)
}

// MCPServer is the stdio command of lazy's MCP proxy.
type MCPServer struct {
	Command string
	Args    []string
}

// Status is what a running supervisor reports.
type Status struct {
	Turn
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
	Phase     string    `json:"phase"`
	AgentPID  int       `json:"agent_pid,omitempty"`
	// BaseSHA is where the turn's work starts (HEAD after the upstream
	// merge), so a reconciler that finds the supervisor dead can still
	// report the commits the turn made.
	BaseSHA      string    `json:"base_sha,omitempty"`
	LastProgress time.Time `json:"last_progress,omitempty"`
	Progress     string    `json:"progress,omitempty"`
	// Retry state while the supervisor waits to retry a failed attempt.
	Attempt            int    `json:"attempt,omitempty"`
	RetryFailureClass  string `json:"retry_failure_class,omitempty"`
	RetryFailureReason string `json:"retry_failure_reason,omitempty"`
	RetryNextDelayMS   int64  `json:"retry_next_delay_ms,omitempty"`
	// AgentRetrying says the agent CLI itself is retrying its API (phase
	// stays "agent"); the retry fields above then carry its class and
	// reason, and Attempt its own count.
	AgentRetrying bool `json:"agent_retrying,omitempty"`
	// ReadOnly, during an ask, is the worktree as it was before the agent
	// ran: the supervisor puts it back when the ask ends, and a reconciler
	// that finds the supervisor dead does it instead.
	ReadOnly *TreeState `json:"read_only,omitempty"`
}

// TreeState is a worktree's HEAD, index and files as object ids (the
// shape of worktree.State, which converts to and from it).
type TreeState struct {
	Ref   string `json:"ref,omitempty"`
	Head  string `json:"head"`
	Index string `json:"index"`
	Files string `json:"files"`
}

// KeptRef is where what a read-only turn (turn seq of task id) wrote is
// kept when it is undone: outside refs/lazy/, so it is never pushed.
func KeptRef(id string, seq int) string {
	return "refs/lazy-kept/" + id + "/ask-" + strconv.Itoa(seq)
}

// Response statuses.
const (
	Completed = "completed"
	Errored   = "error"
)

// Response is the supervisor's final word on a turn.
type Response struct {
	Turn
	Status         string   `json:"status"`
	Phase          string   `json:"phase"`
	Result         string   `json:"result"`
	AgentSessionID string   `json:"agent_session_id,omitempty"`
	Commits        []string `json:"commits"`
	ChangedFiles   []string `json:"changed_files"`
	// Violations are changed files outside the allowed paths; BaseSHA is
	// the pre-turn commit a revert restores them from.
	Violations    []string `json:"violations,omitempty"`
	BaseSHA       string   `json:"base_sha,omitempty"`
	ExitCode      int      `json:"exit_code"`
	Error         string   `json:"error,omitempty"`
	StderrTail    string   `json:"stderr_tail,omitempty"`
	FailureClass  string   `json:"failure_class,omitempty"`
	FailureReason string   `json:"failure_reason,omitempty"`
	Attempts      int      `json:"failure_attempts,omitempty"`
	// ResetAt is when the agent said its limit lifts (zero if unsaid).
	ResetAt time.Time `json:"reset_at,omitempty"`
	// PushBack, when the supervisor pushed back on uncommitted changes,
	// is its prompt and what the agent answered before it; Result is then
	// the answer to the push-back.
	PushBack *PushBack `json:"push_back,omitempty"`
	// Resume, on a turn that continued a session, says whether the
	// agent's own session was resumed or a new one started, and why.
	Resume *Resume `json:"resume,omitempty"`
	// Watchdog says which guard fired, if one did.
	Watchdog *Watchdog `json:"watchdog,omitempty"`
	// Usage is what the agent CLI reported the turn cost, summed over
	// its attempts (nil when it reported nothing).
	Usage *Usage `json:"usage,omitempty"`
	// Tools counts the tool calls of the turn that returned and those
	// that failed, summed over its attempts (nil when it made none).
	Tools      *Tools    `json:"tools,omitempty"`
	FinishedAt time.Time `json:"finished_at"`
}

// Tools is how many tool calls a turn made that returned, and how many
// of them failed.
type Tools struct {
	Calls  int `json:"calls"`
	Failed int `json:"failed"`
}

// Plus adds o to t; nil reads as zero, and a turn without calls is nil.
func (t *Tools) Plus(o *Tools) *Tools {
	var s Tools
	for _, x := range []*Tools{t, o} {
		if x != nil {
			s.Calls += x.Calls
			s.Failed += x.Failed
		}
	}
	if s.Calls == 0 {
		return nil
	}
	return &s
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

// MaxFile bounds what Read loads. The largest file lazy writes is a
// command whose prompt carries a few texts of up to 16 MiB each, which
// JSON may escape to six bytes a character; anything past the bound was
// not written by lazy, and reading it would only exhaust memory.
const MaxFile = 256 << 20

// Read loads name into v. A missing file is ErrAbsent; a file over
// MaxFile, or one that is not the JSON lazy wrote, is an error naming it.
func (d Dir) Read(name string, v any) error {
	f, err := os.Open(d.Path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return ErrAbsent
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", d.Path(name), err)
	}
	defer func() { _ = f.Close() }()
	tooBig := func() error {
		return fmt.Errorf("%s is over %d MiB, more than lazy ever writes there, so lazy did not write it: move it away", d.Path(name), MaxFile>>20)
	}
	// The size first, so an oversized file is refused unread; the limit
	// still holds for one that grows while it is read.
	if fi, err := f.Stat(); err == nil && fi.Size() > MaxFile {
		return tooBig()
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", d.Path(name), err)
	}
	if len(b) > MaxFile {
		return tooBig()
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

// Resume is how a turn met the agent's own session: Resumed (the id it
// resumed), or a new session (NewSession) because Reason.
type Resume struct {
	Resumed    string `json:"resumed,omitempty"`
	NewSession string `json:"new_session,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// PushBack is the supervisor's one push-back of a turn.
type PushBack struct {
	Prompt      string    `json:"prompt"`
	At          time.Time `json:"at"`
	FirstResult string    `json:"first_result"` // the agent's answer before the push-back
}

// Usage is a turn's cost and tokens, as the agent CLI reported them.
type Usage struct {
	CostUSD           float64 `json:"cost_usd,omitempty"`
	InputTokens       int64   `json:"input_tokens,omitempty"`
	CachedInputTokens int64   `json:"cached_input_tokens,omitempty"`
	OutputTokens      int64   `json:"output_tokens,omitempty"`
	// Model is the model the CLI reported (the last attempt's).
	Model string `json:"model,omitempty"`
}

// Plus adds o to u; nil reads as zero, and a zero sum is nil.
func (u *Usage) Plus(o *Usage) *Usage {
	var s Usage
	for _, x := range []*Usage{u, o} {
		if x != nil {
			s.CostUSD += x.CostUSD
			s.InputTokens += x.InputTokens
			s.CachedInputTokens += x.CachedInputTokens
			s.OutputTokens += x.OutputTokens
			if x.Model != "" {
				s.Model = x.Model
			}
		}
	}
	if s == (Usage{}) {
		return nil
	}
	return &s
}

// Watchdog records a no-progress kill.
type Watchdog struct {
	Guard      string        `json:"guard"` // watchdog_output_timeout
	Limit      time.Duration `json:"limit_ns"`
	Escalated  bool          `json:"escalated_to_sigkill"`
	Relaunched int           `json:"relaunched"` // in-turn relaunches before this kill
	AfterWork  bool          `json:"after_work"`
	// Since is when the condition the guard bounds began (the
	// unreachable_timeout guard: the agent's first retry notice).
	Since time.Time `json:"since,omitempty"`
}

// Timing carries the supervisor's clocks, so tests can run them fast.
type Timing struct {
	// WatchdogTimeout is how long the agent may go without progress.
	WatchdogTimeout time.Duration `json:"watchdog_timeout_ns"`
	// KillGrace is how long SIGTERM gets before SIGKILL.
	KillGrace time.Duration `json:"kill_grace_ns"`
	// RetryScale multiplies every retry delay (1 in production).
	RetryScale float64 `json:"retry_scale"`
	// UnreachableTimeout bounds, in wall-clock time, how long a turn
	// keeps retrying an agent whose API cannot be reached, counting the
	// CLI's own retries (lazy.unreachableTimeout).
	UnreachableTimeout time.Duration `json:"unreachable_timeout_ns,omitempty"`
}

// What a turn does with changes its agent left uncommitted
// (lazy.uncommitted).
const (
	// UncommittedCommit: lazy commits them on the agent's behalf.
	UncommittedCommit = "commit"
	// UncommittedPushBack: the agent is asked once, in the same
	// conversation, to commit or discard them; what is still left is
	// then committed on its behalf.
	UncommittedPushBack = "push-back"
	// UncommittedKeep: they stay in the worktree for a human.
	UncommittedKeep = "keep"
)

// Policy is the local configuration (git config) every turn of the
// repository gets, read by whatever writes the command: never from a
// task record.
type Policy struct {
	// Allow is lazy.agent.allow: command prefixes a work turn may run
	// without the sandbox, beyond agent.DefaultAllow.
	Allow []string `json:"allow,omitempty"`
	// Uncommitted is lazy.uncommitted ("" reads as UncommittedCommit).
	Uncommitted string `json:"uncommitted,omitempty"`
	// Setup is lazy.setup, a shell command run in a new worktree before
	// its first turn; CopyFiles is lazy.copyFiles, untracked files of the
	// main checkout (globs relative to its root) copied there first.
	Setup     string   `json:"setup,omitempty"`
	CopyFiles []string `json:"copy_files,omitempty"`
}

// Prepare is the one-time preparation of a new worktree, done by the
// supervisor before the agent's first turn there.
type Prepare struct {
	// From is the main checkout CopyFiles are copied from.
	From      string   `json:"from"`
	CopyFiles []string `json:"copy_files,omitempty"`
	Setup     string   `json:"setup,omitempty"`
}

// Defaults for Timing fields left zero.
const (
	DefaultWatchdogTimeout = 30 * time.Minute
	DefaultKillGrace       = 10 * time.Second
	// DefaultUnreachableTimeout is lazy.unreachableTimeout's default.
	DefaultUnreachableTimeout = 20 * time.Minute
)

// WithDefaults fills zero fields.
func (t Timing) WithDefaults() Timing {
	if t.WatchdogTimeout <= 0 {
		t.WatchdogTimeout = DefaultWatchdogTimeout
	}
	if t.KillGrace <= 0 {
		t.KillGrace = DefaultKillGrace
	}
	if t.RetryScale <= 0 {
		t.RetryScale = 1
	}
	if t.UnreachableTimeout <= 0 {
		t.UnreachableTimeout = DefaultUnreachableTimeout
	}
	return t
}

// LogTailLines is how many lines of agent output diagnostics keep
// (spec: "last 50 lines").
const LogTailLines = 50

// Tail returns the last LogTailLines lines of s, with CRLF (as a pty
// writes it) normalized to LF.
func Tail(s string) string {
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n"), "\n")
	if len(lines) > LogTailLines {
		lines = lines[len(lines)-LogTailLines:]
	}
	return strings.Join(lines, "\n")
}

// LogMark is one agent launch in LogIndexFile.
type LogMark struct {
	Seq    int
	Kind   string
	Offset int64
	At     time.Time
}

// MarkLog records that an agent launch of turn seq starts at offset of
// agent.log. Appends of one short line are atomic enough: a torn line is
// skipped by LogMarks, and ended first so that this one reads.
func (d Dir) MarkLog(seq int, kind string, offset int64, at time.Time) error {
	f, err := os.OpenFile(d.Path(LogIndexFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err = endLine(f, d.Path(LogIndexFile)); err == nil {
		_, err = fmt.Fprintf(f, "%d %s %d %s\n", seq, kind, offset, at.UTC().Format(time.RFC3339))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// LogMarks reads LogIndexFile, oldest first; a missing file is no marks.
func (d Dir) LogMarks() []LogMark {
	b, err := os.ReadFile(d.Path(LogIndexFile))
	if err != nil {
		return nil
	}
	var out []LogMark
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		seq, err1 := strconv.Atoi(f[0])
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		at, err3 := time.Parse(time.RFC3339, f[3])
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, LogMark{Seq: seq, Kind: f[1], Offset: off, At: at})
	}
	return out
}

// SupervisorLock is the file a task's supervisor holds an exclusive
// flock on for its whole life. It lives with the other locks, not in the
// protocol directory, which an accept removes: a lock file that vanished
// under its holder would read as free.
func SupervisorLock(lazyDir, taskID string) string {
	return filepath.Join(lazyDir, "locks", "supervisor-"+taskID+".lock")
}

// TurnMarker is the environment entry every agent process of a turn of
// task id carries.
func TurnMarker(id string) string { return TurnEnv + "=" + id }

// TurnScope is the environment entry that scopes the turn marker to the
// repository whose lazy directory is lazyDir (see TurnRepoEnv). The path
// is resolved, so a repository reached through a symlink is the same.
func TurnScope(lazyDir string) string {
	if real, err := filepath.EvalSymlinks(lazyDir); err == nil {
		lazyDir = real
	}
	return TurnRepoEnv + "=" + filepath.Clean(lazyDir)
}

// WithoutTurnEnv returns env without the turn marker: a lazy process an
// agent starts (a daemon, another task's supervisor) is not part of that
// agent's turn and must not be ended with it.
func WithoutTurnEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, TurnEnv+"=") && !strings.HasPrefix(kv, TurnRepoEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}
