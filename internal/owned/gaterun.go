package owned

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

// GateRun is what this machine's lazy process saw of a gate run it made:
// written by lazy itself from the exit statuses it waited for, never
// from anything the commands or the task wrote. A gate run in a task's
// record is this machine's own only when a GateRun here carries its id
// and says the same of it; anything else in a record (which anyone who
// can push writes, host id included) is shown as remote and not
// verified here, and never stands in for a run.
type GateRun struct {
	ID     string `json:"id"`
	TaskID string `json:"task_id"`
	// Target is the branch the tree would land in, Base its tip the tree
	// was built on, Tree the tree that ran.
	Target string `json:"target"`
	Base   string `json:"base"`
	Tree   string `json:"tree"`
	// Commands are the commands as they ran: each one's exit status and
	// duration.
	Commands   []GateCommand `json:"commands"`
	Passed     bool          `json:"passed"`
	DurationMS int64         `json:"duration_ms"`
	At         time.Time     `json:"at"`
}

// GateCommand is one command of a GateRun.
type GateCommand struct {
	Cmd        string `json:"cmd"`
	Exit       int    `json:"exit"`
	DurationMS int64  `json:"duration_ms"`
}

// GateRuns is <git common dir>/lazy/gate/runs: one file per gate run
// this machine made.
type GateRuns string

// GateRunsFor returns the directory under lazyDir (<git common dir>/lazy).
func GateRunsFor(lazyDir string) GateRuns {
	return GateRuns(filepath.Join(lazyDir, "gate", "runs"))
}

// ErrNoGateRun means this machine made no gate run with that id.
var ErrNoGateRun = errors.New("this machine did not run that gate")

func (d GateRuns) path(id string) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("%q is not a gate run id", id)
	}
	return filepath.Join(string(d), id+".json"), nil
}

// Save records r atomically (mode 0600).
func (d GateRuns) Save(r GateRun) error {
	p, err := d.path(r.ID)
	if err != nil {
		return fmt.Errorf("record the gate run: %w", err)
	}
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("record the gate run: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("record the gate run: %w", err)
	}
	if err := renameio.WriteFile(p, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("record the gate run: %w", err)
	}
	return nil
}

// Load returns this machine's record of gate run id, or ErrNoGateRun.
func (d GateRuns) Load(id string) (GateRun, error) {
	p, err := d.path(id)
	if err != nil {
		return GateRun{}, ErrNoGateRun
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return GateRun{}, ErrNoGateRun
	}
	if err != nil {
		return GateRun{}, fmt.Errorf("read the local gate run record: %w", err)
	}
	var r GateRun
	if err := json.Unmarshal(b, &r); err != nil || r.ID != id {
		return GateRun{}, fmt.Errorf("the local gate run record %s is damaged", p)
	}
	return r, nil
}
