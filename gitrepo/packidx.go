package gitrepo

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/go-git/go-git/v5/plumbing"
)

// A pack index (.idx, version 2) maps object names to offsets in its
// .pack. Reading one object needs a handful of its bytes: the fan-out
// entry for the name's first byte, a binary search over that slice of
// the sorted name table, and one offset. go-git decodes the whole index
// into maps instead, which at 70,000 objects was half of a lazy show.
//
// Layout (gitformat-pack(5)):
//
//	magic "\377tOc", version 2                      8 bytes
//	fan-out: 256 big-endian uint32 cumulative counts 1024 bytes
//	n object names, sorted                          20n bytes
//	n CRC-32s                                        4n bytes
//	n 31-bit offsets, or MSB set + index into ...    4n bytes
//	... 64-bit offsets for packs over 2 GiB          8k bytes
//	pack checksum, index checksum                    40 bytes
//
// Version 1, which git has not written by default since 2008 and go-git
// cannot read, has no header, and its table interleaves a 4-byte offset
// with each name.
const (
	idxHeaderLen  = 8
	idxFanoutLen  = 256 * 4
	idxNamesStart = idxHeaderLen + idxFanoutLen
	idxTrailerLen = 2 * 20
)

var idxMagic = []byte{0xff, 't', 'O', 'c'}

// errUnsupportedPack marks a pack or index lazy's reader does not handle
// (an index of version 1, a delta whose base lives in another pack, an
// object too large to hold in memory): read asks git for that object
// instead.
var errUnsupportedPack = errors.New("pack layout not handled by the fast reader")

// packIndex reads one index file through ReadAt: the header and fan-out
// once, then per lookup the slice of names that share the wanted name's
// first byte, one offset, and a 64-bit offset when needed. That is three
// or four small reads whatever the number of objects, where mapping the
// file would fault in pages of a table that grows with it.
//
// The file is untrusted (packs arrive by fetch): every read is
// bounds-checked against the size the header implies, and a table that
// contradicts itself is reported, never followed out of range.
type packIndex struct {
	r       io.ReaderAt
	version int
	n       uint64 // objects in the pack
	large   uint64 // entries in the 64-bit offset table (version 2)
	fan     [256]uint32
	// bucketMax is the largest fan-out bucket read whole; a larger one
	// (a hostile or gigantic index) is bisected one name at a time.
	bucketMax uint64
	size      int64 // of the file, which parsePackIndex checked
}

// parsePackIndex checks the header, the fan-out table and the size of an
// index of size bytes, reading nothing else.
func parsePackIndex(r io.ReaderAt, size int64) (*packIndex, error) {
	if size < idxNamesStart+idxTrailerLen {
		return nil, fmt.Errorf("pack index is truncated (%d bytes)", size)
	}
	var head [idxNamesStart]byte
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return nil, fmt.Errorf("read pack index: %w", err)
	}
	x := &packIndex{r: r, version: 1, bucketMax: 4096, size: size}
	if bytes.Equal(head[:4], idxMagic) {
		if v := binary.BigEndian.Uint32(head[4:8]); v != 2 {
			return nil, fmt.Errorf("pack index of version %d: %w", v, errUnsupportedPack)
		}
		x.version = 2
	}
	fan := head[x.fanoutStart():]
	prev := uint32(0)
	for i := range x.fan {
		c := binary.BigEndian.Uint32(fan[4*i:])
		if c < prev {
			return nil, errors.New("pack index is corrupt: its fan-out table decreases")
		}
		x.fan[i], prev = c, c
	}
	x.n = uint64(prev)
	usize := uint64(size)
	if x.version == 1 {
		if usize != idxFanoutLen+24*x.n+idxTrailerLen {
			return nil, fmt.Errorf("pack index is corrupt: %d bytes for %d objects", size, x.n)
		}
		return x, nil
	}
	fixed := uint64(idxNamesStart) + 28*x.n + idxTrailerLen // cannot overflow: n < 2^32
	if usize < fixed || (usize-fixed)%8 != 0 {
		return nil, fmt.Errorf("pack index is corrupt: %d bytes for %d objects", size, x.n)
	}
	x.large = (usize - fixed) / 8
	return x, nil
}

func (x *packIndex) fanoutStart() uint64 {
	if x.version == 1 {
		return 0
	}
	return idxHeaderLen
}

// fanout returns the number of objects whose name's first byte is below b.
func (x *packIndex) fanout(b int) uint64 {
	if b == 0 {
		return 0
	}
	return uint64(x.fan[b-1])
}

// entry is where the i-th name starts and the stride between names.
func (x *packIndex) nameAt(i uint64) (at, stride uint64) {
	if x.version == 1 {
		return idxFanoutLen + 24*i + 4, 24
	}
	return idxNamesStart + 20*i, 20
}

// name returns the i-th object name (i < n).
func (x *packIndex) name(i uint64) ([]byte, error) {
	at, _ := x.nameAt(i)
	b := make([]byte, 20)
	if _, err := x.r.ReadAt(b, readPos(at)); err != nil {
		return nil, fmt.Errorf("read pack index: %w", err)
	}
	return b, nil
}

