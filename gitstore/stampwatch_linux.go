package gitstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"syscall"
)

// inotifyWatcher is the dirWatcher of Linux.
type inotifyWatcher struct {
	mu    sync.Mutex
	fd    int
	byDir map[string]watchID
	// removed are the watches reset took away, whose IN_IGNORED is then
	// lazy's own doing and no news.
	removed map[watchID]bool
	buf     []byte
}

// watchMask is every event that can change a stamp of the directory or
// of an entry in it. IN_ONLYDIR: a path that became a file is refused.
const watchMask = syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO |
	syscall.IN_MODIFY | syscall.IN_ATTRIB | syscall.IN_CLOSE_WRITE | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF | syscall.IN_ONLYDIR

func newDirWatcher() (dirWatcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	return &inotifyWatcher{fd: fd, byDir: map[string]watchID{}, removed: map[watchID]bool{}, buf: make([]byte, 16<<10)}, nil
}

func (w *inotifyWatcher) watch(dir string) (watchID, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// Added afresh every time, never answered from byDir: the path may
	// name another directory than when it was first watched (one above
	// it renamed and made again), and adding a watch is idempotent for
	// the same directory. It runs only when a kept stamp is refreshed.
	wd, err := syscall.InotifyAddWatch(w.fd, dir, watchMask)
	if err != nil {
		return 0, err
	}
	if wd < 0 || wd > math.MaxInt32 {
		return 0, fmt.Errorf("inotify gave watch descriptor %d", wd)
	}
	w.byDir[dir] = watchID(wd) // for reset
	return watchID(wd), nil
}

func (w *inotifyWatcher) changed() (ids []watchID, all bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		n, err := syscall.Read(w.fd, w.buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if n <= 0 {
			// EAGAIN: nothing more. Any other error loses events: say so.
			return ids, all || !errors.Is(err, syscall.EAGAIN)
		}
		// struct inotify_event: wd, mask, cookie, len, then len bytes of
		// name, in the machine's byte order.
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := w.buf[off:n]
			wd := watchID(binary.NativeEndian.Uint32(ev[0:4]))
			mask := binary.NativeEndian.Uint32(ev[4:8])
			off += syscall.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(ev[12:16]))
			if mask&syscall.IN_IGNORED != 0 && w.removed[wd] {
				delete(w.removed, wd)
				continue
			}
			if mask&(syscall.IN_Q_OVERFLOW|syscall.IN_IGNORED|syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF|syscall.IN_UNMOUNT) != 0 {
				// Events lost, or a watched directory gone: its watch is,
				// or will be, dropped by the kernel, so every watch is
				// set up again from the paths.
				all = true
				w.reset()
				continue
			}
			ids = append(ids, wd)
		}
	}
}

// reset removes every watch; watch adds them again as stamps are asked.
func (w *inotifyWatcher) reset() {
	for dir, id := range w.byDir {
		if _, err := syscall.InotifyRmWatch(w.fd, uint32(id)); err == nil {
			w.removed[id] = true
		}
		delete(w.byDir, dir)
	}
	if len(w.removed) > 1024 {
		// An IN_IGNORED lost with an overflowed queue never comes: the set
		// is only an optimization, so it is not let grow.
		clear(w.removed)
	}
}

func (w *inotifyWatcher) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return syscall.Close(w.fd)
}
