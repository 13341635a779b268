package gitstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// StampWatcher answers FileStamp for the same files over and over, as a
// daemon's reconcile passes do, without a stat per file per pass: where
// the platform can watch directories (inotify on Linux), a file's stamp
// is kept until an event in a directory it depends on, or until it is
// maxStampAge old, and a pass costs one read of the watch descriptor.
// Elsewhere, or when a directory cannot be watched, it stats as FileStamp
// does. The stamps it returns are FileStamp's, byte for byte: a kept one
// is only ever one no event has touched.
//
// The zero value is not usable; use NewStampWatcher. A StampWatcher is
// safe for concurrent use; Close releases its descriptor.
type StampWatcher struct {
	mu    sync.Mutex
	w     dirWatcher // nil: stat every time
	kept  map[string]keptStamp
	now   func() time.Time
	stats int // stats made, for tests
}

// maxStampAge bounds how long a kept stamp is trusted without a stat: the
// events cover every change made on this machine through the watched
// directories, which is how git and lazy change refs (a lock file renamed
// into place), but not a change made on another machine to a shared file
// system, a write through a hard link in another directory or a shared
// mapping, nor a directory above a watched one renamed away and made
// again. Any of those is seen within this long.
const maxStampAge = 10 * time.Second

// keptStamp is one file's piece of a stamp and what it depends on.
type keptStamp struct {
	piece string
	mtime time.Time
	at    time.Time
	deps  []watchID
}

// watchID names a watched directory within its dirWatcher.
type watchID uint32

// dirWatcher reports changes in directories.
type dirWatcher interface {
	// watch watches dir: its entries created, removed, renamed, written
	// or touched, and the directory itself removed or renamed.
	watch(dir string) (watchID, error)
	// changed reads the events so far: the directories they touched, or
	// all when events were lost (then every kept stamp goes).
	changed() (ids []watchID, all bool)
	close() error
}

// NewStampWatcher returns a StampWatcher; it falls back to stats when the
// platform or the system's watch limits allow no watcher.
func NewStampWatcher() *StampWatcher {
	s := &StampWatcher{kept: map[string]keptStamp{}, now: time.Now}
	if w, err := newDirWatcher(); err == nil {
		s.w = w
	}
	return s
}

// Watching reports whether s watches directories, rather than stat every
// file every time.
func (s *StampWatcher) Watching() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w != nil
}

// Close releases the watch descriptor; s stats every time after.
func (s *StampWatcher) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return nil
	}
	err := s.w.close()
	s.w, s.kept = nil, map[string]keptStamp{}
	return err
}

// Stamp is FileStamp(paths...), from kept stamps where no event says a
// file may have changed.
func (s *StampWatcher) Stamp(paths ...string) (stamp string, newest time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop()
	now := s.now()
	b := make([]byte, 0, 48*len(paths))
	for _, p := range paths {
		k, ok := s.kept[p]
		if !ok || now.Sub(k.at) >= maxStampAge {
			// The watches come first: a change between them and the stat
			// is then an event, never a stamp kept stale.
			deps, watched := s.watchFor(p)
			s.stats++
			piece, mtime, err := stampOne(p)
			if err != nil {
				return "", time.Time{}, err
			}
			k = keptStamp{piece: piece, mtime: mtime, at: now, deps: deps}
			if watched {
				s.kept[p] = k
			} else {
				delete(s.kept, p)
			}
		}
		if k.mtime.After(newest) {
			newest = k.mtime
		}
		b = append(b, k.piece...)
	}
	return string(b), newest, nil
}

// drop forgets the kept stamps that events may have changed.
func (s *StampWatcher) drop() {
	if s.w == nil {
		return
	}
	ids, all := s.w.changed()
	if all {
		s.kept = map[string]keptStamp{}
		return
	}
	if len(ids) == 0 {
		return
	}
	for p, k := range s.kept {
		for _, d := range k.deps {
			if containsID(ids, d) {
				delete(s.kept, p)
				break
			}
		}
	}
}

func containsID(ids []watchID, id watchID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// watchFor watches what p's stamp depends on: the nearest existing
// directory above it, whose entries include p or the directory p would
// be created in, and p itself when it is a directory, whose entries
// changing change its time and size. ok is false when one cannot be
// watched, or p's directory is reached through a symbolic link (whose
// re-pointing is an event in a directory not watched): then p is stat'ed
// every time.
func (s *StampWatcher) watchFor(p string) (deps []watchID, ok bool) {
	if s.w == nil {
		return nil, false
	}
	// A directory made between finding the nearest one and watching it
	// would go unseen: the nearest is looked for again after the watch,
	// until it stays the same.
	var dir string
	for range 4 {
		d, found := nearestDir(p)
		if !found {
			return nil, false
		}
		if real, err := filepath.EvalSymlinks(d); err != nil || real != d {
			return nil, false
		}
		id, err := s.w.watch(d)
		if err != nil {
			return nil, false
		}
		if again, _ := nearestDir(p); again != d {
			continue
		}
		dir, deps = d, append(deps[:0], id)
		break
	}
	if dir == "" {
		return nil, false // the tree keeps changing: stat
	}
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		id, err := s.w.watch(p)
		if err != nil {
			return nil, false
		}
		deps = append(deps, id)
	}
	return deps, true
}

// nearestDir is the nearest existing directory above p.
func nearestDir(p string) (string, bool) {
	dir := filepath.Dir(p)
	for {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir, true
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", false
		}
		dir = up
	}
}

// stampOne is one file's piece of FileStamp.
func stampOne(p string) (piece string, mtime time.Time, err error) {
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "-;", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, err
	}
	dev, ino, ok := fileID(fi)
	if !ok {
		return "", time.Time{}, errors.New("stamp " + p + ": no file identity on this platform")
	}
	b := make([]byte, 0, 48)
	b = strconv.AppendUint(b, dev, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, ino, 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, fi.Size(), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, fi.ModTime().UnixNano(), 10)
	b = append(b, ';')
	return string(b), fi.ModTime(), nil
}
