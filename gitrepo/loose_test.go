package gitrepo

import (
	"bytes"
	"compress/zlib"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// looseFile is the path of loose object h in dir's repository.
func looseFile(dir string, h plumbing.Hash) string {
	s := h.String()
	return filepath.Join(dir, ".git", "objects", s[:2], s[2:])
}

// gitLoose has git write content as a loose object of typ and returns its name.
func gitLoose(t *testing.T, dir string, typ plumbing.ObjectType, content []byte) plumbing.Hash {
	t.Helper()
	f := filepath.Join(t.TempDir(), "content")
	if err := os.WriteFile(f, content, 0o644); err != nil {
		t.Fatal(err)
	}
	h := plumbing.NewHash(strings.TrimSpace(testrepo.Git(t, dir, "hash-object", "-w", "--literally", "-t", typ.String(), f)))
	if _, err := os.Stat(looseFile(dir, h)); err != nil {
		t.Fatalf("git did not write %s loose: %v", h, err)
	}
	return h
}

// Loose objects git wrote read back as git reads them, of every type and
// size, and an object over the limit is refused after its header alone.
func TestLooseObjectsReadAsGitWroteThem(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	dir := testrepo.New(t)
	o := NewObjects(filepath.Join(dir, ".git"))
	rng := rand.New(rand.NewPCG(5, 6))
	for i, c := range randomBlobs(rng, 40) {
		c = bytes.Repeat(c, 1+i*40) // up to ~500 KB
		typ := []plumbing.ObjectType{plumbing.BlobObject, plumbing.TagObject}[i%2]
		h := gitLoose(t, dir, typ, c)
		obj, err := o.read(typ, h, "blob", 1<<20)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		got := obj.(*packedObject).data
		if !bytes.Equal(got, c) || obj.Size() != int64(len(c)) || obj.Type() != typ {
			t.Fatalf("object %d read as %d bytes of %s, git wrote %d of %s", i, len(got), obj.Type(), len(c), typ)
		}
		if _, err := o.readLoose(plumbing.CommitObject, h, 1<<20); !errors.Is(err, plumbing.ErrObjectNotFound) {
			t.Fatalf("object %d of type %s read as a commit: %v", i, typ, err)
		}
		small, err := o.readLoose(typ, h, int64(len(c)-1))
		if err != nil || small.Size() != int64(len(c)) || small.(*packedObject).data != nil {
			t.Fatalf("object %d over its limit: %v", i, err)
		}
		if _, err := o.read(typ, h, "blob", int64(len(c)-1)); !errors.Is(err, ErrOversize) {
			t.Fatalf("object %d over its limit read as %v", i, err)
		}
	}
	// A commit and a tree as git writes them, through lazy's decoders.
	head := strings.TrimSpace(testrepo.Git(t, dir, "rev-parse", "HEAD"))
	c, err := o.ReadCommit(oidOf(plumbing.NewHash(head)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.ReadTree(c.TreeHash); err != nil {
		t.Fatal(err)
	}
}

// Random damage to a loose file reads as an error or as exactly what was
// written (zlib's checksum guards the content), never as a panic, other
// bytes, or a read past what the header says. read then asks git, which
// fails too, and the damage is what it reports.
func TestCorruptLooseObjectsFailCleanly(t *testing.T) {
	t.Parallel()
	dir := testrepo.New(t)
	o := NewObjects(filepath.Join(dir, ".git"))
	content := bytes.Repeat([]byte("lazy keeps its records in git\n"), 50)
	h := gitLoose(t, dir, plumbing.BlobObject, content)
	path := looseFile(dir, h)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	// Hand-made damage: what git itself would not write.
	deflate := func(s string) []byte {
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		_, _ = w.Write([]byte(s))
		_ = w.Close()
		return b.Bytes()
	}
	cases := map[string][]byte{
		"empty":           {},
		"not zlib":        []byte("blob 3\x00abc"),
		"truncated":       good[:len(good)/2],
		"longer content":  deflate("blob 3\x00abcd"),
		"shorter content": deflate("blob 5\x00abcd"),
		"no NUL":          deflate(strings.Repeat("blob 3", 10)),
		"bad size":        deflate("blob 0x3\x00abc"),
		"leading zero":    deflate("blob 03\x00abc"),
		"no size":         deflate("blob\x00abc"),
		"unknown type":    deflate("bolb 3\x00abc"),
		"delta type":      deflate("ofs-delta 3\x00abc"),
		"huge size":       deflate("blob 99999999999999999999\x00abc"),
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for k := 0; k < 500; k++ {
		b := append([]byte(nil), good...)
		for j := 0; j < 1+rng.IntN(4); j++ {
			b[rng.IntN(len(b))] = byte(rng.Uint32())
		}
		cases["random "+string(rune('a'+k%26))+strings.Repeat("'", k/26)] = b
	}
	for name, b := range cases {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		obj, err := o.readLoose(plumbing.AnyObject, h, 1<<20)
		if err == nil {
			if got := obj.(*packedObject).data; obj.Type() != plumbing.BlobObject || !bytes.Equal(got, content) {
				t.Fatalf("%s: read as %d bytes of %s", name, len(got), obj.Type())
			}
			continue
		}
		if strings.HasPrefix(name, "random") {
			continue
		}
		if !errors.Is(err, errCorruptLoose) {
			t.Fatalf("%s: %v, want it called corrupt", name, err)
		}
		if _, err := o.read(plumbing.BlobObject, h, "blob", 1<<20); err == nil || !strings.Contains(err.Error(), "corrupt") {
			t.Fatalf("%s: read reports %v, want the damage", name, err)
		}
	}
}
