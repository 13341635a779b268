package notify

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

// StateFile is the dedup state under the notify directory
// (.git/lazy/notify): host-local, like the daemon that writes it.
const StateFile = "state.json"

// State is what this host announced: per task, the key of the last state
// announced in each slot. Since is when the state began: the baseline,
// taken when notifications were first seen on (see Notifier.Pass); a
// task first seen later whose record is older than that (fetched from
// another machine) is taken as it is, unannounced.
type State struct {
	// Version is the format of the keys (StateVersion); a state of
	// another version is begun again, as a baseline.
	Version int                          `json:"version"`
	Since   time.Time                    `json:"since"`
	Tasks   map[string]map[string]string `json:"tasks"`
}

// StateVersion is the format of State's keys. 2: a park is keyed by the
// session's turn that ended (1, unversioned, counted every turn, so an
// ask was a new park).
const StateVersion = 2

// LoadState reads the state in dir. begun is true when there was none to
// read (none yet, damaged, or of another version): the caller takes a
// baseline, at now, before it announces anything.
func LoadState(dir string, now time.Time) (st *State, begun bool, err error) {
	fresh := &State{Version: StateVersion, Since: now.UTC().Truncate(time.Second), Tasks: map[string]map[string]string{}}
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return fresh, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read the notification state: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil || s.Since.IsZero() || s.Version != StateVersion {
		// A damaged or older state begins again as a baseline: at worst
		// nothing is announced for what changed before now, never
		// everything twice.
		return fresh, true, nil
	}
	if s.Tasks == nil {
		s.Tasks = map[string]map[string]string{}
	}
	return &s, false, nil
}

// Forget removes the state in dir: notifications are off, and when they
// are turned on again what happened meanwhile is taken as it is.
func Forget(dir string) error {
	err := os.Remove(filepath.Join(dir, StateFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("forget the notification state: %w", err)
	}
	return nil
}

// Save writes the state atomically (0600).
func (s *State) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := renameio.WriteFile(filepath.Join(dir, StateFile), b, 0o600); err != nil {
		return fmt.Errorf("write the notification state: %w", err)
	}
	return nil
}
