// Package flock provides OS file locks (flock(2)) that the kernel releases
// when the holding process dies, so a crashed lazy never leaves a lock
// that needs a human to remove it.
package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrHeld is returned by TryLock when another process holds the lock.
var ErrHeld = errors.New("lock is held by another process")

// Lock is a held file lock.
type Lock struct {
	f    *os.File
	path string
}

func open(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// TryLock takes the exclusive lock at path without waiting.
func TryLock(path string) (*Lock, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrHeld
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	l := &Lock{f: f, path: path}
	l.writeOwner()
	return l, nil
}

// Acquire waits for the exclusive lock at path until ctx ends.
func Acquire(ctx context.Context, path string) (*Lock, error) {
	wait := time.Millisecond
	for {
		l, err := TryLock(path)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, ErrHeld) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s (held by pid %s): %w", path, Owner(path), ctx.Err())
		case <-time.After(wait):
		}
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}

// writeOwner records the holder's pid in the file so that a refusal can
// say who holds it. The lock itself is the flock, not the content. The
// pid is written padded to a fixed width in one write, with no truncation
// first, so a reader sees the previous holder's pid or this one, never
// an empty file or a mix of the two.
func (l *Lock) writeOwner() {
	b := fmt.Appendf(nil, "%-20d\n", os.Getpid())
	if _, err := l.f.WriteAt(b, 0); err == nil {
		_ = l.f.Truncate(int64(len(b))) // anything longer there was not a pid
	}
}

// Owner returns the pid written by the last holder of the lock at path,
// or "unknown".
func Owner(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// Release drops the lock. The file stays: removing it would race with a
// process that opened it and is about to lock it.
//
// It unlocks before it closes: a flock belongs to the open file
// description, and a child this process is starting at that moment
// holds a copy of the descriptor from its fork until its exec closes it
// (O_CLOEXEC). Closing alone left the lock held for that window, and a
// TryLock right after Release (a gate's hand-back taking the worktree
// lock while another goroutine started git) was refused as "held".
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	unlockErr := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	err := l.f.Close()
	if err == nil && unlockErr != nil {
		err = fmt.Errorf("unlock %s: %w", l.path, unlockErr)
	}
	l.f = nil
	return err
}

// Held reports whether some process holds the exclusive lock at path. It
// probes with a shared lock, released at once, so concurrent probes never
// block each other; a holder that is taking the lock retries past a
// probe (see Acquire). A missing file is not held, and is not created.
//
// A reconcile pass probes every running turn's lock, so this is three
// system calls: a raw descriptor, not an *os.File (which would try the
// poller and switch blocking modes), and the shared lock it took is
// unlocked before the close, for the reason Release gives: a child being
// started meanwhile would otherwise hold it on past the close.
func Held(path string) bool {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer func() { _ = syscall.Close(fd) }()
	err = syscall.Flock(fd, syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(fd, syscall.LOCK_UN)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}
