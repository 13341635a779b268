package gitrepo

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/klauspost/compress/zlib"
)

// Bulk reads many small objects in process, the way `git cat-file`
// resolves "<commit>:<path>": the commit's first line names its tree, the
// tree's entry the blob. Objects come from the mapped packs (indexes
// mapped whole, see mapIndex) or loose files. One Bulk is shared by the
// goroutines of one listing, each with its own BulkReader.
//
// The size rule holds: a blob's size comes from its pack entry header, its
// delta's header or its loose header before anything of it is inflated,
// and an oversize blob is reported unread.
//
// Anything this reader does not handle itself it reports as BulkFallback,
// for the caller to ask git: an object in neither the packs it scanned nor
// loose (a pack a concurrent repack wrote since, an alternate), an unusual
// pack layout, a commit or tree that is not what git writes, an object too
// large for it (see bulkMaxObject), a repository with replace refs (which
// git honours and this reader does not), a SHA-256 repository.
type Bulk struct {
	dir   string
	packs []bulkPack
	off   bool // replace refs: every lookup falls back
}

// Bulk maps the indexes of the repository's packs, scanned afresh, for
// one listing; refs says whether replace refs forbid reading in process.
func (o *Objects) Bulk(refs *Refs) *Bulk {
	// A SHA-256 repository's packs are git's to read: every lookup
	// falls back, and no index is mapped.
	b := &Bulk{dir: o.dir, off: o.viaGit() || refs.HasReplaceRefs()}
	if b.off {
		return b
	}
	for _, p := range o.freshPackSet().packs {
		if m := p.mappedIndex(); m != nil {
			b.packs = append(b.packs, bulkPack{p: p, idx: m})
		}
	}
	return b
}

// Reader is one goroutine's reader over b.
func (b *Bulk) Reader() *BulkReader {
	return &BulkReader{dir: b.dir, packs: b.packs, off: b.off}
}

// What BulkReader.Path made of a lookup.
const (
	BulkDone     = iota // the blob is read, or over the limit and unread
	BulkFallback        // for git to resolve
)

// bulkMaxObject bounds every object the bulk reader inflates, delta bases
// included: lazy's commits, root trees and task.json records are a few
// hundred bytes, and a larger one goes to the cat-file path rather than
// make this reader allocate from a size a hostile header claims.
const bulkMaxObject = 256 << 10

// bulkMaxDepth bounds the delta chains the bulk reader follows (git's
// default depth is 50); a deeper one, or a REF_DELTA loop, goes to the
// cat-file path.
const bulkMaxDepth = 128

// bulkCacheBytes bounds each reader's cache of delta bases: the task.json
// records of a repository delta against a few bases that every lookup
// then finds here.
const bulkCacheBytes = 4 << 20

// bulkPack is one pack and its index, mapped for the whole read.
type bulkPack struct {
	p   *pack
	idx *mapping
}

// BulkReader is one goroutine's state: its inflater, buffers, delta base
// cache and none of them shared.
type BulkReader struct {
	dir   string // the objects directory
	packs []bulkPack

	zr   io.ReadCloser // reset for each object
	src  bytes.Reader  // a pack entry's zlib stream
	file *bufio.Reader // a loose object's file

	// Buffers reused from record to record: the three objects, the
	// delta of the one asked for, and the deltas of its bases.
	commit, tree, blob, outer, delta []byte

	bases map[bulkKey][]byte
	held  int
	off   bool // see Bulk
}

type bulkKey struct {
	pack int
	off  uint64
}

