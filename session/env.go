package session

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
)

// Limits on user text. Titles are table cells; long texts are blobs and
// may be large, but not unboundedly so: a 16 MiB prompt is already far
// past what any agent accepts.
const (
	MaxTitle = 200
	MaxText  = task.MaxText
)

// Env is what every operation needs: the task store, where the
// repository keeps its host-local files, who is asking, and how turns
// are run. The capabilities hold one each; it is built once, where a
// process wires them (the CLI, lazy mcp, the daemon).
type Env struct {
	// Store holds the task records.
	Store task.Store
	// Repo is where the repository is: lazy's host-local directory
	// (locks, protocol files, this machine's session records) and git
	// config.
	Repo  *gitrepo.Location
	Actor machine.Actor
	// RepoDir is the main checkout, where branch lookups run ("" means
	// the git directory).
	RepoDir string
	// CallerTask is the task whose agent is asking (actor agent), for the
	// spec's identity exemption: a parent's own agent may accept its
	// subtasks while the parent is working.
	CallerTask string
	// Timing and Policy are passed to every turn's supervisor.
	Timing proto.Timing
	Policy proto.Policy
	// TurnConfigErr is a bad turn setting met while Timing and Policy
	// were read (lazy.watchdogTimeout = banana): every operation that
	// would launch a turn refuses with it before recording anything, and
	// the others, which do not use those settings, run as usual.
	TurnConfigErr error
	// Launch starts the detached supervisor of a task's turn. It is set
	// once, where the Env is built, by the process that can start
	// supervisors (the CLI, lazy mcp, the daemon). nil: operations that
	// would launch a turn refuse with ErrNoLauncher before recording
	// anything, and the reconciler does not auto-resume.
	Launch Launcher
}

// LockTimeout bounds the wait for another command working on the same task.
const LockTimeout = 30 * time.Second

// ActorFromEnv returns the CLI's actor: human, unless LAZY_ACTOR names
// another (tests and wrappers use it, as the spec describes).
func ActorFromEnv() (machine.Actor, error) {
	v := os.Getenv("LAZY_ACTOR")
	if v == "" {
		return machine.Human, nil
	}
	a, err := machine.ParseActor(v)
	if err != nil {
		return "", fmt.Errorf("LAZY_ACTOR: %w", err)
	}
	if a == machine.System {
		// system may take the reconciler's system-only transitions; a
		// label from the environment must never widen what a command may do.
		return "", errors.New("LAZY_ACTOR=system is reserved for the daemon's reconciler; use human, builder, agent or supervisor to label a command")
	}
	return a, nil
}

// RequiredProse sanitizes a prose text that must not be empty and bounds
// its size; missing is the error for an empty one.
func RequiredProse(what, text, missing string) (string, error) {
	text = sanitize.Prose(text)
	if strings.TrimSpace(text) == "" {
		return "", errors.New(missing)
	}
	return text, CheckText(what, text)
}

// CleanReason sanitizes and bounds a reason text.
func CleanReason(reason string) (string, error) {
	reason = strings.TrimSpace(sanitize.Prose(reason))
	return reason, CheckText("the reason", reason)
}

// CheckText enforces the size limit on a long text after sanitizing.
func CheckText(what, s string) error {
	if len(s) > MaxText {
		return fmt.Errorf("%s is %d bytes; lazy stores at most %d MiB per text (nothing was saved)", what, len(s), MaxText>>20)
	}
	return nil
}

// TruncateRunes is s cut to its first n runes.
func TruncateRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// Clip is s trimmed and cut to n runes, the cut said.
func Clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if cut := TruncateRunes(s, n); cut != s {
		return cut + "… (cut)"
	}
	return s
}

// ErrAlreadyAccepted is returned by an accept of a task another accept
// finished first.
var ErrAlreadyAccepted = errors.New("already accepted")

// OneLine is s on one line (runs of white space made one space), cut to
// 200 bytes: a reason as a record or a summary quotes it.
func OneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// AcceptTrailer is the trailer line lazy accept puts in a squash commit
// and lazy submit in a pull request's description.
func AcceptTrailer(taskID string) string { return "Lazy-Task: " + taskID }
