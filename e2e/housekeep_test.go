package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/flock"
)

func TestDemoRunsEveryStep(t *testing.T) {
	r := newRepo(t)
	out := r.ok("demo", "--dir", t.TempDir())
	if !strings.Contains(out, "Demo complete") || !strings.Contains(out, "every one checked") {
		t.Fatalf("demo output:\n%s", out)
	}
}

func looseObjects(t *testing.T, gitDir string) int {
	t.Helper()
	n := 0
	dirs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "[0-9a-f][0-9a-f]"))
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err == nil {
			n += len(entries)
		}
	}
	return n
}

// TestWritesTriggerBackgroundHousekeeping sets a low loose-object limit
// and checks that ordinary CLI writes start a detached housekeeping pass
// that packs objects and refs while every task stays readable.
func TestWritesTriggerBackgroundHousekeeping(t *testing.T) {
	r := newRepo(t)
	r.ok("init")
	r.git("config", "lazy.gc.looseObjects", "60")
	gitDir := filepath.Join(r.dir, ".git")
	const n = 40
	for i := 0; i < n; i++ {
		r.ok("create", "task number "+string(rune('a'+i%26))+strings.Repeat("x", i/26))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		loose := looseObjects(t, gitDir)
		packs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.pack"))
		if len(packs) > 0 && loose < 4*n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d creates: %d loose objects and %d packs; housekeeping never ran", n, loose, len(packs))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Wait for the pass to finish (it holds the housekeeping lock), then
	// check that refs were packed and nothing was lost.
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(gitDir, "packed-refs")); err == nil && strings.Contains(string(b), "refs/lazy/tasks/") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b, err := os.ReadFile(filepath.Join(gitDir, "packed-refs")); err != nil || !strings.Contains(string(b), "refs/lazy/slugs/") {
		t.Fatalf("refs were not packed: %v", err)
	}
	// Hold the housekeeping lock until the repository is gone, so a late
	// background pass cannot write into a directory being removed.
	lock, err := flock.Acquire(context.Background(), filepath.Join(gitDir, "lazy", "locks", "housekeep.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = os.RemoveAll(r.dir)
		_ = lock.Release()
	}()
	if got := len(r.list()); got != n {
		t.Fatalf("%d tasks after housekeeping, want %d", got, n)
	}
	r.git("fsck", "--no-dangling")
}
