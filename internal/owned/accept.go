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
)

// Accept is what this machine decided when it began a local accept of a
// task: written before the task's record says merging, so that a merging
// record is this machine's own exactly when an Accept here carries its
// accept id. A record written elsewhere (anyone with push access can name
// this host, whose id is public) never makes this machine take a lock,
// touch a checkout or apply a stash.
type Accept struct {
	TaskID string `json:"task_id"`
	// ID is the accept's own random id, also in the task's accept record.
	ID string `json:"id"`
	// From is the status before the accept; Into and IntoSHA the branch
	// merged into and its tip before the merge.
	From    string `json:"from"`
	Into    string `json:"into"`
	IntoSHA string `json:"into_sha"`
	// DestDirty says the destination checkout had uncommitted changes, so
	// the accept stashed them.
	DestDirty bool      `json:"dest_dirty,omitempty"`
	StartedAt time.Time `json:"started_at"`
	// Cleanup is what the accept still has to remove once the merge is
	// recorded: written before the task's record says complete and
	// removed with the record once the cleanup is done, so an accept
	// killed during its cleanup leaves it, and lazy doctor finishes it.
	Cleanup *Cleanup `json:"cleanup,omitempty"`
}

// Cleanup is the worktree and branch an accepted task's session made,
// which its accept removes once the merge is recorded.
type Cleanup struct {
	Worktree string `json:"worktree,omitempty"`
	Branch   string `json:"branch,omitempty"`
	// Tip is the branch's tip when the merge was recorded: git branch
	// <Branch> <Tip> recreates it.
	Tip string `json:"tip,omitempty"`
	// Commit is the squash commit that landed the branch.
	Commit string    `json:"commit,omitempty"`
	At     time.Time `json:"at"`
}

// ErrNoAccept means this machine began no accept of the task (or none
// with the id asked about).
var ErrNoAccept = errors.New("this machine did not start that accept")

// Accepts is <git common dir>/lazy/accepts: one file per task whose
// local accept has begun and not yet ended.
type Accepts string

// AcceptsFor returns the directory under lazyDir (<git common dir>/lazy).
func AcceptsFor(lazyDir string) Accepts { return Accepts(filepath.Join(lazyDir, "accepts")) }

func (d Accepts) path(taskID string) (string, error) {
	if !validID(taskID) {
		return "", fmt.Errorf("%q is not a task id", taskID)
	}
	return filepath.Join(string(d), taskID+".json"), nil
}

// Save records a atomically, replacing the task's previous accept.
func (d Accepts) Save(a Accept) error {
	if !validID(a.ID) {
		return fmt.Errorf("record the accept: %q is not an accept id", a.ID)
	}
	p, err := d.path(a.TaskID)
	if err != nil {
		return fmt.Errorf("record the accept: %w", err)
	}
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("record the accept: %w", err)
	}
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fmt.Errorf("record the accept: %w", err)
	}
	if err := renameio.WriteFile(p, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("record the accept: %w", err)
	}
	return nil
}

// Match returns this machine's accept of taskID if it is the accept id;
// ErrNoAccept otherwise (no accept began here, or another one did).
func (d Accepts) Match(taskID, id string) (Accept, error) {
	p, err := d.path(taskID)
	if err != nil || !validID(id) {
		return Accept{}, ErrNoAccept
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Accept{}, ErrNoAccept
	}
	if err != nil {
		return Accept{}, fmt.Errorf("read the local accept record: %w", err)
	}
	var a Accept
	if err := json.Unmarshal(b, &a); err != nil {
		return Accept{}, fmt.Errorf("the local accept record %s is damaged; lazy leaves that accept alone: %w", p, err)
	}
	if a.TaskID != taskID || a.ID != id {
		return Accept{}, ErrNoAccept
	}
	return a, nil
}

// All lists the accept records here, in task id order; a damaged one
// is left out.
func (d Accepts) All() ([]Accept, error) {
	ents, err := os.ReadDir(string(d))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the local accept records: %w", err)
	}
	var out []Accept
	for _, ent := range ents {
		id, ok := strings.CutSuffix(ent.Name(), ".json")
		if !ok || !validID(id) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(string(d), ent.Name()))
		var a Accept
		if err != nil || json.Unmarshal(b, &a) != nil || a.TaskID != id || !validID(a.ID) {
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

// Forget removes the task's accept record if it is still accept id: the
// accept ended (finished, aborted or recovered).
func (d Accepts) Forget(taskID, id string) {
	if _, err := d.Match(taskID, id); err != nil {
		return
	}
	if p, err := d.path(taskID); err == nil {
		_ = os.Remove(p)
	}
}
