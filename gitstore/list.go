package gitstore

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
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
	// Updated is the summary's updated_at, as printed: listings order by
	// it without decoding JSON.
	Updated string
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
// one line "id commit status created updated parent len" followed by len
// bytes of summary JSON (or of the error text when status is "!") and a
// newline. It is parsed by hand because decoding 10,000 JSON records
// dominated the cost of listing them; updated is there so listings can be
// ordered without decoding any summary.
const (
	cacheFile   = "list-cache"
	cacheHeader = "lazy list cache v7\n" // v7: lines carry updated_at
)

type cacheRec struct {
	commit  plumbing.Hash
	status  string
	created int64
	updated string // the summary's updated_at, as printed
	parent  string
	body    []byte
	// transient marks an unreadable record whose error may not last (an
	// object a concurrent repack moved, a pack doctor can re-index): it
	// is never written to the cache, so the next list reads it again.
	transient bool
}

// cached is one task's cache record with its id.
type cached struct {
	id string
	cacheRec
}

// entry is the listing entry of a cache record.
func (c *cached) entry() Entry {
	e := Entry{ID: c.id, Commit: c.commit, Status: machine.Status(c.status), Parent: c.parent, Created: c.created, Updated: c.updated, JSON: c.body}
	if c.status == "!" {
		e.Status, e.JSON, e.Err = "", nil, errors.New(string(c.body))
	}
	return e
}

// readCache parses the cache file; any damage makes it return nil, and
// List rebuilds the cache from git.
func readCache(path string) map[string]cacheRec {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return parseCache(b)
}

// knownStatus interns the statuses of cache lines, which are few, so a
// 10,000-line cache does not allocate 10,000 copies of "backlog".
func knownStatus(b []byte) string {
	for _, st := range machine.Statuses() {
		if string(b) == string(st) {
			return string(st)
		}
	}
	return string(b)
}

// parseCache parses cache bytes. The records' bodies alias b.
func parseCache(b []byte) map[string]cacheRec {
	if !bytes.HasPrefix(b, []byte(cacheHeader)) {
		return nil
	}
	b = b[len(cacheHeader):]
	out := make(map[string]cacheRec, bytes.Count(b, []byte{'\n'})/2)
	var f [7][]byte
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			return nil
		}
		line := b[:nl]
		for i := range f {
			sp := bytes.IndexByte(line, ' ')
			if i == len(f)-1 {
				sp = len(line)
			}
			if sp <= 0 {
				return nil
			}
			f[i], line = line[:sp], line[min(sp+1, len(line)):]
		}
		var rec cacheRec
		if bytes.IndexByte(f[6], ' ') >= 0 || len(f[1]) != 2*len(rec.commit) {
			return nil
		}
		if _, err := hex.Decode(rec.commit[:], f[1]); err != nil {
			return nil
		}
		n, err := strconv.Atoi(string(f[6]))
		created, err2 := strconv.ParseInt(string(f[3]), 10, 64)
		if err != nil || err2 != nil || n < 0 || n > len(b)-nl-2 || b[nl+1+n] != '\n' {
			return nil // damaged: rebuild from git
		}
		rec.status, rec.created, rec.body = knownStatus(f[2]), created, b[nl+1:nl+1+n]
		if string(f[4]) != "-" {
			rec.updated = string(f[4])
		}
		if string(f[5]) != "-" {
			rec.parent = string(f[5])
		}
		out[string(f[0])] = rec
		b = b[nl+1+n+1:]
	}
	return out
}

// appendCache appends the cache of recs to dst, which is sized for it.
func appendCache(dst []byte, recs []cached) []byte {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	dst = append(dst, cacheHeader...)
	for i := range recs {
		r := &recs[i]
		if r.transient {
			continue
		}
		dst = append(dst, r.id...)
		dst = append(dst, ' ')
		dst = hex.AppendEncode(dst, r.commit[:])
		dst = append(dst, ' ')
		dst = append(dst, r.status...)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, r.created, 10)
		dst = append(dst, ' ')
		dst = append(dst, dash(r.updated)...)
		dst = append(dst, ' ')
		dst = append(dst, dash(r.parent)...)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(len(r.body)), 10)
		dst = append(dst, '\n')
		dst = append(dst, r.body...)
		dst = append(dst, '\n')
	}
	return dst
}

// writeCache writes the cache in one write to a buffer sized up front, so
// a 10,000-task cache neither grows a buffer nor formats through fmt.
func writeCache(path string, recs []cached) error {
	size := len(cacheHeader)
	for i := range recs {
		r := &recs[i]
		size += len(r.id) + len(r.status) + len(r.updated) + len(r.parent) + len(r.body) + 96
	}
	return renameio.WriteFile(path, appendCache(make([]byte, 0, size), recs), 0o644)
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
	fresh := make([]cached, 0, len(refs))
	var missIDs []string
	var missCommits []plumbing.Hash
	for ref, h := range refs {
		id := strings.TrimPrefix(ref, TasksPrefix)
		if !ValidID(id) {
			out = append(out, Entry{ID: id, Commit: h, Err: fmt.Errorf("ref %s does not name a task id", ref)})
			continue
		}
		if rec, ok := cache[id]; ok && rec.commit == h {
			fresh = append(fresh, cached{id, rec})
			continue
		}
		missIDs = append(missIDs, id)
		missCommits = append(missCommits, h)
	}
	if len(missIDs) > 0 {
		dirty = true
		var recs []cacheRec
		if len(missIDs) > batchThreshold {
			recs, err = s.bulkSummaries(missIDs, missCommits)
		}
		if recs == nil || err != nil {
			recs = make([]cacheRec, len(missIDs))
			for i, id := range missIDs {
				recs[i] = s.summarize(id, missCommits[i])
			}
		}
		for i, id := range missIDs {
			fresh = append(fresh, cached{id, recs[i]})
		}
	}
	for i := range fresh {
		out = append(out, fresh[i].entry())
	}
	if dirty {
		// Failing to write a cache only slows the next list down.
		if err := os.MkdirAll(s.repo.LazyDir("cache"), 0o755); err == nil {
			_ = writeCache(path, fresh)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := cmp.Compare(a.Created, b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func (s *Store) summarize(id string, h plumbing.Hash) cacheRec {
	t, err := s.readSummary(id, h)
	if err != nil {
		return corruptRec(h, err)
	}
	return taskRec(h, t)
}

// taskRec is the cache record of a decoded task.
func taskRec(h plumbing.Hash, t *Task) cacheRec {
	return cacheRec{commit: h, status: string(t.Status), created: t.CreatedAt.Unix(), updated: t.UpdatedAt.UTC().Format(TimeLayout), parent: t.Parent, body: summaryJSON(t)}
}

// corruptRec is the cache record of a task that cannot be read: the error
// is cached with the commit, so an unreadable record (oversize, not
// JSON) costs one read per ref move, not one per list. A missing object
// or pack is not cached: it may be back on the next read.
func corruptRec(h plumbing.Hash, err error) cacheRec {
	transient := errors.Is(err, ErrMissingObject) || errors.Is(err, plumbing.ErrObjectNotFound) ||
		errors.Is(err, dotgit.ErrPackfileNotFound) || errors.Is(err, fs.ErrNotExist)
	return cacheRec{commit: h, status: "!", body: []byte(strings.ReplaceAll(err.Error(), "\n", " ")), transient: transient}
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
