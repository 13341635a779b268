package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// packedRefs caches the map of one repository's packed-refs file. After
// git gc packs 10,000 task refs the file is megabytes; reading and
// scanning it on every lookup cost more than the write a lookup guards.
// The map is made once per process and reused while the file's identity
// (inode, size, mtime) is unchanged; every lookup re-checks it with one
// stat, since any git process may rewrite the file at any time.
type packedRefs struct {
	mu sync.Mutex
	m  *mapping
	// sorted records the "sorted" trait of the file's header: only then
	// may a lookup binary-search it.
	sorted bool
}

// current returns the map of path's packed-refs, made again if the file
// changed since the last call; nil when there is no packed-refs.
func (p *packedRefs) current(path string) (*mapping, bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read packed-refs: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m != nil && p.m.sameFile(fi) {
		return p.m, p.sorted, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		// Replaced between the stat and the open by a writer that then
		// pruned it (git pack-refs only ever renames over it, but a
		// repack by hand may delete it): treat as no packed refs.
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read packed-refs: %w", err)
	}
	defer func() { _ = f.Close() }()
	// Stat the open file, not the path: the map must carry the identity
	// of what it maps.
	if fi, err = f.Stat(); err != nil {
		return nil, false, fmt.Errorf("read packed-refs: %w", err)
	}
	m, err := mapFile(f, fi)
	if err != nil {
		return nil, false, fmt.Errorf("read packed-refs: %w", err)
	}
	p.m, p.sorted = m, packedSorted(m.data)
	return p.m, p.sorted, nil
}

// lookupPacked finds ref name in the repository's packed-refs.
func (r *Refs) lookupPacked(name string) (plumbing.Hash, bool, error) {
	m, sorted, err := r.packedRefs().current(filepath.Join(r.dir, "packed-refs"))
	if err != nil || m == nil {
		return plumbing.ZeroHash, false, err
	}
	var h plumbing.Hash
	var ok bool
	at, bisected := 0, false
	if sorted {
		// A malformed line leaves bisecting untrusted: the file is then
		// read line by line, as List's packedRange does, so the two never
		// disagree about a ref (a create must not shadow a packed ref).
		at, bisected = packedLowerBound(m.data, name)
	}
	if bisected {
		h, ok = packedAt(m.data, at, name)
	} else {
		h, ok = packedLookup(m.data, name)
	}
	runtime.KeepAlive(m) // h is a copy; the map may go once m does
	return h, ok, nil
}

// packedRefs returns r's packed-refs cache. A Repo built as a literal
// has none and maps the file afresh on each lookup, which is correct,
// only slower.
func (r *Refs) packedRefs() *packedRefs {
	if r.packed == nil {
		return &packedRefs{}
	}
	return r.packed
}

// packedSorted reports whether packed-refs content declares the "sorted"
// trait in its header line, as git has written since 2.x
// ("# pack-refs with: peeled fully-peeled sorted ").
func packedSorted(b []byte) bool {
	const header = "# pack-refs with:"
	if !bytes.HasPrefix(b, []byte(header)) {
		return false
	}
	line := b[len(header):]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	for _, trait := range bytes.Fields(line) {
		if string(trait) == "sorted" {
			return true
		}
	}
	return false
}

// packedSearch binary-searches sorted packed-refs content for one ref
// (see packedLowerBound). A malformed line ends the search with "not
// found" rather than a guess; lookupPacked reads such a file line by
// line instead.
func packedSearch(b []byte, name string) (plumbing.Hash, bool) {
	at, ok := packedLowerBound(b, name)
	if !ok {
		return plumbing.ZeroHash, false
	}
	return packedAt(b, at, name)
}

// packedAt returns the hash of ref name if the first record at or after
// offset at (a line start) is name's.
func packedAt(b []byte, at int, name string) (plumbing.Hash, bool) {
	// Peeled lines are not records; the next record follows.
	for at < len(b) && b[at] == '^' {
		at = lineEnd(b, at)
	}
	if at >= len(b) {
		return plumbing.ZeroHash, false
	}
	got, ok := packedRecordName(b, at, lineEnd(b, at))
	if !ok || string(got) != name || !plumbing.IsHash(string(b[at:at+40])) {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(string(b[at : at+40])), true
}

// lineEnd returns the offset just past the newline ending the line that
// holds offset i (len(b) for a last line without one).
func lineEnd(b []byte, i int) int {
	if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(b)
}
