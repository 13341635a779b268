package gitstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
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
// object too large to hold in memory): the caller reads that object
// through go-git instead, as before.
var errUnsupportedPack = errors.New("pack layout not handled by the fast reader")

// packIndex is a parsed view of one .idx file's bytes, which are untrusted
// (packs arrive by fetch): every access is bounds-checked, and a table
// that contradicts itself is reported, never followed out of range.
type packIndex struct {
	data    []byte
	version int
	n       uint64 // objects in the pack
	large   uint64 // entries in the 64-bit offset table (version 2)
}

// parsePackIndex checks the header, the fan-out table and the file size
// of an index, reading nothing else.
func parsePackIndex(data []byte) (*packIndex, error) {
	if len(data) < idxNamesStart+idxTrailerLen {
		return nil, fmt.Errorf("pack index is truncated (%d bytes)", len(data))
	}
	x := &packIndex{data: data, version: 1}
	if bytes.Equal(data[:4], idxMagic) {
		if v := binary.BigEndian.Uint32(data[4:8]); v != 2 {
			return nil, fmt.Errorf("pack index of version %d: %w", v, errUnsupportedPack)
		}
		x.version = 2
	}
	prev := uint32(0)
	for i := 0; i < 256; i++ {
		c := binary.BigEndian.Uint32(data[x.fanoutStart()+4*uint64(i):])
		if c < prev {
			return nil, errors.New("pack index is corrupt: its fan-out table decreases")
		}
		prev = c
	}
	x.n = uint64(prev)
	size := uint64(len(data))
	if x.version == 1 {
		if size != idxFanoutLen+24*x.n+idxTrailerLen {
			return nil, fmt.Errorf("pack index is corrupt: %d bytes for %d objects", size, x.n)
		}
		return x, nil
	}
	fixed := uint64(idxNamesStart) + 28*x.n + idxTrailerLen // cannot overflow: n < 2^32
	if size < fixed || (size-fixed)%8 != 0 {
		return nil, fmt.Errorf("pack index is corrupt: %d bytes for %d objects", size, x.n)
	}
	x.large = (size - fixed) / 8
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
	return uint64(binary.BigEndian.Uint32(x.data[x.fanoutStart()+4*uint64(b-1):]))
}

// name returns the i-th object name (i < n).
func (x *packIndex) name(i uint64) []byte {
	at := idxNamesStart + 20*i
	if x.version == 1 {
		at = idxFanoutLen + 24*i + 4
	}
	return x.data[at : at+20]
}

// find returns the pack offset of object h, and whether the index has it.
func (x *packIndex) find(h plumbing.Hash) (uint64, bool, error) {
	lo, hi := x.fanout(int(h[0])), x.fanout(int(h[0])+1)
	for lo < hi {
		mid := lo + (hi-lo)/2
		switch c := bytes.Compare(x.name(mid), h[:]); {
		case c == 0:
			off, err := x.offset(mid)
			return off, err == nil, err
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
	if x.version == 1 {
		return uint64(binary.BigEndian.Uint32(x.data[idxFanoutLen+24*i:])), nil
	}
	at := idxNamesStart + 24*x.n + 4*i
	o := binary.BigEndian.Uint32(x.data[at:])
	if o&0x80000000 == 0 {
		return uint64(o), nil
	}
	k := uint64(o &^ 0x80000000)
	if k >= x.large {
		return 0, fmt.Errorf("pack index is corrupt: 64-bit offset %d of %d", k, x.large)
	}
	at = idxNamesStart + 28*x.n + 8*k
	return binary.BigEndian.Uint64(x.data[at:]), nil
}

// openPackIndex maps and parses the index at path. The returned mapping
// must stay reachable while the index is used (see mapping).
func openPackIndex(path string) (*packIndex, *mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	m, err := mapFile(f, fi)
	if err != nil {
		return nil, nil, err
	}
	x, err := parsePackIndex(m.data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return x, m, nil
}
