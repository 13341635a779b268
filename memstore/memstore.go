// Package memstore is a task.Store in memory: the records of gitstore,
// kept as the same encoded parts (task.json, session.json, the turns...)
// in maps instead of git objects, so that the logic that works on a
// task.Store is tested with no git process, in milliseconds.
//
// It follows the rules gitstore follows, from package task (ids and
// slugs, what a create starts as, Seal's checks and stamps, the
// compare-and-swap loop of RunUpdate, Resolve, the size of each part),
// and passes the same conformance suite (task/storetest). It is safe for
// concurrent use: an Update that loses a race to another goroutine is
// applied again to the newer snapshot, as in a repository. A method the
// port gains is added here and to the suite.
package memstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/lazyorch/lazy/internal/oid"
	"github.com/lazyorch/lazy/task"
)

// Store is a task.Store in memory. The zero value is not usable: call
// New.
type Store struct {
	host string
	now  func() time.Time

	mu      sync.Mutex
	tasks   map[string]*version // the current version of each task
	slugs   map[string]string   // slug -> id
	seq     uint64              // versions minted, the watch's stamp
	changed time.Time           // when the newest version was committed
}

var _ task.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithClock injects the time source.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithHost sets the host id recorded on every operation.
func WithHost(host string) Option { return func(s *Store) { s.host = host } }

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{host: "unknown", now: time.Now, tasks: map[string]*version{}, slugs: map[string]string{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// version is one committed version of a task: its parts as encoded,
// never changed once made (a snapshot's state points at it).
type version struct {
	id     oid.OID
	parent *version
	taskID string

	task, session, violations []byte // session nil: none
	op                        task.Op
	subject                   string
	goal                      string
	turns, comments           [][]byte // by seq, from 1

	// entry is the version's listing entry, made once.
	entry task.Entry
}

// Host is the host id recorded on the operations this store writes.
func (s *Store) Host() string { return s.host }

// Resolve turns what a user typed into a task id (task.Resolve).
func (s *Store) Resolve(name string) (string, error) { return task.Resolve(names{s}, name) }

// names is the store's slugs and ids, as task.Resolve reads them.
type names struct{ s *Store }

func (n names) BySlug(slug string) (string, bool, error) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	id, ok := n.s.slugs[slug]
	if ok {
		_, ok = n.s.tasks[id]
	}
	return id, ok, nil
}

func (n names) HasID(id string) (bool, error) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	_, ok := n.s.tasks[id]
	return ok, nil
}

func (n names) IDs() ([]string, error) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	out := make([]string, 0, len(n.s.tasks))
	for id := range n.s.tasks {
		out = append(out, id)
	}
	return out, nil
}

func (n names) Slugs() ([]string, error) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	out := make([]string, 0, len(n.s.slugs))
	for slug := range n.s.slugs {
		out = append(out, slug)
	}
	return out, nil
}

func (n names) Candidate(id string) (slug, title string, ok bool) {
	sn, err := n.s.Load(id)
	if err != nil {
		return "", "", false
	}
	return sn.Task.Slug, sn.Task.Title, true
}

// current returns the current version of task id.
func (s *Store) current(id string) (*version, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.tasks[id]
	return v, ok
}

// Load reads the current snapshot of task id.
func (s *Store) Load(id string) (*task.Snapshot, error) {
	if !task.ValidID(id) {
		return nil, fmt.Errorf("%q is not a task id: %w", id, task.ErrNotFound)
	}
	v, ok := s.current(id)
	if !ok {
		return nil, fmt.Errorf("task %s: %w", id, task.ErrNotFound)
	}
	return s.snapshot(v)
}

// snapshot decodes version v, as gitstore decodes a commit's tree.
func (s *Store) snapshot(v *version) (*task.Snapshot, error) {
	corrupt := func(err error) error {
		return &task.CorruptError{ID: v.taskID, Commit: v.id, Err: err}
	}
	sn := &task.Snapshot{Commit: v.id}
	sn.Bind(s, v)
	if err := json.Unmarshal(v.task, &sn.Task); err != nil {
		return nil, corrupt(fmt.Errorf("%s: %w", task.PartTask, err))
	}
	if err := checkTask(&sn.Task, v.taskID); err != nil {
		return nil, corrupt(err)
	}
	if v.session != nil {
		sn.Session = &task.Session{}
		if err := json.Unmarshal(v.session, sn.Session); err != nil {
			return nil, corrupt(fmt.Errorf("%s: %w", task.PartSession, err))
		}
	}
	if err := json.Unmarshal(v.violations, &sn.Violations); err != nil {
		return nil, corrupt(fmt.Errorf("%s: %w", task.PartViolations, err))
	}
	return sn, nil
}

// checkTask validates a decoded task.json stored as task id, as gitstore
// checks one read from a ref.
func checkTask(t *task.Task, id string) error {
	if t.Version <= task.SchemaVersion && t.ID != id {
		return fmt.Errorf("task.json names id %q but is stored as task %s", t.ID, id)
	}
	return task.CheckTask(t)
}

