package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// packBlobs writes contents as loose blobs, packs exactly them with git
// pack-objects (args choose the index version, deltas...), removes the
// loose copies and returns the blobs' names.
func packBlobs(t testing.TB, dir string, contents [][]byte, args ...string) []plumbing.Hash {
	t.Helper()
	o := NewObjects(filepath.Join(dir, ".git"))
	var list strings.Builder
	hs := make([]plumbing.Hash, len(contents))
	for i, c := range contents {
		h, err := o.write(plumbing.BlobObject, c)
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = h
		list.WriteString(h.String() + "\n")
	}
	cmd := exec.Command("git", append([]string{"pack-objects", "-q"}, append(args, filepath.Join(dir, ".git", "objects", "pack", "pack"))...)...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(list.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pack-objects: %v\n%s", err, out)
	}
	testrepo.Git(t, dir, "prune-packed")
	return hs
}

func randomBlobs(rng *rand.Rand, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		b := make([]byte, rng.IntN(300))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		out[i] = append(b, fmt.Sprintf("#%d", i)...)
	}
	return out
}

// similarBlobs returns n versions of one text, each a small edit of the
// previous, which git packs as long delta chains.
func similarBlobs(n int) [][]byte {
	var base strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&base, "line %d of a task record that changes a little each time\n", i)
	}
	text := []byte(base.String())
	out := make([][]byte, n)
	for i := range out {
		at := (i * 37) % (len(text) - 10)
		text = append(append(append([]byte{}, text[:at]...), fmt.Sprintf("<%d>", i)...), text[at:]...)
		out[i] = text
	}
	return out
}

// onlyPack returns the fast reader's view of the repository's one pack.
func onlyPack(t testing.TB, dir string) *pack {
	t.Helper()
	set := scanPacks(filepath.Join(dir, ".git", "objects"))
	if len(set.packs) != 1 {
		t.Fatalf("%d packs, want 1", len(set.packs))
	}
	if err := set.packs[0].open(); err != nil {
		t.Fatal(err)
	}
	return set.packs[0]
}

// checkAll reads every object back through the fast reader and through
// objects.read, and probes names next to each one that are not there.
func checkAll(t *testing.T, dir string, p *pack, hs []plumbing.Hash, contents [][]byte) {
	t.Helper()
	for i, h := range hs {
		off, ok, err := p.idx.find(h)
		if err != nil || !ok {
			t.Fatalf("object %d %s not found: %v", i, h, err)
		}
		obj, err := p.readObject(h, off, plumbing.BlobObject, 1<<20)
		if err != nil {
			t.Fatalf("object %d %s: %v", i, h, err)
		}
		if !bytes.Equal(obj.data, contents[i]) || obj.Size() != int64(len(contents[i])) {
			t.Fatalf("object %d %s: read %d bytes, want %d", i, h, len(obj.data), len(contents[i]))
		}
		for _, miss := range neighbours(h) {
			if _, ok, _ := p.idx.find(miss); ok && !contains(hs, miss) {
				t.Fatalf("absent %s found", miss)
			}
		}
	}
	o := NewObjects(filepath.Join(dir, ".git"))
	for i, h := range hs {
		b, err := o.ReadBlob(oidOf(h), "task.json", 1<<20)
		if err != nil || !bytes.Equal(b, contents[i]) {
			t.Fatalf("readBlob %s: %v", h, err)
		}
	}
}

func neighbours(h plumbing.Hash) []plumbing.Hash {
	lo, hi := h, h
	lo[19]--
	hi[19]++
	var first, last plumbing.Hash
	for i := range last {
		last[i] = 0xff
	}
	return []plumbing.Hash{lo, hi, first, last}
}

func contains(hs []plumbing.Hash, h plumbing.Hash) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}

func TestPackIndexFindsEveryObject(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes thousands of objects: the full suite runs it (scripts/test.sh)")
	}
	dir := testrepo.New(t)
	contents := randomBlobs(rand.New(rand.NewPCG(7, 8)), 1500)
	hs := packBlobs(t, dir, contents)
	p := onlyPack(t, dir)
	if p.idx.n != uint64(len(hs)) || p.idx.large != 0 {
		t.Fatalf("index of %d objects, %d large offsets", p.idx.n, p.idx.large)
	}
	// The first and last names, and the edges of every fan-out bucket.
	sorted := append([]plumbing.Hash(nil), hs...)
	sort.Slice(sorted, func(i, j int) bool { return bytes.Compare(sorted[i][:], sorted[j][:]) < 0 })
	for i := uint64(0); i < p.idx.n; i++ {
		if name, err := p.idx.name(i); err != nil || !bytes.Equal(name, sorted[i][:]) {
			t.Fatalf("name %d is %x (%v), want %s", i, name, err, sorted[i])
		}
	}
	for b := 0; b < 256; b++ {
		lo, hi := p.idx.fanout(b), p.idx.fanout(b+1)
		for _, i := range []uint64{lo, hi - 1} {
			if lo == hi {
				break
			}
			if _, ok, _ := p.idx.find(sorted[i]); !ok {
				t.Fatalf("bucket %02x edge %d not found", b, i)
			}
		}
	}
	checkAll(t, dir, p, hs, contents)
	// The same, bisecting one name at a time as for a huge bucket.
	p.idx.bucketMax = 0
	checkAll(t, dir, p, hs, contents)
}

