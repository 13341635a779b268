package gitrepo

import (
	"bytes"
	"container/list"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/klauspost/compress/zlib"
)

// Bounds of the fast pack reader. Objects past them are read by git,
// which handles any pack; these keep one hostile pack from making lazy
// hold gigabytes or walk a delta chain forever.
const (
	// maxDeltaBase bounds every object of a delta chain but the one asked
	// for, whose bound is the caller's limit. git itself deltifies an
	// object only against bases at most 32 times its size.
	maxDeltaBase = 256 << 20
	// maxDeltaDepth bounds a delta chain; git's default is 50.
	maxDeltaDepth = 4096
	// baseCacheBytes bounds the cache of delta bases of a pack set, all
	// entries together: git's core.deltaBaseCacheLimit default. Bounding
	// the total rather than each entry keeps a legal chain of large
	// objects (a blob rewritten fifty times) from being resolved from its
	// base at every read, which made lazy 20 times slower than git.
	baseCacheBytes = 96 << 20
)

// Pack entry types (gitformat-pack(5)).
const (
	packCommit   = 1
	packTree     = 2
	packBlob     = 3
	packTag      = 4
	packOfsDelta = 6
	packRefDelta = 7
)

// packSet is the packs of one objects directory, listed once: the index
// files are opened on first use, and lookups binary-search them.
// refresh drops the set, so a pack a concurrent repack or fetch wrote is
// found by the next one.
type packSet struct {
	packs []*pack
	bases *baseCache // shared by packs
	// dirMod is the pack directory's time when it was scanned: a pack
	// written or deleted since moves it (see freshPackSet).
	dirMod time.Time
}

// pack is one .pack, mapped, and its open .idx. Both stay readable after
// a concurrent git repack deletes the files (the inode lives on while
// open or mapped), so a read that started never fails halfway.
type pack struct {
	idxPath string

	once    sync.Once
	idx     *packIndex
	packMap *mapping
	err     error

	mu    sync.Mutex
	bases *baseCache // its set's; see cache

	// deltasApplied counts the deltas resolve applied: the work a read
	// did, which tests hold to git's.
	deltasApplied atomic.Int64

	mapOnce sync.Once
	idxMap  *mapping // see mappedIndex
}

// scanPacks lists the packs of the objects directory dir without opening
// them, newest first as git orders them: a recent pack is the likeliest
// to hold a recent object.
func scanPacks(dir string) *packSet {
	var dirMod time.Time
	if fi, err := os.Stat(filepath.Join(dir, "pack")); err == nil {
		dirMod = fi.ModTime()
	}
	entries, err := os.ReadDir(filepath.Join(dir, "pack"))
	if err != nil {
		return &packSet{dirMod: dirMod}
	}
	type dated struct {
		p   *pack
		mod int64
	}
	var ds []dated
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "pack-") || !strings.HasSuffix(name, ".idx") {
			continue
		}
		var mod int64
		if fi, err := e.Info(); err == nil {
			mod = fi.ModTime().UnixNano()
		}
		ds = append(ds, dated{&pack{idxPath: filepath.Join(dir, "pack", name)}, mod})
	}
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].mod > ds[j].mod })
	set := &packSet{packs: make([]*pack, len(ds)), bases: newBaseCache(baseCacheBytes), dirMod: dirMod}
	for i, d := range ds {
		d.p.bases = set.bases
		set.packs[i] = d.p
	}
	return set
}

// open maps the pack's index and pack file once.
func (p *pack) open() error {
	p.once.Do(func() {
		x, err := openPackIndex(p.idxPath)
		if err != nil {
			p.err = err
			return
		}
		path := strings.TrimSuffix(p.idxPath, ".idx") + ".pack"
		f, err := os.Open(path)
		if err != nil {
			p.err = err
			return
		}
		defer func() { _ = f.Close() }()
		fi, err := f.Stat()
		if err != nil {
			p.err = err
			return
		}
		pm, err := mapFile(f, fi)
		if err != nil {
			p.err = err
			return
		}
		d := pm.data
		if len(d) < 12+20 || string(d[:4]) != "PACK" || (binary.BigEndian.Uint32(d[4:8]) != 2 && binary.BigEndian.Uint32(d[4:8]) != 3) {
			p.err = fmt.Errorf("%s is not a pack file: %w", path, errUnsupportedPack)
			return
		}
		if uint64(binary.BigEndian.Uint32(d[8:12])) != x.n {
			p.err = fmt.Errorf("%s holds %d objects, its index %d: %w", path, binary.BigEndian.Uint32(d[8:12]), x.n, errUnsupportedPack)
			return
		}
		p.idx, p.packMap = x, pm
	})
	return p.err
}