// Path returns the blob at name in the root tree of commit, its id and
// its size: BulkDone with the content, or with nil content when it is over
// limit (unread); BulkFallback for git to resolve. The content is the
// reader's buffer, valid until the next call.
func (r *BulkReader) Path(commit OID, name string, limit int64) (content []byte, blob OID, size int64, st int) {
	if r.off || commit.Format() != SHA1 {
		return nil, blob, 0, BulkFallback
	}
	var ch plumbing.Hash
	copy(ch[:], commit.Bytes())
	var ok bool
	r.commit, _, ok = r.object(ch, packCommit, bulkMaxObject, r.commit)
	// git takes the tree from the commit's first line and reads no more
	// of it to resolve a path.
	c := r.commit
	if !ok || len(c) < 46 || string(c[:5]) != "tree " || c[45] != '\n' {
		return nil, blob, 0, BulkFallback
	}
	var tree plumbing.Hash
	if !AllHex(c[5:45]) { // as git writes object names in commits
		return nil, blob, 0, BulkFallback
	}
	_, _ = hex.Decode(tree[:], c[5:45])
	r.tree, _, ok = r.object(tree, packTree, bulkMaxObject, r.tree)
	if !ok {
		return nil, blob, 0, BulkFallback
	}
	bh, ok := treeFind(r.tree, name)
	if !ok {
		return nil, blob, 0, BulkFallback
	}
	blob = oidOf(bh)
	r.blob, size, ok = r.object(bh, packBlob, limit, r.blob)
	switch {
	case !ok:
		return nil, blob, 0, BulkFallback
	case size > limit:
		return nil, blob, size, BulkDone
	}
	return r.blob, blob, size, BulkDone
}

// treeFind returns the blob of the regular file name in tree, as git's
// find_tree_entry finds it: entries are taken in order, and the search
// stops at the first entry that sorts after name. ok is false for a tree
// that is malformed anywhere, a name not found, or found but not a
// regular file: the cat-file path says what git makes of those.
func treeFind(tree []byte, name string) (plumbing.Hash, bool) {
	var found plumbing.Hash
	done, ok := false, false
	for len(tree) > 0 {
		sp := bytes.IndexByte(tree, ' ')
		if sp <= 0 {
			return found, false
		}
		mode := tree[:sp]
		for _, c := range mode {
			if c < '0' || c > '7' {
				return found, false
			}
		}
		tree = tree[sp+1:]
		nul := bytes.IndexByte(tree, 0)
		if nul <= 0 || len(tree) < nul+1+20 {
			return found, false
		}
		entry := tree[:nul]
		var h plumbing.Hash
		copy(h[:], tree[nul+1:nul+21])
		tree = tree[nul+21:]
		if done || len(entry) > len(name) {
			continue
		}
		switch c := bytes.Compare([]byte(name[:len(entry)]), entry); {
		case c > 0:
			continue
		case c < 0:
			done = true
		case len(entry) == len(name):
			done = true
			found, ok = h, string(mode) == "100644"
		}
	}
	return found, ok
}

// object reads object h of pack type typ into dst's storage. An object
// over limit is returned with its size and no content; ok is false for
// anything the bulk reader leaves to the cat-file path, among them an
// object over max (at most bulkMaxObject) and not over limit.
func (r *BulkReader) object(h plumbing.Hash, typ int, limit int64, dst []byte) ([]byte, int64, bool) {
	for i := range r.packs {
		bp := &r.packs[i]
		off, found := bp.p.idx.findMapped(bp.idx.data, h)
		if found {
			return r.packed(i, off, typ, limit, dst)
		}
	}
	return r.loose(h, typ, limit, dst)
}

