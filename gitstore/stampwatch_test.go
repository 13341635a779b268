package gitstore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestStampWatcherAgreesWithFileStamp changes a directory tree the ways
// git, lazy and people do (a lock file renamed over a ref, a file written
// in place or touched, directories removed, recreated and moved away) and
// asks after every change: the watcher's stamp must be FileStamp's, byte
// for byte. It must also have stat'ed less than FileStamp would.
func TestStampWatcherAgreesWithFileStamp(t *testing.T) {
	testrepo.FullLane(t)
	root := t.TempDir()
	paths := []string{
		filepath.Join(root, "packed-refs"),
		filepath.Join(root, "refs", "lazy", "tasks"),
		filepath.Join(root, "refs", "heads", "main"),
		filepath.Join(root, "refs", "heads", "lazy"),
		filepath.Join(root, "refs", "remotes", "origin", "HEAD"),
		filepath.Join(root, "HEAD"),
	}
	files := []string{
		"packed-refs", "HEAD", "refs/heads/main", "refs/heads/lazy/a", "refs/heads/lazy/b",
		"refs/lazy/tasks/t1", "refs/lazy/tasks/t2", "refs/remotes/origin/HEAD", "refs/other",
	}
	dirs := []string{"refs", "refs/heads", "refs/heads/lazy", "refs/lazy", "refs/lazy/tasks", "refs/remotes", "refs/remotes/origin"}
	s := NewStampWatcher()
	t.Cleanup(func() { _ = s.Close() })
	if runtime.GOOS == "linux" && !s.Watching() {
		t.Log("no inotify instance to be had: the watcher stats every time")
	}
	rng := rand.New(rand.NewPCG(7, 42))
	seq := 0
	when := time.Unix(1_700_000_000, 0)
	calls := 0
	for step := range 3000 {
		f := filepath.Join(root, filepath.FromSlash(files[rng.IntN(len(files))]))
		d := filepath.Join(root, filepath.FromSlash(dirs[rng.IntN(len(dirs))]))
		var what string
		switch op := rng.IntN(9); op {
		case 0, 1: // git's way: a lock file renamed over the file
			what = "rename over " + f
			if os.MkdirAll(filepath.Dir(f), 0o755) == nil {
				seq++
				lock := f + ".lock"
				if os.WriteFile(lock, []byte(fmt.Sprintf("%040d\n", seq)), 0o644) == nil {
					_ = os.Rename(lock, f)
				}
			}
		case 2: // written in place, same size
			what = "write in place " + f
			seq++
			if fh, err := os.OpenFile(f, os.O_WRONLY, 0); err == nil {
				_, _ = fmt.Fprintf(fh, "%040d\n", seq)
				_ = fh.Close()
			}
		case 3:
			what = "touch " + f
			when = when.Add(time.Second)
			_ = os.Chtimes(f, when, when)
		case 4:
			what = "remove " + f
			_ = os.Remove(f)
		case 5:
			what = "remove all of " + d
			_ = os.RemoveAll(d)
		case 6:
			what = "move away and back " + d
			away := filepath.Join(root, "away")
			if os.Rename(d, away) == nil {
				_ = os.MkdirAll(filepath.Dir(d), 0o755)
				_ = os.Rename(away, d)
			}
		case 7:
			what = "mkdir " + d
			_ = os.MkdirAll(d, 0o755)
		case 8:
			what = "touch dir " + d
			when = when.Add(time.Second)
			_ = os.Chtimes(d, when, when)
		}
		for range 1 + rng.IntN(3) {
			calls++
			got, gotNewest, err := s.Stamp(paths...)
			want, wantNewest, werr := FileStamp(paths...)
			if (err == nil) != (werr == nil) || got != want || !gotNewest.Equal(wantNewest) {
				t.Fatalf("step %d, after %s:\nwatcher   %q %v %v\nFileStamp %q %v %v", step, what, got, gotNewest, err, want, wantNewest, werr)
			}
		}
	}
	if s.Watching() && s.stats >= calls*len(paths)/2 {
		t.Errorf("the watcher stat'ed %d times in %d calls of %d paths: it kept next to nothing", s.stats, calls, len(paths))
	}
	t.Logf("%d stamps of %d paths: %d stats (FileStamp: %d)", calls, len(paths), s.stats, calls*len(paths))
}

// TestStampWatcherStatsAStampTooOld: a kept stamp is trusted for
// maxStampAge at most, whatever the events said.
func TestStampWatcherStatsAStampTooOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s := NewStampWatcher()
	t.Cleanup(func() { _ = s.Close() })
	s.now = func() time.Time { return now }
	for range 3 {
		if _, _, err := s.Stamp(p); err != nil {
			t.Fatal(err)
		}
	}
	before := s.stats
	if s.Watching() && before != 1 {
		t.Fatalf("%d stats for three stamps of an unchanged file", before)
	}
	now = now.Add(maxStampAge)
	if _, _, err := s.Stamp(p); err != nil {
		t.Fatal(err)
	}
	if s.stats != before+1 {
		t.Fatalf("a stamp %v old was trusted", maxStampAge)
	}
}

func BenchmarkStampWatcher(b *testing.B) {
	dir := b.TempDir()
	var paths []string
	for i := range 7 {
		p := filepath.Join(dir, "refs", fmt.Sprint(i), "f")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	s := NewStampWatcher()
	b.Cleanup(func() { _ = s.Close() })
	b.Run("watcher", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.Stamp(paths...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FileStamp", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := FileStamp(paths...); err != nil {
				b.Fatal(err)
			}
		}
	})
}