// mappedIndex returns the pack's index mapped whole (see mapIndex), or
// nil when the pack cannot be opened or its index not mapped.
func (p *pack) mappedIndex() *mapping {
	p.mapOnce.Do(func() {
		if p.open() != nil {
			return
		}
		if m, err := p.idx.mapIndex(); err == nil {
			p.idxMap = m
		}
	})
	return p.idxMap
}

// find returns the pack holding h and h's offset in it.
func (s *packSet) find(h plumbing.Hash) (*pack, uint64, bool) {
	for _, p := range s.packs {
		// A pack that cannot be opened (deleted by a concurrent repack
		// after the scan, or of a layout this reader skips) is simply
		// not searched: git, or a re-scan, finds what it held.
		if p.open() != nil {
			continue
		}
		off, ok, err := p.idx.find(h)
		if err == nil && ok {
			return p, off, true
		}
	}
	return nil, 0, false
}

// entry is the header of one pack entry.
type entry struct {
	typ     int
	size    uint64 // inflated size of the entry's data (of the delta, for a delta)
	data    uint64 // offset of the zlib stream
	baseOff uint64 // OFS_DELTA: the base's offset
	baseRef plumbing.Hash
}

var errCorruptPack = errors.New("pack entry is corrupt")

// entryAt parses the entry header at off.
func (p *pack) entryAt(off uint64) (entry, error) {
	d := p.packMap.data
	// The last 20 bytes are the pack's checksum, never an entry.
	end := uint64(len(d)) - 20
	if off < 12 || off >= end {
		return entry{}, fmt.Errorf("%w: offset %d out of range", errCorruptPack, off)
	}
	i := off
	c := d[i]
	i++
	e := entry{typ: int(c>>4) & 7, size: uint64(c & 0x0f)}
	for shift := uint(4); c&0x80 != 0; shift += 7 {
		if i >= end || shift > 57 {
			return entry{}, fmt.Errorf("%w: bad size at offset %d", errCorruptPack, off)
		}
		c = d[i]
		i++
		e.size |= uint64(c&0x7f) << shift
	}
	switch e.typ {
	case packCommit, packTree, packBlob, packTag:
	case packOfsDelta:
		if i >= end {
			return entry{}, fmt.Errorf("%w: truncated at offset %d", errCorruptPack, off)
		}
		c = d[i]
		i++
		rel := uint64(c & 0x7f)
		for c&0x80 != 0 {
			if i >= end || rel >= 1<<56 {
				return entry{}, fmt.Errorf("%w: bad base offset at offset %d", errCorruptPack, off)
			}
			c = d[i]
			i++
			rel = (rel+1)<<7 | uint64(c&0x7f)
		}
		if rel == 0 || rel > off {
			return entry{}, fmt.Errorf("%w: base offset out of range at offset %d", errCorruptPack, off)
		}
		e.baseOff = off - rel
	case packRefDelta:
		if i+20 > end {
			return entry{}, fmt.Errorf("%w: truncated at offset %d", errCorruptPack, off)
		}
		copy(e.baseRef[:], d[i:i+20])
		i += 20
	default:
		return entry{}, fmt.Errorf("%w: type %d at offset %d", errCorruptPack, e.typ, off)
	}
	e.data = i
	return e, nil
}

// zlibReaders reuses decompressors, whose state is some 40 KiB.
var zlibReaders sync.Pool

// zlibReader returns a decompressor of src, from zlibReaders when one is
// there; the caller puts it back.
func zlibReader(src io.Reader) (io.ReadCloser, error) {
	if r, ok := zlibReaders.Get().(io.ReadCloser); ok && reset(r, src) {
		return r, nil
	}
	return zlib.NewReader(src)
}