// packed reads the object at off in pack i (see object).
func (r *BulkReader) packed(i int, off uint64, typ int, limit int64, dst []byte) ([]byte, int64, bool) {
	bp := &r.packs[i]
	p := bp.p
	var chainBuf [8]entry
	chain := chainBuf[:0]
	var base entry
	for cur := off; ; {
		e, err := p.entryAt(cur)
		if err != nil {
			return nil, 0, false
		}
		if e.typ != packOfsDelta && e.typ != packRefDelta {
			base = e
			break
		}
		if len(chain) == bulkMaxDepth {
			return nil, 0, false // deep, or a REF_DELTA loop
		}
		chain = append(chain, e)
		if e.typ == packOfsDelta {
			cur = e.baseOff
			continue
		}
		boff, ok := p.idx.findMapped(bp.idx.data, e.baseRef)
		if !ok {
			return nil, 0, false
		}
		cur = boff
	}
	if base.typ != typ {
		return nil, 0, false
	}
	if len(chain) == 0 {
		if over(base.size, limit) {
			return nil, clamp(base.size), true
		}
		if base.size > bulkMaxObject {
			return nil, 0, false
		}
		out, ok := r.inflate(p, base, dst)
		return out, int64(len(out)), ok
	}
	// The object's size is its delta's target size, read from the delta
	// before any base is inflated.
	outer := chain[0]
	if outer.size > bulkMaxObject {
		return nil, 0, false
	}
	delta, ok := r.inflate(p, outer, r.outer)
	if !ok {
		return nil, 0, false
	}
	r.outer = delta
	_, rest, ok := deltaSize(delta)
	target, _, ok2 := deltaSize(rest)
	if !ok || !ok2 {
		return nil, 0, false
	}
	if over(target, limit) {
		return nil, clamp(target), true
	}
	if target > bulkMaxObject {
		return nil, 0, false
	}
	src, ok := r.resolve(i, base, chain[1:])
	if !ok {
		return nil, 0, false
	}
	out, ok := patchDelta(dst[:0], src, delta, bulkMaxObject)
	return out, int64(len(out)), ok
}

// resolve returns the content of the object chain[0] is a delta of
// (base itself for an empty chain), applying the deltas innermost first
// from the shallowest entry already cached. Everything it builds is
// cached: these are the bases other records delta against.
func (r *BulkReader) resolve(i int, base entry, chain []entry) ([]byte, bool) {
	p := r.packs[i].p
	start := len(chain) // chain[start:] is applied
	var data []byte
	for k := range chain {
		if b, ok := r.bases[bulkKey{i, chain[k].data}]; ok {
			data, start = b, k
			break
		}
	}
	if data == nil {
		if b, ok := r.bases[bulkKey{i, base.data}]; ok {
			data = b
		} else {
			if base.size > bulkMaxObject {
				return nil, false
			}
			b, ok := r.inflate(p, base, nil)
			if !ok {
				return nil, false
			}
			data = b
			r.keep(bulkKey{i, base.data}, b)
		}
	}
	for k := start - 1; k >= 0; k-- {
		e := chain[k]
		if e.size > bulkMaxObject {
			return nil, false
		}
		delta, ok := r.inflate(p, e, r.delta)
		if !ok {
			return nil, false
		}
		r.delta = delta
		out, ok := patchDelta(nil, data, delta, bulkMaxObject)
		if !ok {
			return nil, false
		}
		data = out
		r.keep(bulkKey{i, e.data}, out)
	}
	return data, true
}

// keep caches a delta base: cleared whole when full, as pack.cache is.
func (r *BulkReader) keep(k bulkKey, b []byte) {
	if r.bases == nil || r.held+len(b) > bulkCacheBytes {
		r.bases, r.held = map[bulkKey][]byte{}, 0
	}
	r.bases[k] = b
	r.held += len(b)
}

// inflate inflates entry e of p, e.size bytes at most bulkMaxObject, into
// dst's storage, and checks that the stream ends there with a good
// checksum, as git does.
func (r *BulkReader) inflate(p *pack, e entry, dst []byte) ([]byte, bool) {
	if e.size > bulkMaxObject {
		return nil, false
	}
	r.src.Reset(p.packMap.data[e.data:])
	if !r.resetZlib(&r.src) {
		return nil, false
	}
	out, err := inflateN(r.zr, dst, nil, e.size, true)
	return out, err == nil
}

// resetZlib points the reader's inflater at src.
func (r *BulkReader) resetZlib(src io.Reader) bool {
	if r.zr == nil {
		zr, err := zlib.NewReader(src)
		if err != nil {
			return false
		}
		r.zr = zr
		return true
	}
	return r.zr.(zlib.Resetter).Reset(src, nil) == nil
}

