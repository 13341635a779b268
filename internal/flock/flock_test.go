package flock

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestExclusive(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	a, err := TryLock(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(p); !errors.Is(err, ErrHeld) {
		t.Fatalf("second TryLock: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, p); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire while held: %v", err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	b, err := Acquire(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Release()
}

func TestHeld(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	if Held(p) {
		t.Fatal("a missing lock file is held")
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Held created the file: %v", err)
	}
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd to count descriptors in")
		}
		return len(ents)
	}
	before := fds()
	l, err := TryLock(p)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if !Held(p) {
			t.Fatal("a held lock is not held")
		}
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if Held(p) {
			t.Fatal("a released lock is held")
		}
	}
	// Each probe's shared lock went with its descriptor: the lock can be
	// taken at once, and no descriptor is left open.
	l, err = TryLock(p)
	if err != nil {
		t.Fatalf("TryLock after 200 probes: %v", err)
	}
	_ = l.Release()
	if after := fds(); after != before {
		t.Fatalf("%d descriptors open before the probes, %d after", before, after)
	}
}

// TestReleaseFreesADescriptorACopyStillHolds: a child started while the
// lock is held has a copy of its descriptor until its exec; Dup makes
// that copy here. Release must free the lock at once all the same, or a
// TryLock right after it is refused while the child starts.
func TestReleaseFreesADescriptorACopyStillHolds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	a, err := TryLock(p)
	if err != nil {
		t.Fatal(err)
	}
	child, err := syscall.Dup(int(a.f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Close(child) }()
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if Held(p) {
		t.Fatal("Held after Release, with a copy of the descriptor open")
	}
	b, err := TryLock(p)
	if err != nil {
		t.Fatalf("TryLock after Release, with a copy of the descriptor open: %v", err)
	}
	_ = b.Release()
}