// inflate returns the first n bytes of the zlib stream at e.data, and, when
// n is e.size, checks that the stream ends there.
func (p *pack) inflate(e entry, n uint64) ([]byte, error) {
	zr, err := zlibReader(bytes.NewReader(p.packMap.data[e.data:]))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCorruptPack, err)
	}
	defer zlibReaders.Put(zr)
	out, err := inflateN(zr, nil, nil, n, n == e.size)
	if err != nil {
		return nil, fmt.Errorf("%w: entry %w", errCorruptPack, err)
	}
	return out, nil
}

// inflateN reads n bytes of content from zr, after head (content already
// inflated along with a header), into dst's storage. The buffer grows as
// data arrives rather than being sized from n: a hostile header may
// promise far more than the stream holds. With end set it then checks
// that the stream ends there, which also checks zlib's checksum.
func inflateN(zr io.Reader, dst, head []byte, n uint64, end bool) ([]byte, error) {
	if uint64(len(head)) > n {
		return nil, errors.New("longer than its header says")
	}
	buf := bytes.NewBuffer(dst[:0])
	buf.Grow(int(min(n, 64<<10)))
	buf.Write(head)
	if _, err := buf.ReadFrom(io.LimitReader(zr, clamp(n-uint64(len(head))))); err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	out := buf.Bytes()
	if uint64(len(out)) != n {
		return nil, errors.New("shorter than its header says")
	}
	if end {
		var one [1]byte
		if k, err := zr.Read(one[:]); k != 0 || !errors.Is(err, io.EOF) {
			return nil, errors.New("longer than its header says")
		}
	}
	return out, nil
}

// reset points a pooled zlib reader at src.
func reset(r io.ReadCloser, src io.Reader) bool {
	rs, ok := r.(zlib.Resetter)
	return ok && rs.Reset(src, nil) == nil
}

// packedObject is an object read from a pack by the fast reader. data is
// nil when the object was over the caller's limit: only its size is
// known, and read refuses it from that.
type packedObject struct {
	h    plumbing.Hash
	typ  plumbing.ObjectType
	size int64
	data []byte
}

func (o *packedObject) Hash() plumbing.Hash           { return o.h }
func (o *packedObject) Type() plumbing.ObjectType     { return o.typ }
func (o *packedObject) SetType(t plumbing.ObjectType) { o.typ = t }
func (o *packedObject) Size() int64                   { return o.size }
func (o *packedObject) SetSize(s int64)               { o.size = s }
func (o *packedObject) Reader() (io.ReadCloser, error) {
	if o.data == nil && o.size > 0 {
		return nil, fmt.Errorf("object %s was not read: it is over the size limit", o.h)
	}
	return io.NopCloser(bytes.NewReader(o.data)), nil
}
func (o *packedObject) Writer() (io.WriteCloser, error) {
	return nil, errors.New("objects read from a pack are read-only")
}

func objectType(t int) plumbing.ObjectType {
	switch t {
	case packCommit:
		return plumbing.CommitObject
	case packTree:
		return plumbing.TreeObject
	case packBlob:
		return plumbing.BlobObject
	case packTag:
		return plumbing.TagObject
	}
	return plumbing.InvalidObject
}

