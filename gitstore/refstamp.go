package gitstore

import (
	"io/fs"
	"syscall"
	"time"

	"github.com/lazyorch/lazy/task"
)

// RefStamp stamps the refs under prefix (which must end in "/") without
// reading them: the identity, size and modification time of packed-refs
// and of prefix's directory. Git and lazy write a loose ref by renaming
// its lock file into that directory, and remove one by unlinking it, so
// every loose ref moved there changes the directory's time; packed refs
// change packed-refs. Reading the refs instead costs a file per task.
//
// Equal stamps mean no ref under prefix moved only when newest (the later
// of the two times) was already older than the file system's timestamp
// granularity when the refs were read: a second write within the tick of
// the first can leave the stamp as it was (git's "racy index" problem),
// so a caller trusts an equal stamp only when it was read well after
// newest. A ref file rewritten in place, not through a lock file and a
// rename (by hand, or a tool that does), changes neither, so a caller
// also bounds how long it trusts an equal stamp. Refs in subdirectories of prefix are not stamped: task refs
// live directly under TasksPrefix.
func RefStamp(r *Repo, prefix string) (stamp string, newest time.Time, err error) {
	return FileStamp(r.RefStampPaths(prefix)...)
}

// FileStamp stamps files or directories by identity (device and inode),
// size and modification time, "-" for one that does not exist, and
// returns the newest of their times: equal stamps mean unchanged files
// only when newest was older than the file system's time granularity when
// they were first stamped (see RefStamp).
func FileStamp(paths ...string) (stamp string, newest time.Time, err error) {
	b := make([]byte, 0, 48*len(paths))
	for _, p := range paths {
		piece, mtime, err := stampOne(p)
		if err != nil {
			return "", time.Time{}, err
		}
		if mtime.After(newest) {
			newest = mtime
		}
		b = append(b, piece...)
	}
	return string(b), newest, nil
}

// fileID is a file's device and inode.
func fileID(fi fs.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), st.Ino, true //nolint:unconvert // Dev is int32 on darwin
}

// The git store is the task store the operations work on.
var _ task.Store = (*Store)(nil)

// Watch returns a watch of the task refs: RefStamp of TasksPrefix,
// through a StampWatcher (see it for what it watches and for how long
// it trusts a stamp). The caller closes it.
func (s *Store) Watch() task.Watch {
	return &refWatch{w: NewStampWatcher(), paths: s.repo.RefStampPaths(TasksPrefix)}
}

// refWatch is Store.Watch's watch.
type refWatch struct {
	w     *StampWatcher
	paths []string
}

func (r *refWatch) Stamp() (string, time.Time, error) { return r.w.Stamp(r.paths...) }
func (r *refWatch) Close() error                      { return r.w.Close() }
