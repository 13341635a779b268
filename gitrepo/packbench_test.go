package gitrepo

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// fastImport packs n small blobs, reachable from refs/heads/big, through
// git fast-import and returns one of them: a repository of n objects in
// seconds.
func fastImport(tb testing.TB, dir string, n int) plumbing.Hash {
	tb.Helper()
	var in bytes.Buffer
	for i := 0; i < n; i++ {
		d := fmt.Sprintf("filler blob %d %s\n", i, strings.Repeat("x", i%50))
		fmt.Fprintf(&in, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(d), d)
	}
	in.WriteString("commit refs/heads/big\ncommitter b <b@b> 0 +0000\ndata 3\nbig\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "M 100644 :%d d%d/f%d\n", i+1, i/1000, i)
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("fast-import: %v\n%s", err, out)
	}
	testrepo.Git(tb, dir, "gc", "-q")
	return plumbing.NewHash(testrepo.Git(tb, dir, "rev-parse", fmt.Sprintf("big:d%d/f%d", (n/2)/1000, n/2)))
}

// benchPackedRead reads one packed blob as a new process does: nothing
// mapped or decoded yet. It must cost the same at 10k and 100k objects.
func benchPackedRead(b *testing.B, n int) {
	dir := testrepo.New(b)
	h := fastImport(b, dir, n)
	common := filepath.Join(dir, ".git")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o := NewObjects(common)
		if _, err := o.ReadBlob(oidOf(h), "task.json", 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPackedRead10k(b *testing.B)  { benchPackedRead(b, 10000) }
func BenchmarkPackedRead100k(b *testing.B) { benchPackedRead(b, 100000) }

// benchGoGitRead is the same read through go-git alone, as before.
func benchGoGitRead(b *testing.B, n int) {
	dir := testrepo.New(b)
	h := fastImport(b, dir, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st := filesystem.NewStorageWithOptions(osfs.New(filepath.Join(dir, ".git")), cache.NewObjectLRU(8<<20), filesystem.Options{LargeObjectThreshold: 256 << 10})
		if _, err := st.EncodedObject(plumbing.BlobObject, h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGoGitRead10k(b *testing.B)  { benchGoGitRead(b, 10000) }
func BenchmarkGoGitRead100k(b *testing.B) { benchGoGitRead(b, 100000) }

// benchReadRef looks a ref up in a new Repo each time (a new process)
// or in one Repo (a process's second lookup).
func benchReadRef(b *testing.B, n int, name string, fresh bool) {
	dir := testrepo.New(b)
	if n > 0 {
		testrepo.PackRefs(b, dir, n)
	}
	repo := NewRefs(filepath.Join(dir, ".git"))
	want := strings.HasPrefix(name, "refs/lazy/tasks/"+"0")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := repo
		if fresh {
			r = NewRefs(repo.dir)
		}
		_, ok, err := r.ReadRef(name)
		if err != nil || (ok != want && n > 0) {
			b.Fatalf("%s: %v %v", name, ok, err)
		}
	}
}

var (
	hitRef  = "refs/lazy/tasks/" + fmt.Sprintf("%016x", 5000*7919)
	missRef = "refs/lazy/tasks/" + "ffffffffffff0000"
)

func BenchmarkReadRefHitEmpty(b *testing.B)        { benchReadRef(b, 0, hitRef, true) }
func BenchmarkReadRefHit10k(b *testing.B)          { benchReadRef(b, 10000, hitRef, true) }
func BenchmarkReadRefMissEmpty(b *testing.B)       { benchReadRef(b, 0, missRef, true) }
func BenchmarkReadRefMiss10k(b *testing.B)         { benchReadRef(b, 10000, missRef, true) }
func BenchmarkReadRefMiss10kCached(b *testing.B)   { benchReadRef(b, 10000, missRef, false) }
func BenchmarkReadRefHit10kCached(b *testing.B)    { benchReadRef(b, 10000, hitRef, false) }
func BenchmarkReadRefMissEmptyCached(b *testing.B) { benchReadRef(b, 0, missRef, false) }