// readObject reads object h at off. Its size is checked against limit
// before its content is inflated: from the entry header for a whole
// object, from the first bytes of the delta for a deltified one.
// errUnsupportedPack sends the caller to git.
func (p *pack) readObject(h plumbing.Hash, off uint64, typ plumbing.ObjectType, limit int64) (*packedObject, error) {
	defer runtime.KeepAlive(p.packMap)
	// Walk the chain's headers down to its base, which gives the type.
	var chain []entry
	cur := off
	var base entry
	var seen map[uint64]bool // entries reached through REF_DELTA
	for {
		e, err := p.entryAt(cur)
		if err != nil {
			return nil, err
		}
		if e.typ != packOfsDelta && e.typ != packRefDelta {
			base = e
			break
		}
		if len(chain) >= maxDeltaDepth {
			return nil, fmt.Errorf("delta chain deeper than %d: %w", maxDeltaDepth, errUnsupportedPack)
		}
		chain = append(chain, e)
		if e.typ == packOfsDelta {
			cur = e.baseOff
			continue
		}
		// A REF_DELTA's base is in the same pack once index-pack
		// completed a thin pack; anywhere else is git's business.
		boff, ok, err := p.idx.find(e.baseRef)
		if err != nil || !ok {
			return nil, fmt.Errorf("delta base %s outside the pack: %w", e.baseRef, errUnsupportedPack)
		}
		// Offsets only decrease along OFS_DELTA links, so a loop needs a
		// REF_DELTA back to an entry already walked: a corrupt pack.
		if seen == nil {
			seen = map[uint64]bool{off: true}
		}
		if seen[boff] {
			return nil, fmt.Errorf("%w: delta chain at offset %d loops", errCorruptPack, off)
		}
		seen[boff] = true
		cur = boff
	}
	got := objectType(base.typ)
	if typ != plumbing.AnyObject && got != typ {
		return nil, plumbing.ErrObjectNotFound // a type mismatch reads as missing
	}
	obj := &packedObject{h: h, typ: got}
	if len(chain) == 0 {
		obj.size = clamp(base.size)
		if over(base.size, limit) {
			return obj, nil
		}
		data, err := p.inflate(base, base.size)
		if err != nil {
			return nil, err
		}
		obj.data = data
		return obj, nil
	}
	// The object's size is the target size in its delta's header.
	outer := chain[0]
	if outer.size > maxDeltaBase {
		return nil, fmt.Errorf("delta of %d bytes: %w", outer.size, errUnsupportedPack)
	}
	head, err := p.inflate(outer, min(outer.size, 20))
	if err != nil {
		return nil, err
	}
	_, rest, ok := leb128(head)
	target, _, ok2 := leb128(rest)
	if !ok || !ok2 {
		return nil, fmt.Errorf("%w: bad delta header", errCorruptPack)
	}
	obj.size = clamp(target)
	if over(target, limit) {
		return obj, nil
	}
	data, err := p.resolve(base, chain)
	if err != nil {
		return nil, err
	}
	if uint64(len(data)) != target {
		return nil, fmt.Errorf("%w: delta result of %d bytes, header says %d", errCorruptPack, len(data), target)
	}
	obj.data = data
	return obj, nil
}

// resolve inflates base and applies chain to it, innermost delta first,
// starting from the cached entry nearest the object asked for, as git's
// unpack_entry does. Every entry it builds on the way is cached: the
// next read of the chain (the next version of a record, or the same
// object again) starts where this one ended rather than at the base.
func (p *pack) resolve(base entry, chain []entry) ([]byte, error) {
	bases := p.cache()
	var data []byte
	start := len(chain) // chain[start:] is already applied
	for i := 1; i < len(chain); i++ {
		if b, ok := bases.get(p, chain[i].data); ok {
			data, start = b, i
			break
		}
	}
	if start == len(chain) {
		if b, ok := bases.get(p, base.data); ok {
			data = b
		} else {
			if base.size > maxDeltaBase {
				return nil, fmt.Errorf("delta base of %d bytes: %w", base.size, errUnsupportedPack)
			}
			b, err := p.inflate(base, base.size)
			if err != nil {
				return nil, err
			}
			data = b
			bases.put(p, base.data, b)
		}
	}
	for i := start - 1; i >= 0; i-- {
		e := chain[i]
		if e.size > maxDeltaBase {
			return nil, fmt.Errorf("delta of %d bytes: %w", e.size, errUnsupportedPack)
		}
		delta, err := p.inflate(e, e.size)
		if err != nil {
			return nil, err
		}
		if _, rest, ok := leb128(delta); ok {
			if t, _, ok := leb128(rest); ok && t > maxDeltaBase {
				return nil, fmt.Errorf("delta result of %d bytes: %w", t, errUnsupportedPack)
			}
		}
		out, ok := patchDelta(nil, data, delta, maxDeltaBase)
		p.deltasApplied.Add(1)
		if !ok {
			return nil, fmt.Errorf("%w: a delta does not apply to its base", errCorruptPack)
		}
		data = out
		if i > 0 {
			bases.put(p, e.data, data)
		}
	}
	return data, nil
}

