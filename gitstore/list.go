package gitstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
	"github.com/google/renameio/v2"

	"github.com/lazyorch/lazy/machine"
)

// Entry is one task as seen by List: the fields listings filter and sort
// on, its summary JSON, or why it could not be read. A corrupt record
// never hides the others.
type Entry struct {
	ID      string
	Commit  plumbing.Hash
	Status  machine.Status
	Parent  string
	Created int64 // unix seconds
	// JSON is the task's Summary, compact.
	JSON []byte
	Err  error
}

// Summary decodes the entry's summary.
func (e *Entry) Summary() (*Summary, error) {
	if e.Err != nil {
		return nil, e.Err
	}
	var s Summary
	if err := json.Unmarshal(e.JSON, &s); err != nil {
		return nil, fmt.Errorf("task %s: decode summary: %w", e.ID, err)
	}
	return &s, nil
}

// The cache is derived data keyed by each ref's commit hash: deleting it
// only costs one slower list. Its format is a header line, then per task
// one line "id commit status created parent len" followed by len bytes of
// summary JSON (or of the error text when status is "!") and a newline.
// It is parsed by hand because decoding 10,000 JSON records dominated the
// cost of listing them.
const (
	cacheFile   = "list-cache"
	cacheHeader = "lazy list cache v6\n" // v6: summaries carry usage
)

type cacheRec struct {
	commit  string
	status  string
	created int64
	parent  string
	body    []byte
	// transient marks an unreadable record whose error may not last (an
	// object a concurrent repack moved, a pack doctor can re-index): it
	// is never written to the cache, so the next list reads it again.
	transient bool
}

func readCache(path string) map[string]cacheRec {
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte(cacheHeader)) {
		return nil
	}
	b = b[len(cacheHeader):]
	out := make(map[string]cacheRec, bytes.Count(b, []byte{'\n'})/2)
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			return nil
		}
		f := strings.Fields(string(b[:nl]))
		if len(f) != 6 {
			return nil
		}
		n, err := strconv.Atoi(f[5])
		created, err2 := strconv.ParseInt(f[3], 10, 64)
		if err != nil || err2 != nil || n < 0 || nl+1+n+1 > len(b) || b[nl+1+n] != '\n' {
			return nil // damaged: rebuild from git
		}
		parent := f[4]
		if parent == "-" {
			parent = ""
		}
		out[f[0]] = cacheRec{commit: f[1], status: f[2], created: created, parent: parent, body: b[nl+1 : nl+1+n]}
		b = b[nl+1+n+1:]
	}
	return out
}

func writeCache(path string, recs map[string]cacheRec) error {
	var w bytes.Buffer
	w.WriteString(cacheHeader)
	for id, r := range recs {
		if r.transient {
			continue
		}
		parent := r.parent
		if parent == "" {
			parent = "-"
		}
		fmt.Fprintf(&w, "%s %s %s %d %s %d\n", id, r.commit, r.status, r.created, parent, len(r.body))
		w.Write(r.body)
		w.WriteByte('\n')
	}
	return renameio.WriteFile(path, w.Bytes(), 0o644)
}

// List returns every task, sorted by creation time then id. Summaries
// come from the cache; only records whose ref moved since the last list
// are read from git.
func (s *Store) List() ([]Entry, error) {
	refs, err := s.repo.ListRefs(TasksPrefix)
	if err != nil {
		return nil, err
	}
	path := s.repo.LazyDir("cache", cacheFile)
	cache := readCache(path)
	if _, err := os.Stat(s.repo.LazyDir()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("lazy directory: %w", err)
	}
	out := make([]Entry, 0, len(refs))
	dirty := len(cache) != len(refs)
	fresh := make(map[string]cacheRec, len(refs))
	var missIDs []string
	var missCommits []plumbing.Hash
	for ref, h := range refs {
		id := strings.TrimPrefix(ref, TasksPrefix)
		if !ValidID(id) {
			out = append(out, Entry{ID: id, Commit: h, Err: fmt.Errorf("ref %s does not name a task id", ref)})
			continue
		}
		if rec, ok := cache[id]; ok && rec.commit == h.String() {
			fresh[id] = rec
			continue
		}
		missIDs = append(missIDs, id)
		missCommits = append(missCommits, h)
	}
	if len(missIDs) > 0 {
		dirty = true
		var recs []cacheRec
		if len(missIDs) > batchThreshold {
			recs, err = s.batchSummaries(missIDs, missCommits)
		}
		if recs == nil || err != nil {
			recs = make([]cacheRec, len(missIDs))
			for i, id := range missIDs {
				recs[i] = s.summarize(id, missCommits[i])
			}
		}
		for i, id := range missIDs {
			fresh[id] = recs[i]
		}
	}
	for id, rec := range fresh {
		e := Entry{ID: id, Commit: plumbing.NewHash(rec.commit), Status: machine.Status(rec.status), Parent: rec.parent, Created: rec.created, JSON: rec.body}
		if rec.status == "!" {
			e.Status, e.JSON, e.Err = "", nil, errors.New(string(rec.body))
		}
		out = append(out, e)
	}
	if dirty {
		// Failing to write a cache only slows the next list down.
		if err := os.MkdirAll(s.repo.LazyDir("cache"), 0o755); err == nil {
			_ = writeCache(path, fresh)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Created != out[j].Created {
			return out[i].Created < out[j].Created
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (s *Store) summarize(id string, h plumbing.Hash) cacheRec {
	rec := cacheRec{commit: h.String()}
	t, err := s.readSummary(id, h)
	if err != nil {
		return corruptRec(h, err)
	}
	rec.status, rec.created, rec.parent, rec.body = string(t.Status), t.CreatedAt.Unix(), t.Parent, summaryJSON(t)
	return rec
}

// corruptRec is the cache record of a task that cannot be read: the error
// is cached with the commit, so an unreadable record (oversize, not
// JSON) costs one read per ref move, not one per list. A missing object
// or pack is not cached: it may be back on the next read.
func corruptRec(h plumbing.Hash, err error) cacheRec {
	transient := errors.Is(err, ErrMissingObject) || errors.Is(err, plumbing.ErrObjectNotFound) ||
		errors.Is(err, dotgit.ErrPackfileNotFound) || errors.Is(err, fs.ErrNotExist)
	return cacheRec{commit: h.String(), status: "!", body: []byte(strings.ReplaceAll(err.Error(), "\n", " ")), transient: transient}
}

// readSummary reads just task.json of a commit: three object reads.
func (s *Store) readSummary(id string, h plumbing.Hash) (*Task, error) {
	tree, corrupt, err := s.snapshotTree(id, h)
	if err != nil {
		return nil, err
	}
	var t Task
	for _, e := range tree.Entries {
		if e.Name != fileTask {
			continue
		}
		b, err := s.objs.readBlob(e.Hash, fileTask)
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