// With offset threshold 1, git writes every offset but the first to the
// 64-bit table, the layout of packs over 2 GiB.
func TestPackIndexLargeOffsets(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	dir := testrepo.New(t)
	contents := randomBlobs(rand.New(rand.NewPCG(9, 10)), 300)
	hs := packBlobs(t, dir, contents, "--index-version=2,0x1")
	p := onlyPack(t, dir)
	if p.idx.large == 0 {
		t.Fatal("git wrote no 64-bit offsets")
	}
	checkAll(t, dir, p, hs, contents)
}

// An index of version 1, which go-git cannot read ("malformed IDX
// file"), is read by the fast reader.
func TestPackIndexVersion1(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	dir := testrepo.New(t)
	contents := randomBlobs(rand.New(rand.NewPCG(11, 12)), 500)
	hs := packBlobs(t, dir, contents, "--index-version=1")
	p := onlyPack(t, dir)
	if p.idx.version != 1 {
		t.Fatalf("index of version %d", p.idx.version)
	}
	checkAll(t, dir, p, hs, contents)
	p.idx.bucketMax = 0
	checkAll(t, dir, p, hs, contents)
}

// deltaTypes counts the entry types of a pack.
func deltaTypes(t *testing.T, p *pack, hs []plumbing.Hash) map[int]int {
	t.Helper()
	types := map[int]int{}
	for _, h := range hs {
		off, _, _ := p.idx.find(h)
		e, err := p.entryAt(off)
		if err != nil {
			t.Fatal(err)
		}
		types[e.typ]++
	}
	return types
}

func TestPackDeltaChains(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	contents := similarBlobs(400)
	for _, tc := range []struct {
		name  string
		args  []string
		delta int
	}{
		{"ofs", []string{"--delta-base-offset", "--depth=50", "--window=50"}, packOfsDelta},
		{"ref", []string{"--depth=50", "--window=50"}, packRefDelta},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testrepo.New(t)
			hs := packBlobs(t, dir, contents, tc.args...)
			p := onlyPack(t, dir)
			types := deltaTypes(t, p, hs)
			if types[tc.delta] < len(hs)/2 {
				t.Fatalf("entry types %v: git wrote too few deltas of type %d", types, tc.delta)
			}
			depth := 0
			for _, h := range hs {
				off, _, _ := p.idx.find(h)
				d := 0
				for e, _ := p.entryAt(off); e.typ == packOfsDelta || e.typ == packRefDelta; d++ {
					next := e.baseOff
					if e.typ == packRefDelta {
						next, _, _ = p.idx.find(e.baseRef)
					}
					e, _ = p.entryAt(next)
				}
				depth = max(depth, d)
			}
			if depth < 10 {
				t.Fatalf("longest chain %d", depth)
			}
			checkAll(t, dir, p, hs, contents)
			// The same again with a cold cache, newest first.
			p.bases = nil
			for i := len(hs) - 1; i >= 0; i-- {
				off, _, _ := p.idx.find(hs[i])
				obj, err := p.readObject(hs[i], off, plumbing.BlobObject, 1<<20)
				if err != nil || !bytes.Equal(obj.data, contents[i]) {
					t.Fatalf("cold read %d: %v", i, err)
				}
			}
		})
	}
}