// cache returns the delta base cache of the pack's set, or of the pack
// alone when it was made outside a set.
func (p *pack) cache() *baseCache {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bases == nil {
		p.bases = newBaseCache(baseCacheBytes)
	}
	return p.bases
}

// baseCache holds the content of pack entries that deltas were applied
// to, keyed by pack and offset, within a bound on their total size (as
// git's delta base cache): the least recently used go first. Cached
// content is shared: never modified.
type baseCache struct {
	mu      sync.Mutex
	limit   int
	held    int
	entries map[baseKey]*list.Element // of *baseEntry
	lru     list.List                 // most recently used first
}

type baseKey struct {
	p   *pack
	off uint64 // of the entry's data
}

type baseEntry struct {
	key  baseKey
	data []byte
}

func newBaseCache(limit int) *baseCache {
	return &baseCache{limit: limit, entries: map[baseKey]*list.Element{}}
}

// get returns the content of the entry of p whose data starts at off, if
// a previous read kept it.
func (c *baseCache) get(p *pack, off uint64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[baseKey{p, off}]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*baseEntry).data, true
}

// put keeps data as the content of the entry of p at off, dropping the
// least recently used entries to make room. Content over the whole bound
// is not kept.
func (c *baseCache) put(p *pack, off uint64, data []byte) {
	if len(data) > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := baseKey{p, off}
	if el, ok := c.entries[k]; ok {
		c.lru.MoveToFront(el)
		return
	}
	for c.held+len(data) > c.limit {
		last := c.lru.Back()
		old := c.lru.Remove(last).(*baseEntry)
		delete(c.entries, old.key)
		c.held -= len(old.data)
	}
	c.entries[k] = c.lru.PushFront(&baseEntry{k, data})
	c.held += len(data)
}

// clamp converts a size from a pack header, which a hostile pack can set
// to anything, to an int64; one that large is over every limit anyway.
func clamp(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// over reports whether size is over limit.
func over(size uint64, limit int64) bool {
	return limit < 0 || size > uint64(limit)
}

// leb128 decodes the little-endian base-128 sizes of a delta header.
func leb128(b []byte) (uint64, []byte, bool) { return leb128n(b, 10) } // 10 bytes fill 64 bits

// leb128n is leb128 refusing a size of more than n bytes.
func leb128n(b []byte, n int) (uint64, []byte, bool) {
	var v uint64
	for i := 0; i < len(b) && i < n; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, b[i+1:], true
		}
	}
	return 0, nil, false
}

// packs returns the objects' pack set, scanning the pack directory on
// first use after a refresh.
func (o *Objects) packSet() *packSet {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.packs == nil {
		o.packs = scanPacks(o.dir)
	}
	return o.packs
}

// freshPackSet is packSet scanned again if a pack was written or deleted
// since the last scan. A read that misses rescans by itself; a reader
// that would instead hand every miss to git (the bulk list reader, in a
// daemon that outlives many repacks) asks for this.
func (o *Objects) freshPackSet() *packSet {
	set := o.packSet()
	if fi, err := os.Stat(filepath.Join(o.dir, "pack")); err == nil && !fi.ModTime().Equal(set.dirMod) {
		o.Refresh()
		set = o.packSet()
	}
	return set
}

// lookup returns object h of type typ from a pack, as git looks first,
// or loose. An object over limit is returned with its size and no
// content. What neither reader has, or a pack entry the pack reader
// declines or finds corrupt, read takes to git.
func (o *Objects) lookup(typ plumbing.ObjectType, h plumbing.Hash, limit int64) (plumbing.EncodedObject, error) {
	var packErr error
	if p, off, ok := o.packSet().find(h); ok {
		obj, err := p.readObject(h, off, typ, limit)
		if err == nil || errors.Is(err, plumbing.ErrObjectNotFound) {
			return obj, err
		}
		packErr = err
	}
	obj, err := o.readLoose(typ, h, limit)
	if errors.Is(err, plumbing.ErrObjectNotFound) && packErr != nil {
		return nil, packErr
	}
	return obj, err
}

// packed reports whether a pack holds object h, mapping only indexes.
func (o *Objects) packed(h plumbing.Hash) bool {
	_, _, ok := o.packSet().find(h)
	return ok
}
