package gitstore

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/renameio/v2"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// The cache is derived data keyed by each ref's commit hash: deleting it
// only costs one slower list. Its format is a header line, then per task
// one line "id commit status created updated parent len" followed by len
// bytes of summary JSON (or of the error text when status is "!") and a
// newline. It is parsed by hand because decoding 10,000 JSON records
// dominated the cost of listing them; updated is there so listings can be
// ordered without decoding any summary. List writes the records in the
// listing's order (creation time, then id) and reads a cache in any
// order, so the order is not part of the format.
const (
	cacheFile   = "list-cache"
	cacheHeader = "lazy list cache v7\n" // v7: lines carry updated_at
)

type cacheRec struct {
	commit  gitrepo.OID
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
func (c *cached) entry() task.Entry {
	e := task.Entry{ID: c.id, Commit: c.commit, Status: machine.Status(c.status), Parent: c.parent, Created: c.created, Updated: c.updated, JSON: c.body}
	if c.status == "!" {
		e.Status, e.JSON, e.Err = "", nil, errors.New(string(c.body))
		if c.transient {
			e.Err = mayPass{string(c.body)}
		}
	}
	return e
}

// knownStatus interns the statuses of cache lines, which are few, so a
// 10,000-line cache does not allocate 10,000 copies of "backlog".
func knownStatus(b []byte) string {
	for _, st := range statusList() {
		if string(b) == string(st) {
			return string(st)
		}
	}
	return string(b)
}

// statusList is machine.Statuses(), which copies the list on every call,
// made once.
var statusList = sync.OnceValue(machine.Statuses)

// parseCache parses cache bytes into a map by id; nil if they are
// damaged. The records' bodies alias b.
func parseCache(b []byte) map[string]cacheRec {
	out := make(map[string]cacheRec, bytes.Count(b, []byte{'\n'})/2)
	if !scanCache(b, func(l *cacheLine) {
		rec := cacheRec{commit: l.commit, status: knownStatus(l.status), created: l.created, body: l.body}
		if string(l.updated) != "-" {
			rec.updated = string(l.updated)
		}
		if string(l.parent) != "-" {
			rec.parent = string(l.parent)
		}
		out[string(l.id)] = rec
	}) {
		return nil
	}
	return out
}

// cacheLine is one record of a cache file as scanCache reads it, every
// field aliasing the file's bytes ("-" for no updated or parent).
type cacheLine struct {
	id, status, updated, parent []byte
	commit                      gitrepo.OID
	created                     int64
	body                        []byte
}

// scanCache calls fn with each record of cache bytes b, in file order,
// and reports whether all of b is a well-formed cache. The line fn gets
// is reused for the next record.
func scanCache(b []byte, fn func(*cacheLine)) bool {
	if !bytes.HasPrefix(b, []byte(cacheHeader)) {
		return false
	}
	b = b[len(cacheHeader):]
	var f [7][]byte
	var l cacheLine
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			return false
		}
		line := b[:nl]
		for i := range f {
			sp := bytes.IndexByte(line, ' ')
			if i == len(f)-1 {
				sp = len(line)
			}
			if sp <= 0 {
				return false
			}
			f[i], line = line[:sp], line[min(sp+1, len(line)):]
		}
		if bytes.IndexByte(f[6], ' ') >= 0 {
			return false
		}
		var ok bool
		if l.commit, ok = gitrepo.ParseOIDBytes(f[1]); !ok {
			return false
		}
		n, err := strconv.Atoi(string(f[6]))
		created, err2 := strconv.ParseInt(string(f[3]), 10, 64)
		if err != nil || err2 != nil || n < 0 || n > len(b)-nl-2 || b[nl+1+n] != '\n' {
			return false // damaged: rebuild from git
		}
		l.id, l.status, l.created, l.updated, l.parent = f[0], f[2], created, f[4], f[5]
		l.body = b[nl+1 : nl+1+n]
		fn(&l)
		b = b[nl+1+n+1:]
	}
	return true
}

// appendCache appends the cache of recs to dst, which is sized for it.
func appendCache(dst []byte, recs []cached) []byte {
	dst = append(dst, cacheHeader...)
	for i := range recs {
		r := &recs[i]
		if !r.transient {
			dst = appendCacheLine(dst, r.id, r.commit, r.status, r.created, r.updated, r.parent, r.body)
		}
	}
	return dst
}