// The size limit is checked before any content is read: from the entry
// header of a whole object, from the delta's header for a delta.
func TestPackReadChecksSizeFirst(t *testing.T) {
	t.Parallel()
	dir := testrepo.New(t)
	contents := similarBlobs(60)
	hs := packBlobs(t, dir, contents, "--delta-base-offset")
	p := onlyPack(t, dir)
	sawDelta, sawWhole := false, false
	for i, h := range hs {
		off, _, _ := p.idx.find(h)
		e, _ := p.entryAt(off)
		sawDelta = sawDelta || e.typ == packOfsDelta
		sawWhole = sawWhole || e.typ == packBlob
		limit := int64(len(contents[i]) - 1)
		obj, err := p.readObject(h, off, plumbing.BlobObject, limit)
		if err != nil || obj.data != nil || obj.Size() != int64(len(contents[i])) {
			t.Fatalf("over the limit: %v, %d bytes read, size %d", err, len(obj.data), obj.Size())
		}
	}
	if !sawDelta || !sawWhole {
		t.Fatalf("no delta (%v) or no whole object (%v)", sawDelta, sawWhole)
	}
	o := NewObjects(filepath.Join(dir, ".git"))
	if _, err := o.ReadBlob(oidOf(hs[len(hs)-1]), "slug", 1<<10); !errors.Is(err, ErrOversize) {
		t.Fatalf("oversize blob read: %v", err)
	}
	// The wrong type reads as missing, as go-git reports it.
	if _, err := o.ReadTree(oidOf(hs[0])); !errors.Is(err, ErrMissing) {
		t.Fatalf("blob read as a tree: %v", err)
	}
}

// A pack listed before a concurrent git repack deleted it: the read
// re-scans the pack directory and finds the object in the new pack.
func TestPackReadAfterConcurrentRepack(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	dir := testrepo.New(t)
	contents := randomBlobs(rand.New(rand.NewPCG(13, 14)), 100)
	hs := packBlobs(t, dir, contents)
	o := NewObjects(filepath.Join(dir, ".git"))
	o.packSet() // listed, not yet opened
	// Make the blobs reachable so repack keeps them, then repack into a
	// new pack and delete the old one.
	var tree strings.Builder
	for i, h := range hs {
		fmt.Fprintf(&tree, "100644 blob %s\tf%d\n", h, i)
	}
	th := strings.TrimSpace(gitIn(t, dir, tree.String(), "mktree"))
	testrepo.Git(t, dir, "update-ref", "refs/keep", strings.TrimSpace(testrepo.Git(t, dir, "commit-tree", "-m", "keep", th)))
	before, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	testrepo.Git(t, dir, "repack", "-adf", "-q")
	after, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	if len(before) != 1 || len(after) != 1 || before[0] == after[0] {
		t.Fatalf("repack did not replace the pack: %v -> %v", before, after)
	}
	for i, h := range hs {
		if b, err := o.ReadBlob(oidOf(h), "task.json", 1<<20); err != nil || !bytes.Equal(b, contents[i]) {
			t.Fatalf("readBlob %s after repack: %v", h, err)
		}
	}
	// A set opened before the repack keeps reading the deleted pack.
	o.Refresh()
	o.packSet().packs[0].open()
	testrepo.Git(t, dir, "repack", "-adf", "-q")
	for i, h := range hs {
		if b, err := o.ReadBlob(oidOf(h), "task.json", 1<<20); err != nil || !bytes.Equal(b, contents[i]) {
			t.Fatalf("readBlob %s from a deleted pack: %v", h, err)
		}
	}
	// Objects packed after the scan are found too.
	more := randomBlobs(rand.New(rand.NewPCG(15, 16)), 20)
	o.Refresh()
	o.packSet()
	hs2 := packBlobs(t, dir, more)
	for i, h := range hs2 {
		if b, err := o.ReadBlob(oidOf(h), "task.json", 1<<20); err != nil || !bytes.Equal(b, more[i]) {
			t.Fatalf("readBlob %s from a pack newer than the scan: %v", h, err)
		}
	}
}

