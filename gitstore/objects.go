package gitstore

import (
	"bytes"
	"compress/zlib"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // git object names are SHA-1 by definition
	hexpkg "encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// objects writes loose objects directly (the format is tiny and this skips
// work for objects that already exist) and reads through go-git, which
// understands packs, deltas and alternates.
type objects struct {
	dir string // <common>/objects

	mu      sync.Mutex
	storage *filesystem.Storage
}

func newObjects(commonDir string) *objects {
	return &objects{dir: filepath.Join(commonDir, "objects")}
}

func (o *objects) store() *filesystem.Storage {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.storage == nil {
		// Loose objects over the threshold are opened lazily, so their size
		// is known from the header before any content is read (packed
		// objects above 16 KiB already are); read checks it.
		o.storage = filesystem.NewStorageWithOptions(osfs.New(filepath.Dir(o.dir)), cache.NewObjectLRU(8<<20), filesystem.Options{LargeObjectThreshold: 256 << 10})
	}
	return o.storage
}

// refresh drops the storage, whose list of packs is read once: after a
// git fetch (or gc) brought new packs, a fresh one sees them.
func (o *objects) refresh() {
	o.mu.Lock()
	o.storage = nil
	o.mu.Unlock()
}

// hashObject computes the git object name of content of the given type.
func hashObject(typ plumbing.ObjectType, content []byte) plumbing.Hash {
	h := sha1.New() //nolint:gosec // see import
	h.Write([]byte(typ.String() + " " + strconv.Itoa(len(content)) + "\x00"))
	h.Write(content)
	var out plumbing.Hash
	copy(out[:], h.Sum(nil))
	return out
}

// zlibPool reuses compressors: a fresh flate writer allocates about a
// megabyte, which dominated the cost of a write.
var zlibPool = sync.Pool{New: func() any {
	w, _ := zlib.NewWriterLevel(io.Discard, zlib.BestSpeed)
	return w
}}

// write stores content as a loose object unless it already exists loose.
// A duplicate in a pack is harmless: git prefers either copy.
func (o *objects) write(typ plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	h := hashObject(typ, content)
	hex := h.String()
	dir := filepath.Join(o.dir, hex[:2])
	path := filepath.Join(dir, hex[2:])
	if _, err := os.Stat(path); err == nil {
		return h, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(content)/2 + 64)
	zw := zlibPool.Get().(*zlib.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write([]byte(typ.String() + " " + strconv.Itoa(len(content)) + "\x00"))
	_, _ = zw.Write(content)
	err := zw.Close()
	zlibPool.Put(zw)
	if err != nil {
		return h, fmt.Errorf("compress object %s: %w", hex, err)
	}
	// Same shape as git's own tmp_obj_ files: written aside, then renamed
	// into place, so a reader never sees a partial object.
	tmp := filepath.Join(dir, "tmp_obj_"+randSuffix())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	// git prune-packed (run by repack and gc) removes fan-out directories
	// it empties, so the directory can vanish between our mkdir and open;
	// git's own writer retries the same way.
	for try := 0; errors.Is(err, fs.ErrNotExist) && try < 10; try++ {
		if err = os.MkdirAll(dir, 0o755); err == nil {
			f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		}
	}
	if err != nil {
		return h, fmt.Errorf("write object %s: %w", hex, err)
	}
	_, werr := f.Write(buf.Bytes())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return h, fmt.Errorf("write object %s: %w", hex, werr)
	}
	return h, nil
}

func randSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hexpkg.EncodeToString(b[:])
}

// ErrMissingObject means a ref or tree names an object the repository does
// not have (a damaged or partially fetched repository).
var ErrMissingObject = errors.New("object missing from the repository")

// read returns the object h of type typ after checking from its header
// that it is at most limit bytes; its content is not read yet.
func (o *objects) read(typ plumbing.ObjectType, h plumbing.Hash, what string, limit int64) (plumbing.EncodedObject, error) {
	obj, err := o.store().EncodedObject(typ, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		o.refresh()
		obj, err = o.store().EncodedObject(typ, h)
	}
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("%s %s: %w", typ, h, ErrMissingObject)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", typ, h, err)
	}
	if obj.Size() > limit {
		return nil, oversize(what, h, obj.Size(), limit)
	}
	return obj, nil
}

// readBlob reads the blob of snapshot file name (see limitFor), refusing
// it unread when it is over that file's limit.
func (o *objects) readBlob(h plumbing.Hash, name string) ([]byte, error) {
	limit := limitFor(name)
	obj, err := o.read(plumbing.BlobObject, h, name, limit)
	if err != nil {
		return nil, err
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	defer func() { _ = rd.Close() }()
	// The header could lie about a loose object's size: never read more.
	b, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if err == nil && int64(len(b)) > limit {
		return nil, oversize(name, h, int64(len(b)), limit)
	}
	return b, err
}

func (o *objects) readTree(h plumbing.Hash) (*object.Tree, error) {
	obj, err := o.read(plumbing.TreeObject, h, "tree", MaxTree)
	if err != nil {
		return nil, err
	}
	return object.DecodeTree(o.store(), obj)
}

func (o *objects) readCommit(h plumbing.Hash) (*object.Commit, error) {
	obj, err := o.read(plumbing.CommitObject, h, "commit", MaxCommit)
	if err != nil {
		return nil, err
	}
	return object.DecodeCommit(o.store(), obj)
}

// treeEntry is one entry of a tree being built.
type treeEntry struct {
	name string
	hash plumbing.Hash
	dir  bool
}

// writeTree encodes entries in git's canonical order (directories sort as
// if their name ended in "/") and stores the tree.
func (o *objects) writeTree(entries []treeEntry) (plumbing.Hash, error) {
	sort.Slice(entries, func(i, j int) bool { return treeKey(entries[i]) < treeKey(entries[j]) })
	var buf bytes.Buffer
	for _, e := range entries {
		mode := filemode.Regular
		if e.dir {
			mode = filemode.Dir
		}
		fmt.Fprintf(&buf, "%o %s\x00", uint32(mode), e.name)
		buf.Write(e.hash[:])
	}
	return o.write(plumbing.TreeObject, buf.Bytes())
}

func treeKey(e treeEntry) string {
	if e.dir {
		return e.name + "/"
	}
	return e.name
}

// looseEstimate estimates the number of loose objects from a sample of the
// fan-out directories, the way `git gc --auto` does.
func (o *objects) looseEstimate(sample int) int {
	if sample < 1 {
		sample = 1
	}
	if sample > 256 {
		sample = 256
	}
	n := 0
	for i := 0; i < sample; i++ {
		// Spread the sample over the fan-out to keep it unbiased.
		d := (i * 256 / sample) & 0xff
		entries, err := os.ReadDir(filepath.Join(o.dir, fmt.Sprintf("%02x", d)))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return 0
			}
			continue
		}
		n += len(entries)
	}
	return n * 256 / sample
}