// appendCacheLine appends one record of the cache.
func appendCacheLine(dst []byte, id string, commit gitrepo.OID, status string, created int64, updated, parent string, body []byte) []byte {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	dst = append(dst, id...)
	dst = append(dst, ' ')
	dst = commit.AppendHex(dst)
	dst = append(dst, ' ')
	dst = append(dst, status...)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, created, 10)
	dst = append(dst, ' ')
	dst = append(dst, dash(updated)...)
	dst = append(dst, ' ')
	dst = append(dst, dash(parent)...)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, '\n')
	dst = append(dst, body...)
	return append(dst, '\n')
}

// writeCache writes the cache of the listing out, in its order, leaving
// out the entries of refs that name no task and those in transient (see
// cacheRec). It is written through one reused buffer: a 10,000-task
// cache is megabytes, and filling fresh memory that size cost more than
// writing it.
func writeCache(path string, out []task.Entry, transient map[string]bool) error {
	// The temporary file goes beside the cache: without a directory,
	// renameio creates and renames two more files to learn whether
	// $TMPDIR is on the cache's file system.
	f, err := renameio.NewPendingFile(path, renameio.WithTempDir(filepath.Dir(path)), renameio.WithPermissions(0o644), renameio.WithExistingPermissions())
	if err != nil {
		return fmt.Errorf("write list cache: %w", err)
	}
	defer func() { _ = f.Cleanup() }()
	const flushAt = 64 << 10
	b := append(make([]byte, 0, flushAt+4<<10), cacheHeader...)
	for i := range out {
		e := &out[i]
		if !task.ValidID(e.ID) || transient[e.ID] {
			continue
		}
		if e.Err != nil {
			// As entry reads it back: the error's text, nothing else.
			b = appendCacheLine(b, e.ID, e.Commit, "!", 0, "", "", []byte(e.Err.Error()))
		} else {
			b = appendCacheLine(b, e.ID, e.Commit, string(e.Status), e.Created, e.Updated, e.Parent, e.JSON)
		}
		if len(b) >= flushAt {
			if _, err := f.Write(b); err != nil {
				return fmt.Errorf("write list cache: %w", err)
			}
			b = b[:0]
		}
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("write list cache: %w", err)
	}
	if err := f.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("write list cache: %w", err)
	}
	return nil
}

// List returns every task, sorted by creation time then id. Summaries
// come from the cache; only records whose ref moved since the last list
// are read from git.
//
// The cache is written in the listing's order, so a list with nothing
// new reads it once, front to back, and sorts nothing: each record is
// matched to its ref through a map keyed by the id as a number (ids are
// 16 hex digits), where maps keyed by strings, and the sort, were most
// of the cost of listing 10,000 cached tasks.
func (s *Store) List() ([]task.Entry, error) {
	refs, err := s.objs.SortedRefs(TasksPrefix)
	if err != nil {
		return nil, err
	}
	path := s.repo.LazyDir("cache", cacheFile)
	cache, _ := os.ReadFile(path) // none, or unreadable: rebuilt below
	if _, err := os.Stat(s.repo.LazyDir()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("lazy directory: %w", err)
	}
	out := make([]task.Entry, 0, len(refs))
	slot := make(map[uint64]int32, len(refs))
	for i := range refs {
		id := refs[i].Name[len(TasksPrefix):]
		if key, ok := idKey(id); ok {
			slot[key] = int32(i)
			continue
		}
		out = append(out, task.Entry{ID: id, Commit: refs[i].Hash, Err: fmt.Errorf("ref %s does not name a task id", refs[i].Name)})
	}
	bad := len(out)
	ordered := true // the cached records came in the listing's order

	// The cached records whose ref has not moved.
	found := make([]bool, len(refs))
	records := 0
	if !scanCache(cache, func(l *cacheLine) {
		records++
		key, ok := idKey(string(l.id))
		if !ok {
			return
		}
		i, ok := slot[key]
		if !ok || found[i] || refs[i].Hash != l.commit {
			return
		}
		found[i] = true
		// As cached.entry makes it.
		e := task.Entry{ID: refs[i].Name[len(TasksPrefix):], Commit: l.commit, Created: l.created}
		if string(l.updated) != "-" {
			e.Updated = string(l.updated)
		}
		if string(l.parent) != "-" {
			e.Parent = string(l.parent)
		}
		if string(l.status) == "!" {
			e.Err = errors.New(string(l.body))
		} else {
			e.Status, e.JSON = machine.Status(knownStatus(l.status)), l.body
		}
		if n := len(out); n > bad && entryCompare(&out[n-1], &e) >= 0 {
			ordered = false
		}
		out = append(out, e)
	}) {
		// Damaged: every record is read from git again.
		out, records = out[:bad], 0
		clear(found)
	}
	dirty := records != len(out)-bad || !ordered
	// Entries of bad refs sort among the others.
	sorted := ordered && bad == 0

	misses := len(refs) - len(out) // out holds the bad refs and the cached records
	missIDs := make([]string, 0, misses)
	missCommits := make([]gitrepo.OID, 0, misses)
	for i := range refs {
		id := refs[i].Name[len(TasksPrefix):]
		if !found[i] && task.ValidID(id) {
			missIDs = append(missIDs, id)
			missCommits = append(missCommits, refs[i].Hash)
		}
	}
	var transient map[string]bool
	if len(missIDs) > 0 {
		dirty, sorted = true, false
		var recs []cacheRec
		if len(missIDs) > batchThreshold {
			recs, err = s.lister().bulkSummaries(missIDs, missCommits)
		}
		if recs == nil || err != nil {
			recs = make([]cacheRec, len(missIDs))
			for i, id := range missIDs {
				recs[i] = s.lister().summarize(id, missCommits[i])
			}
		}
		for i, id := range missIDs {
			c := cached{id, recs[i]}
			out = append(out, c.entry())
			if c.transient {
				if transient == nil {
					transient = map[string]bool{}
				}
				transient[id] = true
			}
		}
	}
	if !sorted {
		sortEntries(out)
	}
	if dirty {
		// Failing to write a cache only slows the next list down.
		if err := os.MkdirAll(s.repo.LazyDir("cache"), 0o755); err == nil {
			_ = writeCache(path, out, transient)
		}
	}
	return out, nil
}

