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
// announced in each slot. Since is when the state began; a task first
// seen with a record older than that is taken as it is, unannounced, so
// turning notifications on does not announce every old task.
type State struct {
	Since time.Time                    `json:"since"`
	Tasks map[string]map[string]string `json:"tasks"`
}

// LoadState reads the state in dir, or begins one at now.
func LoadState(dir string, now time.Time) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return &State{Since: now.UTC().Truncate(time.Second), Tasks: map[string]map[string]string{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the notification state: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil || s.Since.IsZero() {
		// A damaged state begins again: at worst nothing is announced
		// for what changed before now, never everything twice.
		return &State{Since: now.UTC().Truncate(time.Second), Tasks: map[string]map[string]string{}}, nil
	}
	if s.Tasks == nil {
		s.Tasks = map[string]map[string]string{}
	}
	return &s, nil
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
