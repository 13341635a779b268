package gitstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// Ref namespaces.
const (
	TasksPrefix = "refs/lazy/tasks/"
	SlugsPrefix = "refs/lazy/slugs/"
)

// Tree entry names of a task snapshot.
const (
	fileTask       = task.PartTask
	fileGoal       = task.PartGoal
	fileSession    = task.PartSession
	fileViolations = task.PartViolations
	fileOp         = task.PartOp
	dirTurns       = task.PartTurns
	dirComments    = task.PartComments
)

// Store reads and writes task records in one repository.
type Store struct {
	repo *Repo
	// objs is every object and ref the store reads and writes, through
	// the roles of gitrepo.Repo (in process: gitrepo.Local, over repo's
	// own ref store); a write runs on a journaled view of it (see
	// journaled).
	objs gitrepo.Repo
	// git is the repository served by git processes: the bulk read of a
	// cold listing's records (ReadFiles) goes through it, so that one
	// object reader, held to gitrepo's conformance suite, answers for
	// git's side (nil: the records are read in process).
	git  gitrepo.Repo
	host string
	now  func() time.Time
	// bounds bound one read of a whole record (see MaxRecordBytes).
	bounds recordBounds
	// LooseObjectLimit is the estimated number of loose objects above
	// which NeedsHousekeeping reports true (0 disables the check).
	LooseObjectLimit int
}

// Option configures a Store.
type Option func(*Store)

// WithClock injects the time source (tests).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithHost sets the host id recorded on every operation.
func WithHost(host string) Option { return func(s *Store) { s.host = host } }