// Create records a new task in backlog and returns its snapshot.
func (s *Store) Create(spec task.CreateSpec) (*task.Snapshot, error) {
	id, err := task.NewTaskID(spec, func(id string) bool {
		_, ok := s.current(id)
		return ok
	})
	if err != nil {
		return nil, err
	}
	// A create whose record cannot be written reserves no slug: Seal's
	// checks run before the slug is settled.
	sn := task.NewRecord(spec, id, "", s.now().UTC().Truncate(time.Second))
	op := task.CreateOp(spec)
	if err := task.Seal(nil, sn, op, s.host, s.now()); err != nil {
		return nil, err
	}
	slug, err := task.SettleSlug(spec, func(slug string) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, taken := s.slugs[slug]; taken {
			return task.ErrSlugTaken
		}
		s.slugs[slug] = id
		return nil
	})
	if err != nil {
		return nil, err
	}
	sn.Task.Slug = slug
	v, err := s.encode(nil, sn, op)
	if err != nil {
		s.mu.Lock()
		delete(s.slugs, slug)
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tasks[id]; ok {
		delete(s.slugs, slug)
		return nil, fmt.Errorf("task %s: %w", id, task.ErrExists)
	}
	s.install(v)
	sn.Commit = v.id
	sn.Bind(s, v)
	return sn, nil
}

// Update applies fn to the newest snapshot of task id and commits the
// result by compare-and-swap (task.RunUpdate).
func (s *Store) Update(ctx context.Context, id string, fn task.UpdateFunc) (*task.Snapshot, task.UpdateStats, error) {
	return task.RunUpdate(ctx, committer{s}, id, fn)
}

// committer commits the attempts of an Update.
type committer struct{ s *Store }

func (c committer) Load(id string) (*task.Snapshot, error) { return c.s.Load(id) }

// CommitNext makes next the task's version if cur still is: a
// compare-and-swap on the version, as gitstore's on the task's ref.
func (c committer) CommitNext(cur, next *task.Snapshot, op *task.Op) (*task.Snapshot, error) {
	s := c.s
	prev, ok := cur.State().(*version)
	if !ok {
		return nil, fmt.Errorf("task %s: the snapshot was not loaded from this store", cur.Task.ID)
	}
	if err := task.Seal(cur, next, op, s.host, s.now()); err != nil {
		return nil, err
	}
	v, err := s.encode(prev, next, op)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tasks[prev.taskID] != prev {
		return nil, fmt.Errorf("task %s: %w", prev.taskID, task.ErrConflict)
	}
	if next.Task.Slug != cur.Task.Slug {
		// A rename takes the new slug; the old one stays reserved, as a
		// slug ref stays in a repository.
		if owner, taken := s.slugs[next.Task.Slug]; !taken || owner == prev.taskID {
			s.slugs[next.Task.Slug] = prev.taskID
		}
	}
	s.install(v)
	next.Commit = v.id
	next.Bind(s, v)
	return next, nil
}

// encode makes the version that commits sealed snapshot next, after prev
// (nil when creating), with the same parts and the same checks of their
// size as gitstore writes.
func (s *Store) encode(prev *version, next *task.Snapshot, op *task.Op) (*version, error) {
	v := &version{parent: prev, taskID: next.Task.ID, op: *op, subject: task.Subject(&next.Task, op)}
	var err error
	if v.task, err = task.EncodePart(task.PartTask, &next.Task); err != nil {
		return nil, err
	}
	if next.Session != nil {
		if v.session, err = task.EncodePart(task.PartSession, next.Session); err != nil {
			return nil, err
		}
	}
	if v.violations, err = task.EncodePart(task.PartViolations, &next.Violations); err != nil {
		return nil, err
	}
	if _, err = task.EncodePart(task.PartOp, op); err != nil {
		return nil, err
	}
	if prev != nil {
		v.goal, v.turns, v.comments = prev.goal, prev.turns, prev.comments
	}
	if goal, changed := next.GoalChange(); changed {
		if err := task.CheckPartSize(task.PartGoal, len(goal)); err != nil {
			return nil, err
		}
		v.goal = goal
	}
	if v.turns, err = appendSeq(v.turns, task.PartTurns, next.EditedTurns(), next.NewTurns(), func(t task.Turn) int { return t.Seq }); err != nil {
		return nil, err
	}
	if v.comments, err = appendSeq(v.comments, task.PartComments, nil, next.NewComments(), func(c task.Comment) int { return c.Seq }); err != nil {
		return nil, err
	}
	var t task.Task
	if err := json.Unmarshal(v.task, &t); err != nil {
		return nil, fmt.Errorf("encode %s: %w", task.PartTask, err)
	}
	v.entry = task.EntryOf(oid.OID{}, &t)
	return v, nil
}

// appendSeq returns old (not changed) with the records of edited
// replacing theirs and those of added appended, by sequence number.
func appendSeq[T any](old [][]byte, part string, edited, added []T, seq func(T) int) ([][]byte, error) {
	if len(edited) == 0 && len(added) == 0 {
		return old, nil
	}
	out := slices.Clone(old)
	for _, r := range append(slices.Clone(edited), added...) {
		n := seq(r)
		b, err := task.EncodePart(part+"/"+task.SeqName(n), r)
		if err != nil {
			return nil, err
		}
		switch {
		case n >= 1 && n <= len(out):
			out[n-1] = b
		case n == len(out)+1:
			out = append(out, b)
		default:
			return nil, fmt.Errorf("%s/%s does not follow the %d stored", part, task.SeqName(n), len(out))
		}
	}
	return out, nil
}

