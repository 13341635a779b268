package gitstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/renameio/v2"
)

// Entry is one task as seen by List: its summary, or why it could not be
// read. A corrupt record never hides the others.
type Entry struct {
	ID     string
	Commit plumbing.Hash
	Task   *Task
	Err    error
}

// cacheFile is derived data: deleting it only costs one slower list.
const cacheFile = "list-cache.v1.json"

type cacheRecord struct {
	Commit string `json:"c"`
	Task   *Task  `json:"t,omitempty"`
	Err    string `json:"e,omitempty"`
}

// List returns every task, sorted by creation time then id. Task
// summaries come from a cache keyed by each ref's commit hash; only
// records whose ref moved since the last list are read from git.
func (s *Store) List() ([]Entry, error) {
	refs, err := s.repo.ListRefs(TasksPrefix)
	if err != nil {
		return nil, err
	}
	path := s.repo.LazyDir("cache", cacheFile)
	cache := map[string]cacheRecord{}
	if b, err := os.ReadFile(path); err == nil {
		if json.Unmarshal(b, &cache) != nil {
			cache = map[string]cacheRecord{} // derived data: rebuild
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read list cache: %w", err)
	}
	out := make([]Entry, 0, len(refs))
	dirty := len(cache) != len(refs)
	fresh := make(map[string]cacheRecord, len(refs))
	for ref, h := range refs {
		id := strings.TrimPrefix(ref, TasksPrefix)
		if !ValidID(id) {
			out = append(out, Entry{ID: id, Commit: h, Err: fmt.Errorf("ref %s does not name a task id", ref)})
			continue
		}
		rec, ok := cache[id]
		if !ok || rec.Commit != h.String() {
			dirty = true
			rec = cacheRecord{Commit: h.String()}
			t, err := s.readSummary(id, h)
			if err != nil {
				rec.Err = err.Error()
			} else {
				rec.Task = t
			}
		}
		fresh[id] = rec
		e := Entry{ID: id, Commit: h, Task: rec.Task}
		if rec.Err != "" {
			e.Task = nil
			e.Err = errors.New(rec.Err)
		}
		out = append(out, e)
	}
	if dirty {
		// Failing to write a cache only slows the next list down.
		if b, err := json.Marshal(fresh); err == nil {
			if err := os.MkdirAll(s.repo.LazyDir("cache"), 0o755); err == nil {
				_ = renameio.WriteFile(path, b, 0o644)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Task != nil && b.Task != nil && !a.Task.CreatedAt.Equal(b.Task.CreatedAt) {
			return a.Task.CreatedAt.Before(b.Task.CreatedAt)
		}
		return a.ID < b.ID
	})
	return out, nil
}

// readSummary reads just task.json of a commit: three object reads.
func (s *Store) readSummary(id string, h plumbing.Hash) (*Task, error) {
	corrupt := func(err error) error { return &CorruptError{ID: id, Commit: h, Err: err} }
	c, err := s.objs.readCommit(h)
	if err != nil {
		return nil, corrupt(err)
	}
	tree, err := s.objs.readTree(c.TreeHash)
	if err != nil {
		return nil, corrupt(err)
	}
	var t Task
	for _, e := range tree.Entries {
		if e.Name != fileTask {
			continue
		}
		b, err := s.objs.readBlob(e.Hash)
		if err != nil {
			return nil, corrupt(err)
		}
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, corrupt(fmt.Errorf("%s: %w", fileTask, err))
		}
		if err := checkTask(&t, id); err != nil {
			return nil, corrupt(err)
		}
		return &t, nil
	}
	return nil, corrupt(fmt.Errorf("%s is missing", fileTask))
}