// Open returns a Store on repo.
func Open(repo *Repo, opts ...Option) *Store {
	s := &Store{repo: repo, objs: gitrepo.OpenLocation(repo), host: "unknown", now: time.Now, bounds: defaultBounds, LooseObjectLimit: 4000}
	if g, err := gitrepo.OpenGitFor(repo.CommonDir, repo.ObjectFormat); err == nil {
		s.git = g
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Repo returns the repository the store writes to.
func (s *Store) Repo() *Repo { return s.repo }

// Objects is the store's object store: the repository's own writer and
// reader (in process for SHA-1), for what lazy writes beside the task
// records (the pool's claims).
func (s *Store) Objects() gitrepo.ObjectStore { return s.objs }

// Host returns the host id recorded on operations.
func (s *Store) Host() string { return s.host }

// ReadGoal reads the stored goal of sn: Snapshot.Goal reads it through
// the snapshot's Source.
func (s *Store) ReadGoal(sn *task.Snapshot) (string, error) {
	e, ok := entriesOf(sn)[fileGoal]
	if !ok {
		return "", nil
	}
	b, err := s.objs.ReadBlob(e.Hash, fileGoal, limitFor(fileGoal))
	if err != nil {
		return "", fmt.Errorf("task %s: read goal: %w", sn.Task.ID, err)
	}
	return string(b), nil
}

// entriesOf is the tree of the commit sn was loaded from (or written
// as), which Load binds to the snapshot as the store's state of it; nil
// for a snapshot no gitstore loaded.
func entriesOf(sn *task.Snapshot) map[string]treeEntry {
	m, _ := sn.State().(map[string]treeEntry)
	return m
}

// corruptAt is the error of task id's record at commit h, which err says
// cannot be read, with the git command that shows it.
func corruptAt(id string, h gitrepo.OID, err error) *task.CorruptError {
	inspect := "git log -p"
	if errors.Is(err, ErrOversize) {
		inspect = "git log --stat" // -p would print the oversize record
	}
	return &task.CorruptError{ID: id, Commit: h, Err: err, Inspect: inspect + " " + TasksPrefix + id}
}

// TaskRef is the ref holding a task's record.
func TaskRef(id string) string { return TasksPrefix + id }

// Load reads the current snapshot of task id (a full id, see Resolve).
func (s *Store) Load(id string) (*task.Snapshot, error) {
	if !task.ValidID(id) {
		return nil, fmt.Errorf("%q is not a task id: %w", id, task.ErrNotFound)
	}
	h, ok, err := s.objs.ReadRef(TaskRef(id))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("task %s: %w", id, task.ErrNotFound)
	}
	return s.loadAt(id, h)
}

// LoadEntry reads the snapshot a listing entry names: the task at the
// entry's commit, so what is read of it agrees with the entry's summary
// even when the ref has moved on since the listing.
func (s *Store) LoadEntry(e *task.Entry) (*task.Snapshot, error) {
	if !task.ValidID(e.ID) {
		return nil, fmt.Errorf("%q is not a task id: %w", e.ID, task.ErrNotFound)
	}
	return s.loadAt(e.ID, e.Commit)
}

// Exists reports whether task id has a record here.
func (s *Store) Exists(id string) bool {
	_, ok, err := s.objs.ReadRef(TaskRef(id))
	return ok && err == nil
}

// snapshotTree reads the tree of a task's commit; any failure is the
// record's corruption, reported as such.
func (s *Store) snapshotTree(id string, h gitrepo.OID) (*gitrepo.ParsedTree, func(error) error, error) {
	corrupt := func(err error) error { return corruptAt(id, h, err) }
	c, err := s.objs.ReadCommit(h)
	if err != nil {
		return nil, corrupt, corrupt(err)
	}
	tree, err := s.objs.ReadTree(c.TreeHash)
	if err != nil {
		return nil, corrupt, corrupt(err)
	}
	return tree, corrupt, nil
}

func (s *Store) loadAt(id string, h gitrepo.OID) (*task.Snapshot, error) {
	tree, corrupt, err := s.snapshotTree(id, h)
	if err != nil {
		return nil, err
	}
	entries := make(map[string]treeEntry, len(tree.Entries))
	for _, e := range tree.Entries {
		entries[e.Name] = treeEntry{Name: e.Name, Hash: e.Hash, Dir: !e.Mode.IsFile()}
	}
	sn := &task.Snapshot{Commit: h}
	sn.Bind(s, entries)
	if err := s.decodeEntry(entries, fileTask, &sn.Task, true); err != nil {
		return nil, corrupt(err)
	}
	if err := checkTask(&sn.Task, id); err != nil {
		return nil, corrupt(err)
	}
	if _, ok := entries[fileSession]; ok {
		sn.Session = &task.Session{}
		if err := s.decodeEntry(entries, fileSession, sn.Session, true); err != nil {
			return nil, corrupt(err)
		}
	}
	if err := s.decodeEntry(entries, fileViolations, &sn.Violations, false); err != nil {
		return nil, corrupt(err)
	}
	return sn, nil
}

func (s *Store) decodeEntry(entries map[string]treeEntry, name string, v any, required bool) error {
	e, ok := entries[name]
	if !ok {
		if required {
			return fmt.Errorf("%s is missing", name)
		}
		return nil
	}
	b, err := s.objs.ReadBlob(e.Hash, name, limitFor(name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// checkTask validates a decoded task.json read from ref TaskRef(id):
// its fields (task.CheckTask), and that it names the id of its ref.
func checkTask(t *task.Task, id string) error {
	if t.Version <= task.SchemaVersion && t.ID != id {
		return fmt.Errorf("task.json names id %q but lives in ref %s%s", t.ID, TasksPrefix, id)
	}
	return task.CheckTask(t)
}

// maxLockedAttempts is how many lock timeouts (100 ms each) in a row an
// Update waits out before reporting the lock.
const maxLockedAttempts = 5

// Update applies fn to the latest snapshot of task id and commits the
// result with compare-and-swap, reloading and re-applying fn whenever
// another writer moved the ref first (task.RunUpdate).
func (s *Store) Update(ctx context.Context, id string, fn task.UpdateFunc) (*task.Snapshot, task.UpdateStats, error) {
	return task.RunUpdate(ctx, &updater{s: s}, id, fn)
}

// updater commits the attempts of one Update.
type updater struct {
	s      *Store
	locked int // lock timeouts met in a row
}

func (u *updater) Load(id string) (*task.Snapshot, error) { return u.s.Load(id) }

// CommitNext writes next's objects and moves the task's ref from cur's
// commit to the new one. A ref another writer moved first, objects a
// concurrent gc pruned (the next attempt writes them again) and a lock
// held for a moment are a conflict the next attempt settles; a lock
// held across several timeouts is a stuck or crashed writer, not
// contention, and is reported rather than waited on.
func (u *updater) CommitNext(cur, next *task.Snapshot, op *task.Op) (*task.Snapshot, error) {
	s := u.s
	id := cur.Task.ID
	js, j := s.journaled()
	commit, entries, err := js.commit(cur, next, op)
	if err != nil {
		return nil, err
	}
	err = s.publisher().casWritten(TaskRef(id), cur.Commit, commit, j)
	switch {
	case err == nil:
		u.locked = 0
		next.Commit = commit
		next.Bind(s, entries)
		s.publisher().heal(cur.Commit, j)
		if next.Task.Status != cur.Task.Status && next.Task.Status.IsTerminal() {
			s.Provenance().noteFinished(id, commit)
		}
		return next, nil
	case errors.Is(err, ErrLocked):
		if u.locked++; u.locked >= maxLockedAttempts {
			return nil, fmt.Errorf("task %s: %w", id, err)
		}
		return nil, fmt.Errorf("%w: %w", task.ErrConflict, err)
	case errors.Is(err, ErrMissingObject), errors.Is(err, ErrStale):
		return nil, fmt.Errorf("%w: %w", task.ErrConflict, err)
	}
	return nil, err
}

// commit writes the objects for next (relative to prev) and returns the
// new commit's hash and the entries of its tree, for the caller to bind
// to next once the commit is the task's. prev is nil when creating.
func (s *Store) commit(prev, next *task.Snapshot, op *task.Op) (gitrepo.OID, map[string]treeEntry, error) {
	var parent gitrepo.OID
	if prev != nil {
		parent = prev.Commit
	}
	if err := task.Seal(prev, next, op, s.host, s.now()); err != nil {
		return gitrepo.OID{}, nil, err
	}
	now := op.At
	entries := maps.Clone(entriesOf(next))
	if entries == nil {
		entries = map[string]treeEntry{}
	}

	put := func(name string, v any) error {
		b, err := task.EncodePart(name, v)
		if err != nil {
			return err
		}
		h := gitrepo.HashFor(s.objs.Format(), gitrepo.Blob, b)
		if old, ok := entries[name]; ok && old.Hash == h {
			return nil
		}
		if _, err := s.objs.Write(gitrepo.Blob, b); err != nil {
			return err
		}
		entries[name] = treeEntry{Name: name, Hash: h}
		return nil
	}
	if err := put(fileTask, &next.Task); err != nil {
		return gitrepo.OID{}, nil, err
	}
	if next.Session != nil {
		if err := put(fileSession, next.Session); err != nil {
			return gitrepo.OID{}, nil, err
		}
	} else {
		delete(entries, fileSession)
	}
	if err := put(fileViolations, &next.Violations); err != nil {
		return gitrepo.OID{}, nil, err
	}
	if err := put(fileOp, op); err != nil {
		return gitrepo.OID{}, nil, err
	}
	if goal, changed := next.GoalChange(); changed {
		if err := task.CheckPartSize(fileGoal, len(goal)); err != nil {
			return gitrepo.OID{}, nil, err
		}
		h, err := s.objs.Write(gitrepo.Blob, []byte(goal))
		if err != nil {
			return gitrepo.OID{}, nil, err
		}
		entries[fileGoal] = treeEntry{Name: fileGoal, Hash: h}
	}
	turns := append(append([]task.Turn(nil), next.EditedTurns()...), next.NewTurns()...)
	if err := s.appendDir(next, entries, dirTurns, len(turns), func(i int) (int, any) { return turns[i].Seq, &turns[i] }); err != nil {
		return gitrepo.OID{}, nil, err
	}
	comments := next.NewComments()
	if err := s.appendDir(next, entries, dirComments, len(comments), func(i int) (int, any) { return comments[i].Seq, &comments[i] }); err != nil {
		return gitrepo.OID{}, nil, err
	}
	list := make([]treeEntry, 0, len(entries))
	for _, e := range entries {
		list = append(list, e)
	}
	tree, err := gitrepo.WriteTree(s.objs, list)
	if err != nil {
		return gitrepo.OID{}, nil, err
	}
	msg := commitMessage(&next.Task, op)
	commit, err := s.objs.Write(gitrepo.Commit, encodeCommit(tree, parent, s.host, now, msg))
	return commit, entries, err
}

// appendDir writes n records into the subtree name (new ones appended,
// edited ones replacing their old blob), reusing every other entry's hash.
func (s *Store) appendDir(next *task.Snapshot, tree map[string]treeEntry, name string, n int, item func(int) (int, any)) error {
	if n == 0 {
		return nil
	}
	var entries []treeEntry
	if old, ok := tree[name]; ok {
		t, err := s.objs.ReadTree(old.Hash)
		if err != nil {
			return fmt.Errorf("task %s: read %s: %w", next.Task.ID, name, err)
		}
		for _, e := range t.Entries {
			entries = append(entries, treeEntry{Name: e.Name, Hash: e.Hash, Dir: !e.Mode.IsFile()})
		}
	}
	index := make(map[string]int, len(entries))
	for i, e := range entries {
		index[e.Name] = i
	}
	for i := 0; i < n; i++ {
		seq, v := item(i)
		b, err := task.EncodePart(name+"/"+seqName(seq), v)
		if err != nil {
			return err
		}
		h, err := s.objs.Write(gitrepo.Blob, b)
		if err != nil {
			return err
		}
		e := treeEntry{Name: seqName(seq), Hash: h}
		if at, ok := index[e.Name]; ok {
			entries[at] = e // an edited record replaces its old blob
		} else {
			entries = append(entries, e)
		}
	}
	h, err := gitrepo.WriteTree(s.objs, entries)
	if err != nil {
		return err
	}
	tree[name] = treeEntry{Name: name, Hash: h, Dir: true}
	return nil
}

// seqName is a turn's or comment's entry name (task.SeqName).
func seqName(seq int) string { return task.SeqName(seq) }

func encodeCommit(tree, parent gitrepo.OID, host string, at time.Time, msg string) []byte {
	return gitrepo.EncodeCommit(tree, parent, fmt.Sprintf("lazy <%s@lazy.invalid> %d +0000", host, at.Unix()), msg)
}

// Trailer keys written on every operation commit.
const (
	TrailerTask  = "Lazy-Task"
	TrailerOp    = "Lazy-Op"
	TrailerActor = "Lazy-Actor"
	TrailerFrom  = "Lazy-From"
	TrailerTo    = "Lazy-To"
	TrailerClock = "Lazy-Clock"
	TrailerHost  = "Lazy-Host"
)

func commitMessage(t *task.Task, op *task.Op) string {
	var b strings.Builder
	b.WriteString(task.Subject(t, op) + "\n\n")
	fmt.Fprintf(&b, "%s: %s\n%s: %s\n%s: %s\n", TrailerTask, t.ID, TrailerOp, op.Name, TrailerActor, op.Actor)
	if op.From != "" {
		fmt.Fprintf(&b, "%s: %s\n", TrailerFrom, op.From)
	}
	fmt.Fprintf(&b, "%s: %s\n%s: %d\n%s: %s\n", TrailerTo, op.To, TrailerClock, op.Clock, TrailerHost, op.Host)
	return b.String()
}

// ParseTrailers reads the Lazy-* trailers of a commit message.
func ParseTrailers(msg string) map[string]string {
	out := map[string]string{}
	// strings.Lines rather than a bufio.Scanner: a scanner's buffer is a
	// fresh 64 KiB per commit, and show parses every commit of a task.
	for line := range strings.Lines(msg) {
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		k, v, ok := strings.Cut(line, ": ")
		if ok && strings.HasPrefix(k, "Lazy-") {
			out[k] = v
		}
	}
	return out
}

// Create records a new task in backlog and returns its snapshot. The slug
// is reserved first with a create-only ref, which makes it unique across
// concurrent creators without a global lock.
func (s *Store) Create(spec task.CreateSpec) (*task.Snapshot, error) {
	id, err := task.NewTaskID(spec, s.Exists)
	if err != nil {
		return nil, err
	}
	var idBlob gitrepo.OID
	slug, err := task.SettleSlug(spec, func(slug string) error {
		if idBlob.IsZero() {
			var err error
			if idBlob, err = s.objs.Write(gitrepo.Blob, []byte(id+"\n")); err != nil {
				return err
			}
		}
		err := s.publisher().casBlob(SlugsPrefix+slug, idBlob, []byte(id+"\n"))
		// A slug's lock is held only while another create reserves it:
		// on a loaded machine that can outlast one lock timeout, and the
		// create then failed with "ref is locked" (CI, 12 creates of one
		// title under -race). Waiting again settles it: the other create
		// took the slug (stale: try the next) or gave up on it (ours).
		for try := 1; errors.Is(err, ErrLocked) && try < maxLockedAttempts; try++ {
			err = s.publisher().casBlob(SlugsPrefix+slug, idBlob, []byte(id+"\n"))
		}
		if errors.Is(err, ErrStale) {
			return fmt.Errorf("%w: %w", task.ErrSlugTaken, err)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sn := task.NewRecord(spec, id, slug, s.now().UTC().Truncate(time.Second))
	js, j := s.journaled()
	commit, entries, err := js.commit(nil, sn, task.CreateOp(spec))
	if err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		err := s.publisher().casWritten(TaskRef(id), gitrepo.OID{}, commit, j)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrMissingObject) || try >= 5 {
			return nil, err
		}
		// A concurrent gc pruned the new objects: write them once more.
		if err := gitrepo.Replay(s.objs, j); err != nil {
			return nil, err
		}
	}
	s.publisher().heal(gitrepo.OID{}, j)
	sn.Commit = commit
	sn.Bind(s, entries)
	return sn, nil
}

// Turns reads the turns of a snapshot in sequence order: every turn of a
// record within the bounds of one read (see MaxRecordBytes), else the
// newest that fit.
func (s *Store) Turns(sn *task.Snapshot) ([]task.Turn, error) {
	d, err := s.sizer().sizeDir(sn, dirTurns, s.bounds.bytes)
	if err != nil {
		return nil, err
	}
	keep := d.fit(s.bounds.bytes)
	return s.readTurns(sn, d.entries[len(d.entries)-keep:])
}

// Turn reads turn seq of a snapshot (nil when it has none such) without
// reading the others.
func (s *Store) Turn(sn *task.Snapshot, seq int) (*task.Turn, error) {
	e, ok := entriesOf(sn)[dirTurns]
	if !ok || seq < 1 {
		return nil, nil
	}
	t, err := s.objs.ReadTree(e.Hash)
	if err != nil {
		return nil, corruptAt(sn.Task.ID, sn.Commit, err)
	}
	name := seqName(seq)
	for i := range t.Entries {
		if t.Entries[i].Name != name {
			continue
		}
		turns, err := s.readTurns(sn, t.Entries[i:i+1])
		if err != nil || len(turns) == 0 {
			return nil, err
		}
		return &turns[0], nil
	}
	return nil, nil
}

// Comments reads the comments of a snapshot in sequence order, within the
// bounds of one read as Turns does.
func (s *Store) Comments(sn *task.Snapshot) ([]task.Comment, error) {
	d, err := s.sizer().sizeDir(sn, dirComments, s.bounds.bytes)
	if err != nil {
		return nil, err
	}
	keep := d.fit(s.bounds.bytes)
	return s.readComments(sn, d.entries[len(d.entries)-keep:])
}

// readTurns reads the turns entries of a snapshot's turns/ tree.
func (s *Store) readTurns(sn *task.Snapshot, entries []gitrepo.TreeItem) ([]task.Turn, error) {
	out := make([]task.Turn, 0, len(entries))
	err := s.readDir(sn, dirTurns, entries, func(b []byte) error {
		var t task.Turn
		if err := json.Unmarshal(b, &t); err != nil {
			return err
		}
		out = append(out, t)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, err
}

// readComments reads the comments entries of a snapshot's comments/ tree.
func (s *Store) readComments(sn *task.Snapshot, entries []gitrepo.TreeItem) ([]task.Comment, error) {
	out := make([]task.Comment, 0, len(entries))
	err := s.readDir(sn, dirComments, entries, func(b []byte) error {
		var c task.Comment
		if err := json.Unmarshal(b, &c); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, err
}

func (s *Store) readDir(sn *task.Snapshot, name string, entries []gitrepo.TreeItem, fn func([]byte) error) error {
	for _, te := range entries {
		b, err := s.objs.ReadBlob(te.Hash, name+"/"+te.Name, limitFor(name+"/"+te.Name))
		if err != nil {
			return corruptAt(sn.Task.ID, sn.Commit, err)
		}
		if err := fn(b); err != nil {
			return corruptAt(sn.Task.ID, sn.Commit, fmt.Errorf("%s/%s: %w", name, te.Name, err))
		}
	}
	return nil
}

// History returns the operations applied to a task, oldest first. After
// a merge of two machines' histories every operation of both sides is
// listed, ordered as the merge replayed them (clock, host, commit). It
// walks at most MaxRecordEntries commits, newest first (see
// HistoryCut).
func (s *Store) History(sn *task.Snapshot) ([]task.Change, error) {
	var out []task.Change
	seen := map[gitrepo.OID]bool{}
	queue := []gitrepo.OID{sn.Commit}
	for len(queue) > 0 && len(out) < s.bounds.entries {
		h := queue[0]
		queue = queue[1:]
		if h.IsZero() || seen[h] {
			continue
		}
		seen[h] = true
		c, err := s.objs.ReadCommit(h)
		if err != nil {
			return out, corruptAt(sn.Task.ID, h, err)
		}
		tr := ParseTrailers(c.Message)
		clock, _ := strconv.ParseUint(tr[TrailerClock], 10, 64)
		subject, _, _ := strings.Cut(c.Message, "\n")
		ch := task.Change{
			Commit: task.Hex(h), At: c.Committer.When.UTC(), Op: tr[TrailerOp], Actor: machine.Actor(tr[TrailerActor]),
			From: machine.Status(tr[TrailerFrom]), To: machine.Status(tr[TrailerTo]),
			Clock: clock, Host: tr[TrailerHost], Subject: subject,
		}
		if ch, ok := s.plainChange(sn.Task.ID, h, ch); ok {
			out = append(out, ch)
		}
		queue = append(queue, c.ParentHashes...)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Clock != b.Clock {
			return a.Clock < b.Clock
		}
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		return a.Commit.String() < b.Commit.String()
	})
	return out, nil
}

// plainChange keeps a history entry within what lazy's readers promise
// (a known status, a known actor) when its commit's trailers do not say
// so: a commit lazy did not write, pushed by someone else. Its status is
// then the one its own task.json records, and its operation is named as
// such, so the entry stays visible rather than breaking the reader. One
// whose task.json cannot be read either is left out (false).
func (s *Store) plainChange(id string, h gitrepo.OID, ch task.Change) (task.Change, bool) {
	if ch.To.Valid() && (ch.From == "" || ch.From.Valid()) && ch.Actor.Valid() {
		return ch, true
	}
	at, err := s.loadAt(id, h)
	if err != nil || !at.Task.Status.Valid() {
		return ch, false
	}
	ch.Op, ch.From, ch.Actor, ch.To = "not-a-lazy-operation", "", machine.Actor(""), at.Task.Status
	return ch, true
}

// casCommit moves a task ref to commit once, under the ref lock, every
// object the commit needs is verified present.
func (p publisher) casCommit(ref string, old, commit gitrepo.OID) error {
	s := p.st
	return s.objs.CompareAndSwapVerified(ref, old, commit, func() error { return gitrepo.VerifyCommit(s.objs, commit) })
}

// casBlob creates a ref to a blob, writing the blob again if a
// concurrent gc pruned it before the ref could protect it.
func (p publisher) casBlob(ref string, blob gitrepo.OID, content []byte) error {
	s := p.st
	var err error
	for try := 0; try < 3; try++ {
		err = s.objs.CompareAndSwapVerified(ref, gitrepo.OID{}, blob, func() error {
			if !gitrepo.Present(s.objs, blob) {
				return fmt.Errorf("blob %s: %w", blob, ErrMissingObject)
			}
			return nil
		})
		if err == nil {
			// See heal: a gc that started before the ref moved may still
			// prune the blob; write it again if it did.
			for i := 0; i < 3 && !gitrepo.Present(s.objs, blob); i++ {
				_, _ = s.objs.Write(gitrepo.Blob, content)
			}
			return nil
		}
		if !errors.Is(err, ErrMissingObject) {
			return err
		}
		if _, werr := s.objs.Write(gitrepo.Blob, content); werr != nil {
			return werr
		}
	}
	return err
}

// casWritten moves a task ref to commit, built on parent with the
// objects j recorded, once, under the ref lock, all of them are verified
// present.
func (p publisher) casWritten(ref string, parent, commit gitrepo.OID, j *gitrepo.Journal) error {
	s := p.st
	return s.objs.CompareAndSwapVerified(ref, parent, commit, func() error { return gitrepo.VerifyWritten(s.objs, j, parent) })
}

// journaled returns a copy of s whose writes are journaled.
func (s *Store) journaled() (*Store, *gitrepo.Journal) {
	c := *s
	var j *gitrepo.Journal
	c.objs, j = gitrepo.Journaled(s.objs)
	return &c, j
}

// heal re-checks a commit after its ref moved and writes again whatever
// of it a concurrent git gc --prune=now deleted meanwhile: such a gc
// decides what is reachable when it starts, so objects written after
// that and referenced only after it are unreachable in its eyes. Git
// itself documents --prune=now as unsafe with concurrent writers; this
// narrows the window to the instant between this check and the prune.
func (p publisher) heal(parent gitrepo.OID, j *gitrepo.Journal) {
	s := p.st
	for try := 0; try < 3; try++ {
		if gitrepo.VerifyWritten(s.objs, j, parent) == nil {
			return
		}
		if gitrepo.Replay(s.objs, j) != nil {
			return
		}
	}
}

// treeEntry is one entry of a snapshot tree being built.
type treeEntry = gitrepo.TreeEntry

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// publisher moves refs onto what the store wrote, once, under the ref
// lock, every object the new value needs is verified present, and writes
// again what a concurrent git gc --prune=now deleted meanwhile: the
// store's defence against gc racing its writes (see SECURITY.md).
type publisher struct{ st *Store }

// publisher is the ref moves of s's writes.
func (s *Store) publisher() publisher { return publisher{st: s} }
