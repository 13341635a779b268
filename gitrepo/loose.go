package gitrepo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
)

// errCorruptLoose is a loose object whose zlib stream or header is not
// what git writes.
var errCorruptLoose = errors.New("loose object is corrupt")

// readLoose reads loose object h of type typ (plumbing.AnyObject: any).
// Its header is inflated first: an object over limit is returned with
// its size and no content, and the content must be exactly as long as
// the header says. A missing file, or one of another type, reads as
// plumbing.ErrObjectNotFound.
func (o *Objects) readLoose(typ plumbing.ObjectType, h plumbing.Hash, limit int64) (plumbing.EncodedObject, error) {
	name := h.String()
	f, err := os.Open(filepath.Join(o.dir, name[:2], name[2:]))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, plumbing.ErrObjectNotFound
		}
		return nil, fmt.Errorf("open loose object %s: %w", h, err)
	}
	defer func() { _ = f.Close() }()
	zr, err := zlibReader(bufio.NewReaderSize(f, 4096))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errCorruptLoose, h, err)
	}
	defer zlibReaders.Put(zr)
	var head [32]byte
	t, size, rest, ok := looseHeader(zr, &head)
	if !ok {
		return nil, fmt.Errorf("%w: %s has no valid header", errCorruptLoose, h)
	}
	got, err := plumbing.ParseObjectType(string(t))
	if err != nil || got == plumbing.OFSDeltaObject || got == plumbing.REFDeltaObject {
		return nil, fmt.Errorf("%w: %s has type %q", errCorruptLoose, h, t)
	}
	if typ != plumbing.AnyObject && got != typ {
		return nil, plumbing.ErrObjectNotFound // as a pack read reports it
	}
	obj := &packedObject{h: h, typ: got, size: clamp(size)}
	if over(size, limit) {
		return obj, nil
	}
	if obj.data, err = inflateN(zr, nil, rest, size, true); err != nil {
		return nil, fmt.Errorf("%w: %s is %w (%d bytes)", errCorruptLoose, h, err, size)
	}
	return obj, nil
}

// looseHeader inflates a loose object's header, "<type> <size>\x00", from
// zr into head, and returns the type, the size and the content inflated
// along with the header.
func looseHeader(zr io.Reader, head *[32]byte) (typ []byte, size uint64, rest []byte, ok bool) {
	n, nul := 0, -1
	for nul < 0 {
		k, err := zr.Read(head[n:])
		n += k
		nul = bytes.IndexByte(head[:n], 0)
		if nul < 0 && (err != nil || n == len(head)) {
			return nil, 0, nil, false
		}
	}
	t, digits, ok := bytes.Cut(head[:nul], []byte{' '})
	if !ok || len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return nil, 0, nil, false
	}
	size, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil {
		return nil, 0, nil, false
	}
	return t, size, head[nul+1 : n], true
}