// FuzzPackIndex feeds hostile index files to the parser and lookups: they
// must fail cleanly, never panic or read out of bounds.
func FuzzPackIndex(f *testing.F) {
	dir := testrepo.New(f)
	contents := randomBlobs(rand.New(rand.NewPCG(19, 20)), 40)
	hs := packBlobs(f, dir, contents, "--index-version=2,0x100")
	idx, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.idx"))
	good, err := os.ReadFile(idx[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(good[:idxNamesStart+idxTrailerLen])
	bad := append([]byte(nil), good...)
	bad[idxNamesStart+28*40-1] = 0xff // a large-offset index out of range
	f.Add(bad)
	dir1 := testrepo.New(f)
	packBlobs(f, dir1, contents, "--index-version=1")
	idx1, _ := filepath.Glob(filepath.Join(dir1, ".git", "objects", "pack", "*.idx"))
	v1, err := os.ReadFile(idx1[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v1)
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := parsePackIndex(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		for _, max := range []uint64{4096, 0} {
			x.bucketMax = max
			for _, h := range append(hs, plumbing.Hash{}, plumbing.NewHash(strings.Repeat("f", 40))) {
				_, _, _ = x.find(h)
			}
			for i := uint64(0); i < x.n && i < 1000; i++ {
				var h plumbing.Hash
				name, err := x.name(i)
				if err != nil {
					t.Fatalf("name %d of %d unreadable in an index parsed as whole: %v", i, x.n, err)
				}
				copy(h[:], name)
				inBucket := x.fanout(int(h[0])) <= i && i < x.fanout(int(h[0])+1)
				if _, ok, err := x.find(h); !ok && err == nil && inBucket && sortedIdx(x) {
					t.Fatalf("name %d of a sorted index not found", i)
				}
			}
		}
	})
}

// FuzzPackEntries reads objects out of hostile pack bytes behind a valid
// index: corrupt headers, offsets, zlib streams and deltas must fail
// cleanly.
func FuzzPackEntries(f *testing.F) {
	dir := testrepo.New(f)
	contents := similarBlobs(30)
	hs := packBlobs(f, dir, contents, "--delta-base-offset")
	p := onlyPack(f, dir)
	good := append([]byte(nil), p.packMap.data...)
	f.Add(good, uint16(0))
	f.Add(good, uint16(len(good)/2))
	f.Add(good[:len(good)/2], uint16(7))
	f.Fuzz(func(t *testing.T, data []byte, flip uint16) {
		if len(data) > 0 {
			data = append([]byte(nil), data...)
			data[int(flip)%len(data)] ^= 0x5a
		}
		q := &pack{idx: p.idx, packMap: &mapping{data: data}}
		if len(data) < 32 {
			return // open refuses such a pack before any read
		}
		for _, h := range hs {
			off, ok, err := q.idx.find(h)
			if err != nil || !ok {
				continue
			}
			_, _ = q.readObject(h, off, plumbing.BlobObject, 1<<20)
		}
	})
}

// sortedIdx reports whether an index's names are strictly increasing, as
// git writes them; only then must every name be found.
func sortedIdx(x *packIndex) bool {
	var prev []byte
	for i := uint64(0); i < x.n; i++ {
		name, err := x.name(i)
		if err != nil || (prev != nil && bytes.Compare(prev, name) >= 0) {
			return false
		}
		prev = name
	}
	return true
}

// Random corruptions of a pack of delta chains read as errors, or as
// data of the size the entry declares, never a panic or a read out of
// range: the deterministic companion of FuzzPackEntries. (Like git and
// go-git, reads do not hash what they read: a damaged type bit can turn
// a delta into a blob of its bytes, which git fsck reports.)
func TestPackReadCorruptPacks(t *testing.T) {
	if testing.Short() {
		t.Skip("damages every byte range of a pack (FuzzPackEntries seeds still run): the full suite runs it (scripts/test.sh)")
	}
	dir := testrepo.New(t)
	contents := similarBlobs(30)
	hs := packBlobs(t, dir, contents, "--delta-base-offset")
	p := onlyPack(t, dir)
	good := p.packMap.data
	rng := rand.New(rand.NewPCG(21, 22))
	for k := 0; k < 3000; k++ {
		data := append([]byte(nil), good...)
		for j := 0; j < 1+rng.IntN(8); j++ {
			data[12+rng.IntN(len(data)-12)] = byte(rng.Uint32())
		}
		q := &pack{idx: p.idx, packMap: &mapping{data: data}}
		for i, h := range hs {
			off, _, _ := q.idx.find(h)
			obj, err := q.readObject(h, off, plumbing.BlobObject, 1<<20)
			if err == nil && obj.Size() <= 1<<20 && int64(len(obj.data)) != obj.Size() {
				t.Fatalf("case %d: object %d read as %d bytes, its size says %d", k, i, len(obj.data), obj.Size())
			}
		}
	}
}

// TestFreshPackSetSeesANewPack: a pack set scanned before a repack is
// scanned again once the pack directory changed, so a long-lived reader
// does not hand every object of the new pack to git.
func TestFreshPackSetSeesANewPack(t *testing.T) {
	dir := testrepo.New(t)
	o := NewObjects(filepath.Join(dir, ".git"))
	keep := func(content string) {
		h, err := o.write(plumbing.BlobObject, []byte(content))
		if err != nil {
			t.Fatal(err)
		}
		gitIn(t, dir, "", "update-ref", "refs/keep/"+content, h.String())
	}
	keep("one")
	gitIn(t, dir, "", "repack", "-a", "-d", "-q")
	before := o.packSet()
	if got := o.freshPackSet(); got != before {
		t.Fatal("rescanned an unchanged pack directory")
	}
	keep("two")
	gitIn(t, dir, "", "repack", "-a", "-d", "-q")
	after := o.freshPackSet()
	if after == before || len(after.packs) != 1 {
		t.Fatalf("after a repack: same set %v, %d packs", after == before, len(after.packs))
	}
	if _, err := os.Stat(after.packs[0].idxPath); err != nil {
		t.Fatalf("the rescanned set names a pack that is not there: %v", err)
	}
}