// looseTypes names the pack types in loose object headers.
var looseTypes = [...]string{packCommit: "commit", packTree: "tree", packBlob: "blob", packTag: "tag"}

// loose reads loose object h (see object). Its header is inflated first,
// and nothing more when the object is over limit.
func (r *BulkReader) loose(h plumbing.Hash, typ int, limit int64, dst []byte) ([]byte, int64, bool) {
	name := h.String()
	f, err := os.Open(filepath.Join(r.dir, name[:2], name[2:]))
	if err != nil {
		return nil, 0, false
	}
	defer func() { _ = f.Close() }()
	if r.file == nil {
		r.file = bufio.NewReaderSize(f, 4096)
	} else {
		r.file.Reset(f)
	}
	if !r.resetZlib(r.file) {
		return nil, 0, false
	}
	// "<type> <size>\x00", then the content.
	var head [32]byte
	t, size, rest, ok := looseHeader(r.zr, &head)
	if !ok || string(t) != looseTypes[typ] {
		return nil, 0, false
	}
	if over(size, limit) {
		return nil, clamp(size), true
	}
	if size > bulkMaxObject {
		return nil, 0, false
	}
	out, err := inflateN(r.zr, dst, rest, size, true)
	return out, clamp(size), err == nil
}

// patchDelta applies a git delta to base, appending the result to dst,
// with the checks of git's patch_delta: the delta's source size is
// base's, every copy lies inside base, and the result is exactly the
// target size the delta declares (at most maxTarget).
func patchDelta(dst, base, delta []byte, maxTarget uint64) ([]byte, bool) {
	srcSize, rest, ok := deltaSize(delta)
	if !ok || srcSize != uint64(len(base)) {
		return nil, false
	}
	target, rest, ok := deltaSize(rest)
	if !ok || target > maxTarget {
		return nil, false
	}
	out := dst[:0]
	if uint64(cap(out)) < target {
		out = make([]byte, 0, target)
	}
	for len(rest) > 0 {
		cmd := rest[0]
		rest = rest[1:]
		switch {
		case cmd&0x80 != 0:
			var off, n uint64
			for bit := uint(0); bit < 7; bit++ {
				if cmd&(1<<bit) == 0 {
					continue
				}
				if len(rest) == 0 {
					return nil, false
				}
				if bit < 4 {
					off |= uint64(rest[0]) << (8 * bit)
				} else {
					n |= uint64(rest[0]) << (8 * (bit - 4))
				}
				rest = rest[1:]
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > uint64(len(base)) || n > target-uint64(len(out)) {
				return nil, false
			}
			out = append(out, base[off:off+n]...)
		case cmd != 0:
			n := int(cmd)
			if n > len(rest) || uint64(cmd) > target-uint64(len(out)) {
				return nil, false
			}
			out = append(out, rest[:n]...)
			rest = rest[n:]
		default:
			return nil, false // opcode 0 is reserved
		}
	}
	return out, uint64(len(out)) == target
}

// deltaSize decodes a size of a delta header, refusing one of more than
// four bytes: those sizes are over any object patchDelta builds, and
// longer ones could wrap around.
func deltaSize(b []byte) (uint64, []byte, bool) { return leb128n(b, 4) }

// HasReplaceRefs reports whether the repository has refs under
// refs/replace/, which make git read one object in place of another:
// then only git may resolve records.
func (r *Refs) HasReplaceRefs() bool {
	const prefix = "refs/replace/"
	if ents, err := os.ReadDir(filepath.Join(r.dir, "refs", "replace")); err == nil && len(ents) > 0 {
		return true
	}
	m, _, err := r.packedRefs().current(filepath.Join(r.dir, "packed-refs"))
	if err != nil {
		return true // git will say what is wrong
	}
	if m == nil {
		return false
	}
	defer runtime.KeepAlive(m)
	return bytes.Contains(m.data, []byte(" "+prefix))
}