// install makes v its task's current version; s.mu is held.
func (s *Store) install(v *version) {
	s.seq++
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], s.seq)
	sum := sha256.Sum256(append([]byte("memstore "+v.taskID+" "), b[:]...))
	v.id, _ = oid.FromBytes(sum[:])
	v.entry.Commit = v.id
	s.tasks[v.taskID] = v
	s.changed = s.now()
}

// List returns every task, by creation time then id.
func (s *Store) List() ([]task.Entry, error) {
	s.mu.Lock()
	out := make([]task.Entry, 0, len(s.tasks))
	for _, v := range s.tasks {
		out = append(out, v.entry)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b task.Entry) int { return task.CompareEntries(&a, &b) })
	return out, nil
}

// versionOf is the version a snapshot of this store was loaded from.
func versionOf(sn *task.Snapshot) *version {
	v, _ := sn.State().(*version)
	return v
}

// ReadGoal reads the stored goal of sn.
func (s *Store) ReadGoal(sn *task.Snapshot) (string, error) {
	if v := versionOf(sn); v != nil {
		return v.goal, nil
	}
	return "", nil
}

// Turns reads the turns of a snapshot in sequence order.
func (s *Store) Turns(sn *task.Snapshot) ([]task.Turn, error) {
	v := versionOf(sn)
	if v == nil {
		return nil, nil
	}
	return decodeSeq[task.Turn](v, task.PartTurns, v.turns)
}

// Comments reads the comments of a snapshot in sequence order.
func (s *Store) Comments(sn *task.Snapshot) ([]task.Comment, error) {
	v := versionOf(sn)
	if v == nil {
		return nil, nil
	}
	return decodeSeq[task.Comment](v, task.PartComments, v.comments)
}

func decodeSeq[T any](v *version, part string, recs [][]byte) ([]T, error) {
	out := make([]T, len(recs))
	for i, b := range recs {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			return nil, &task.CorruptError{ID: v.taskID, Commit: v.id, Err: fmt.Errorf("%s/%s: %w", part, task.SeqName(i+1), err)}
		}
	}
	return out, nil
}

// History returns the operations applied to the task of a snapshot,
// oldest first.
func (s *Store) History(sn *task.Snapshot) ([]task.Change, error) {
	var out []task.Change
	for v := versionOf(sn); v != nil; v = v.parent {
		ch := task.Change{
			Commit: task.Hex(v.id), At: v.op.At, Op: v.op.Name, Actor: v.op.Actor,
			From: v.op.From, To: v.op.To, Clock: v.op.Clock, Host: v.op.Host, Subject: v.subject,
		}
		if ch.Op == rawOp {
			// As gitstore lists a commit lazy did not write: under the
			// status its task.json records, or not at all.
			var t task.Task
			if json.Unmarshal(v.task, &t) != nil || !t.Status.Valid() {
				continue
			}
			ch.To = t.Status
		}
		out = append(out, ch)
	}
	slices.Reverse(out)
	return out, nil
}

// Watch returns a watch of the store's records: its stamp changes with
// every commit, exactly.
func (s *Store) Watch() task.Watch { return watch{s} }

type watch struct{ s *Store }

func (w watch) Stamp() (string, time.Time, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return strconv.FormatUint(w.s.seq, 10), w.s.changed, nil
}

func (w watch) Close() error { return nil }

// rawOp names a version PutRaw made, as gitstore's history names a
// commit lazy did not write.
const rawOp = "not-a-lazy-operation"

// PutRaw makes taskJSON, unchecked, the task.json of a new version of
// task id (created when there is none), as a hand edit or a remote
// could: what a test of a store's readers plants. Load then reports the
// record as corrupt when it does not decode or check, and List lists it
// as an entry with Err, hiding no other.
func (s *Store) PutRaw(id string, taskJSON []byte) error {
	if !task.ValidID(id) {
		return fmt.Errorf("%q is not a task id", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.tasks[id]
	v := &version{parent: prev, taskID: id, task: slices.Clone(taskJSON), violations: []byte(`{"pending":[]}`), op: task.Op{Name: rawOp}}
	if prev != nil {
		v.session, v.violations, v.goal, v.turns, v.comments = prev.session, prev.violations, prev.goal, prev.turns, prev.comments
	}
	var t task.Task
	err := json.Unmarshal(v.task, &t)
	if err == nil {
		err = checkTask(&t, id)
	}
	s.install(v)
	if err != nil {
		v.entry = task.Entry{ID: id, Commit: v.id, Err: &task.CorruptError{ID: id, Commit: v.id, Err: fmt.Errorf("%s: %w", task.PartTask, err)}}
	} else {
		v.entry = task.EntryOf(v.id, &t)
	}
	return nil
}