// find returns the pack offset of object h, and whether the index has it.
func (x *packIndex) find(h plumbing.Hash) (uint64, bool, error) {
	lo, hi := x.fanout(int(h[0])), x.fanout(int(h[0])+1)
	if lo == hi {
		return 0, false, nil
	}
	var i uint64
	var found bool
	var err error
	if hi-lo <= x.bucketMax {
		i, found, err = x.searchBucket(h, lo, hi)
	} else {
		i, found, err = x.searchProbes(h, lo, hi)
	}
	if err != nil || !found {
		return 0, false, err
	}
	off, err := x.offset(i)
	return off, err == nil, err
}

// searchBucket reads names lo..hi in one read and bisects them.
func (x *packIndex) searchBucket(h plumbing.Hash, lo, hi uint64) (uint64, bool, error) {
	at, stride := x.nameAt(lo)
	buf := make([]byte, (hi-lo)*stride-(stride-20))
	if _, err := x.r.ReadAt(buf, readPos(at)); err != nil {
		return 0, false, fmt.Errorf("read pack index: %w", err)
	}
	for i, j := uint64(0), hi-lo; i < j; {
		mid := i + (j-i)/2
		switch c := bytes.Compare(buf[mid*stride:mid*stride+20], h[:]); {
		case c == 0:
			return lo + mid, true, nil
		case c < 0:
			i = mid + 1
		default:
			j = mid
		}
	}
	return 0, false, nil
}

// readPos converts a position in the index, which parsePackIndex bounded
// by the file's size (an int64), to a ReadAt offset.
func readPos(v uint64) int64 {
	if v > math.MaxInt64 {
		return -1 // ReadAt refuses it
	}
	return int64(v)
}

// searchProbes bisects names lo..hi reading one name per probe.
func (x *packIndex) searchProbes(h plumbing.Hash, lo, hi uint64) (uint64, bool, error) {
	for lo < hi {
		mid := lo + (hi-lo)/2
		name, err := x.name(mid)
		if err != nil {
			return 0, false, err
		}
		switch c := bytes.Compare(name, h[:]); {
		case c == 0:
			return mid, true, nil
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, false, nil
}

// offset returns the pack offset of the i-th object.
func (x *packIndex) offset(i uint64) (uint64, error) {
	var b [8]byte
	at := idxNamesStart + 24*x.n + 4*i
	if x.version == 1 {
		at = idxFanoutLen + 24*i
	}
	if _, err := x.r.ReadAt(b[:4], readPos(at)); err != nil {
		return 0, fmt.Errorf("read pack index: %w", err)
	}
	o := binary.BigEndian.Uint32(b[:4])
	if x.version == 1 || o&0x80000000 == 0 {
		return uint64(o), nil
	}
	k := uint64(o &^ 0x80000000)
	if k >= x.large {
		return 0, fmt.Errorf("pack index is corrupt: 64-bit offset %d of %d", k, x.large)
	}
	if _, err := x.r.ReadAt(b[:], readPos(idxNamesStart+28*x.n+8*k)); err != nil {
		return 0, fmt.Errorf("read pack index: %w", err)
	}
	return binary.BigEndian.Uint64(b[:]), nil
}

// openPackIndex opens and parses the index at path. The file stays open
// for the lookups; it is closed when the index is dropped (os.File
// closes itself once unreachable), and stays readable after a concurrent
// repack deletes it.
func openPackIndex(path string) (*packIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	x, err := parsePackIndex(f, fi.Size())
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return x, nil
}

// mapIndex maps the whole index, for a caller about to look up thousands
// of objects (List reading every task): one lookup then costs a bisection
// in memory instead of three read system calls. Only version 2 indexes
// opened from a file are mapped; the caller reads others through find.
func (x *packIndex) mapIndex() (*mapping, error) {
	f, ok := x.r.(*os.File)
	if !ok || x.version != 2 {
		return nil, errUnsupportedPack
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("map pack index: %w", err)
	}
	// An index is replaced by rename, never rewritten: the open file is
	// the one parsePackIndex checked, and a different size means it is
	// not.
	if fi.Size() != x.size {
		return nil, fmt.Errorf("pack index changed size while open: %w", errUnsupportedPack)
	}
	return mapFile(f, fi)
}

// findMapped is find over d, the index as mapIndex mapped it. The bounds
// parsePackIndex checked against the file's size hold every position
// read here inside d; a 64-bit offset the table does not have is
// reported as not found, and the caller's slower reader says why.
func (x *packIndex) findMapped(d []byte, h plumbing.Hash) (uint64, bool) {
	if int64(len(d)) != x.size {
		return 0, false
	}
	lo, hi := x.fanout(int(h[0])), x.fanout(int(h[0])+1)
	// Names are compared by their first 8 bytes as a number, which
	// almost always decides, then whole.
	key := binary.BigEndian.Uint64(h[:8])
	for lo < hi {
		mid := lo + (hi-lo)/2
		at := idxNamesStart + 20*mid
		c := cmp.Compare(binary.BigEndian.Uint64(d[at:at+8]), key)
		if c == 0 {
			c = bytes.Compare(d[at+8:at+20], h[8:])
		}
		switch {
		case c < 0:
			lo = mid + 1
		case c > 0:
			hi = mid
		default:
			o := binary.BigEndian.Uint32(d[idxNamesStart+24*x.n+4*mid:])
			if o&0x80000000 == 0 {
				return uint64(o), true
			}
			k := uint64(o &^ 0x80000000)
			if k >= x.large {
				return 0, false
			}
			return binary.BigEndian.Uint64(d[idxNamesStart+28*x.n+8*k:]), true
		}
	}
	return 0, false
}