// sortEntries sorts entries by creation time, then id. It sorts small
// keys and then moves each entry once: sorting the entries themselves
// moved 136-byte structs at every swap, most of the cost of sorting
// 10,000 of them.
func sortEntries(out []task.Entry) {
	type key struct {
		created int64
		id      string
		at      int
	}
	keys := make([]key, len(out))
	for i := range out {
		keys[i] = key{out[i].Created, out[i].ID, i}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.created, b.created); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	// Position k takes the entry at keys[k].at: follow each cycle of
	// that permutation once, marking the positions filled.
	for i := range keys {
		if keys[i].at < 0 {
			continue
		}
		held := out[i]
		j := i
		for {
			from := keys[j].at
			keys[j].at = -1
			if from == i {
				out[j] = held
				break
			}
			out[j] = out[from]
			j = from
		}
	}
}

// entryCompare orders entries by creation time, then id.
func entryCompare(a, b *task.Entry) int { return task.CompareEntries(a, b) }

// idKey returns task id as a number, and whether it is a valid id: 16
// lower-case hex digits, which the number holds exactly.
func idKey(id string) (uint64, bool) {
	if !task.ValidID(id) {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(id); i++ {
		c, _ := gitrepo.HexVal(id[i])
		v = v<<4 | uint64(c)
	}
	return v, true
}

func (ls lister) summarize(id string, h gitrepo.OID) cacheRec {
	t, err := ls.readSummary(id, h)
	if err != nil {
		return corruptRec(h, err)
	}
	return taskRec(h, t)
}

// taskRec is the cache record of a decoded task.
func taskRec(h gitrepo.OID, t *task.Task) cacheRec {
	return cacheRec{commit: h, status: string(t.Status), created: t.CreatedAt.Unix(), updated: t.UpdatedAt.UTC().Format(task.TimeLayout), parent: t.Parent, body: summaryJSON(t)}
}

// corruptRec is the cache record of a task that cannot be read: the error
// is cached with the commit, so an unreadable record (oversize, not
// JSON) costs one read per ref move, not one per list. A missing object
// or pack is not cached: it may be back on the next read.
func corruptRec(h gitrepo.OID, err error) cacheRec {
	return cacheRec{commit: h, status: "!", body: []byte(strings.ReplaceAll(err.Error(), "\n", " ")), transient: TransientReadError(err)}
}

// readSummary reads just task.json of a commit: three object reads.
func (ls lister) readSummary(id string, h gitrepo.OID) (*task.Task, error) {
	s := ls.st
	tree, corrupt, err := s.snapshotTree(id, h)
	if err != nil {
		return nil, err
	}
	var t task.Task
	for _, e := range tree.Entries {
		if e.Name != fileTask {
			continue
		}
		b, err := s.objs.ReadBlob(e.Hash, fileTask, limitFor(fileTask))
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

func summaryJSON(t *task.Task) []byte { return task.SummaryJSON(t) }

// lister reads the summaries a listing shows: from the cache, in
// process from the packs (bulkSummaries) or through git cat-file.
type lister struct{ st *Store }

// lister is the summary reads of s's listings.
func (s *Store) lister() lister { return lister{st: s} }
