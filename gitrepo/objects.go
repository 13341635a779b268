package gitrepo

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // git object names are SHA-1 by definition
	"crypto/sha256"
	hexpkg "encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/klauspost/compress/zlib"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// Objects is the in-process object database of a repository. It
// writes loose objects directly (the format is tiny and this skips
// work for objects that already exist) and reads them, and packed ones,
// itself; git reads what it does not (see read).
type Objects struct {
	dir    string // <common>/objects
	format string // SHA1, or SHA256: read through git (see sha256.go)

	mu    sync.Mutex
	packs *packSet // see lookup
}

// NewObjects is the object database of the repository whose common git
// directory is commonDir.
func NewObjects(commonDir string) *Objects {
	return NewObjectsFor(commonDir, SHA1)
}

// NewObjectsFor is NewObjects for a repository of object format format
// (SHA1 or SHA256): objects are written in process either way, named by
// the repository's own hash; a SHA-256 repository's are read through git.
func NewObjectsFor(commonDir, format string) *Objects {
	return &Objects{dir: filepath.Join(commonDir, "objects"), format: format}
}

// Refresh drops the list of packs, which is read once: after a git fetch
// (or gc) brought new packs, a fresh one sees them.
func (o *Objects) Refresh() {
	o.mu.Lock()
	o.packs = nil
	o.mu.Unlock()
}

// HashObject computes the SHA-1 name of content as an object of type typ.
func HashObject(typ Type, content []byte) OID {
	return oidOf(hashObject(plumbingType(typ), content))
}

// Hash computes the name content of type typ has in this repository,
// with its own hash function (SHA-1 or SHA-256).
func (o *Objects) Hash(typ Type, content []byte) OID { return HashFor(o.format, typ, content) }

// HashFor computes the name content of type typ has in a repository of
// object format format (SHA1 or SHA256).
func HashFor(format string, typ Type, content []byte) OID {
	if format != SHA256 {
		return HashObject(typ, content)
	}
	h := sha256.New()
	h.Write([]byte(string(typ) + " " + strconv.Itoa(len(content)) + "\x00"))
	h.Write(content)
	id, _ := FromBytes(h.Sum(nil))
	return id
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

// Write stores content as a loose object of type typ unless it already
// exists loose. A duplicate in a pack is harmless: git prefers either
// copy.
func (o *Objects) Write(typ Type, content []byte) (OID, error) {
	pt := plumbingType(typ)
	if pt == plumbing.InvalidObject {
		return OID{}, fmt.Errorf("cannot write an object of type %q", typ)
	}
	return o.writeID(pt, content)
}

// write is writeID for the reader's own 20-byte hashes (tests).
func (o *Objects) write(typ plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	id, err := o.writeID(typ, content)
	h, _ := hashOf(id)
	return h, err
}

func (o *Objects) writeID(typ plumbing.ObjectType, content []byte) (OID, error) {
	h := o.Hash(gitTypes[typ], content)
	hex := h.String()
	dir := filepath.Join(o.dir, hex[:2])
	path := filepath.Join(dir, hex[2:])
	if _, err := os.Stat(path); err == nil {
		// Reusing an object on disk: freshen it as git does, so that a
		// concurrent gc's prune (which spares recent objects) keeps it.
		if freshen(path) == nil {
			return h, nil
		}
		// It vanished (pruned) between the stat and now: write it again.
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
	// into place, so a reader never sees a partial object. A concurrent
	// git prune deletes tmp_obj_ files (at once with --prune=now) and
	// prune-packed the fan-out directories it empties, so the whole
	// write is retried when either vanishes under it.
	var werr error
	for try := 0; try < 10; try++ {
		if werr = writeLoose(dir, path, buf.Bytes()); !errors.Is(werr, fs.ErrNotExist) {
			break
		}
	}
	if werr != nil {
		return h, fmt.Errorf("write object %s: %w", hex, werr)
	}
	_ = freshen(path)
	return h, nil
}

// freshen sets a loose object's mtime to now, as git does when it
// reuses an object instead of writing it: git prune spares objects more
// recent than its expiry (two weeks by default), so an old unreachable
// object lazy is about to reference again is not pruned under it. With
// --prune=now nothing is recent: see SECURITY.md ("git gc --prune=now").
func freshen(path string) error {
	t := time.Now()
	return os.Chtimes(path, t, t)
}

// writeLoose writes one compressed object through a temporary file.
func writeLoose(dir, path string, data []byte) error {
	tmp := filepath.Join(dir, "tmp_obj_"+randSuffix())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o755); err == nil {
			f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		}
	}
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
	}
	return werr
}

func randSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hexpkg.EncodeToString(b[:])
}

// read returns the object h of type typ after checking from its header
// that it is at most limit bytes; content over the limit is never read
// (a loose object's is read only when the caller asks for it).
func (o *Objects) read(typ plumbing.ObjectType, h plumbing.Hash, what string, limit int64) (plumbing.EncodedObject, error) {
	obj, err := o.lookup(typ, h, limit)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		o.Refresh()
		obj, err = o.lookup(typ, h, limit)
	}
	if err != nil && !errors.Is(err, ErrOversize) {
		// git reads what lazy's readers do not: alternates, a pack layout
		// they decline, a repack's temporary pack (see gitHas). Where git
		// cannot either, a corruption lazy found is the better report.
		gobj, gerr := o.gitRead(typ, h, what, limit)
		switch {
		case gerr == nil || errors.Is(gerr, ErrOversize):
			obj, err = gobj, gerr
		case errors.Is(err, plumbing.ErrObjectNotFound):
			err = gerr
		}
	}
	if err != nil {
		if errors.Is(err, ErrMissing) || errors.Is(err, ErrOversize) {
			return nil, err
		}
		return nil, fmt.Errorf("read %s %s: %w", typ, h, err)
	}
	if obj.Size() > limit {
		return nil, Oversize(what, oidOf(h), obj.Size(), limit)
	}
	return obj, nil
}

// retry runs a read again while the repository's packs are changing
// under it: a concurrent git repack or gc deletes the packs the reader
// had listed (the objects now live in a new pack, or loose), which reads
// as a missing pack or object until the packs are scanned again, and
// overlapping repacks can replace them faster than one re-scan. A failure
// stands only once an attempt began and ended with the same, settled set
// of packs (git re-scans once, but holds its packs open, so a deleted
// pack stays readable to it; lazy opens them lazily), or after
// settleTimeout. An oversize object is not retried: its size will not
// change.
func retry[T any](o *Objects, f func() (T, error)) (T, error) {
	v, err := f()
	if err == nil || errors.Is(err, ErrOversize) {
		return v, err
	}
	deadline := time.Now().Add(settleTimeout)
	for try := 1; ; try++ {
		before, settled := o.packState()
		o.Refresh()
		v, err = f()
		if err == nil || errors.Is(err, ErrOversize) || time.Now().After(deadline) {
			return v, err
		}
		if after, _ := o.packState(); settled && after == before {
			return v, err
		}
		time.Sleep(time.Duration(min(try, 10)) * 5 * time.Millisecond)
	}
}

// settleTimeout bounds how long a read waits for the packs to settle
// before its failure stands; a repack loop on a small repository replaces
// packs several times a second, and a pack that never gets its index is
// reported by lazy doctor.
const settleTimeout = 10 * time.Second

// packState describes the packs in the repository now, as one comparable
// string of names and modification times: the same string means the
// same packs (a repack that writes a pack of the same name as an old one
// replaces the file, which changes its time). settled is false while a
// pack is being installed or deleted, when a .pack has no .idx or an .idx
// no .pack: git renames a new pack's .pack before its .idx and deletes an
// old one's .pack first, and lazy's reader needs both halves. A half
// older than halfPackAge is no longer in flight but left behind (see
// OrphanPack), and waiting would not bring its other half.
func (o *Objects) packState() (set string, settled bool) {
	ents, err := os.ReadDir(filepath.Join(o.dir, "pack"))
	if err != nil {
		return "unreadable: " + err.Error(), errors.Is(err, fs.ErrNotExist)
	}
	var b strings.Builder
	type pair struct {
		halves int
		young  bool
	}
	pairs := map[string]*pair{}
	now := time.Now()
	for _, e := range ents {
		name := e.Name()
		base, isPack := strings.CutSuffix(name, ".pack")
		if !isPack {
			var isIdx bool
			if base, isIdx = strings.CutSuffix(name, ".idx"); !isIdx {
				continue
			}
		}
		b.WriteString(name)
		info, err := e.Info()
		if err != nil {
			b.WriteString(" gone\n")
			continue
		}
		b.WriteString(" " + strconv.FormatInt(info.ModTime().UnixNano(), 10) + "\n")
		if strings.HasPrefix(name, "pack-") {
			p := pairs[base]
			if p == nil {
				p = &pair{}
				pairs[base] = p
			}
			p.halves++
			p.young = p.young || now.Sub(info.ModTime()) < halfPackAge
		}
	}
	for _, p := range pairs {
		if p.halves == 1 && p.young {
			return b.String(), false
		}
	}
	return b.String(), true
}

// halfPackAge is how long a .pack without its .idx (or the reverse) is
// taken for a pack being installed or deleted.
const halfPackAge = 5 * time.Second

// ReadBlob reads blob h (named name in errors), refusing it unread when
// it is over limit. The bytes may be the pack reader's own (a record's
// texts are large): callers only read them.
func (o *Objects) ReadBlob(id OID, name string, limit int64) ([]byte, error) {
	if o.viaGit() {
		return o.gitObject(Blob, id, name, limit)
	}
	h, err := hashOf(id)
	if err != nil {
		return nil, err
	}
	return retry(o, func() ([]byte, error) {
		obj, err := o.read(plumbing.BlobObject, h, name, limit)
		if err != nil {
			return nil, err
		}
		if po, ok := obj.(*packedObject); ok && int64(len(po.data)) == po.size {
			return po.data, nil // already inflated, and checked: no second copy
		}
		rd, err := obj.Reader()
		if err != nil {
			return nil, fmt.Errorf("read blob %s: %w", h, err)
		}
		defer func() { _ = rd.Close() }()
		// The header could lie about a loose object's size: never read more.
		b, err := io.ReadAll(io.LimitReader(rd, limit+1))
		if err == nil && int64(len(b)) > limit {
			return nil, Oversize(name, oidOf(h), int64(len(b)), limit)
		}
		return b, err
	})
}

// BlobSize returns the size of blob h (snapshot file name) from its
// header, reading none of its content.
func (o *Objects) BlobSize(id OID, name string) (int64, error) {
	if o.viaGit() {
		return o.gitBlobSize(id, name)
	}
	h, err := hashOf(id)
	if err != nil {
		return 0, err
	}
	return retry(o, func() (int64, error) {
		obj, err := o.lookup(plumbing.BlobObject, h, -1)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			o.Refresh()
			obj, err = o.lookup(plumbing.BlobObject, h, -1)
		}
		if err == nil {
			return obj.Size(), nil
		}
		if _, size, gerr := o.gitSize(plumbing.BlobObject, h); gerr == nil {
			return size, nil
		}
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			err = fmt.Errorf("%s (blob %s): %w", name, h, ErrMissing)
		}
		return 0, err
	})
}

// ReadTree reads and decodes tree h, of at most MaxTree bytes.
func (o *Objects) ReadTree(id OID) (*ParsedTree, error) {
	if o.viaGit() {
		return o.gitTree(id)
	}
	h, err := hashOf(id)
	if err != nil {
		return nil, err
	}
	return retry(o, func() (*ParsedTree, error) {
		obj, err := o.read(plumbing.TreeObject, h, "tree", MaxTree)
		if err != nil {
			return nil, err
		}
		return decodeTree(obj)
	})
}

// ReadCommit reads and decodes commit h, of at most MaxCommit bytes.
func (o *Objects) ReadCommit(id OID) (*ParsedCommit, error) {
	if o.viaGit() {
		return o.gitCommit(id)
	}
	h, err := hashOf(id)
	if err != nil {
		return nil, err
	}
	return retry(o, func() (*ParsedCommit, error) {
		obj, err := o.read(plumbing.CommitObject, h, "commit", MaxCommit)
		if err != nil {
			return nil, err
		}
		return decodeCommit(obj)
	})
}

// Has reports whether object h exists, loose or packed. Loose is
// checked first and again last: a repack moves an object from loose into
// a new pack (then prune-packed deletes the loose copy) and -A moves
// unreachable ones the other way, so between the two checks of one
// attempt with a stable set of packs (see retry) the object is seen
// wherever it is.
func (o *Objects) Has(id OID) bool {
	if o.viaGit() {
		return o.gitHasID(id)
	}
	h, err := hashOf(id)
	return err == nil && o.has(h)
}

func (o *Objects) has(h plumbing.Hash) bool {
	hex := h.String()
	loose := filepath.Join(o.dir, hex[:2], hex[2:])
	found, _ := retry(o, func() (bool, error) {
		if _, err := os.Stat(loose); err == nil {
			return true, nil
		}
		if o.packed(h) {
			return true, nil
		}
		if _, err := os.Stat(loose); err == nil {
			return true, nil
		}
		if o.gitHas(h) {
			return true, nil
		}
		return false, ErrMissing
	})
	return found
}

// gitHas asks git whether it has object h: the last word before lazy
// calls an object missing. A repack's pack-objects writes its new pack as
// objects/pack/.tmp-<pid>-pack-<hash>.idx before repack renames it into
// place, and git counts any .idx there as a pack, so a concurrent
// prune-packed may already have deleted the loose copies of objects that
// now live only in that pack. lazy's reader reads only pack-<hash>
// names and cannot see them; git can.
func (o *Objects) gitHas(h plumbing.Hash) bool {
	return gitcli.New(filepath.Dir(o.dir), "cat-file", "-e", h.String()).Run(context.Background()) == nil
}

// gitRead reads object h through git when lazy's readers cannot (see
// read and gitHas), checking its type and size from git's answer first,
// so an oversize object is never read.
func (o *Objects) gitRead(typ plumbing.ObjectType, h plumbing.Hash, what string, limit int64) (plumbing.EncodedObject, error) {
	missing := fmt.Errorf("%s %s: %w", typ, h, ErrMissing)
	typ, size, err := o.gitSize(typ, h)
	if err != nil {
		return nil, err
	}
	if size > limit {
		return nil, Oversize(what, oidOf(h), size, limit)
	}
	content, err := gitcli.New(filepath.Dir(o.dir), "cat-file", typ.String(), h.String()).Output(context.Background())
	if err != nil || int64(len(content)) != size {
		return nil, missing // gone again meanwhile: retry decides
	}
	obj := &plumbing.MemoryObject{}
	obj.SetType(typ)
	obj.SetSize(size)
	if _, err := obj.Write(content); err != nil {
		return nil, fmt.Errorf("read %s %s: %w", typ, h, err)
	}
	return obj, nil
}

// gitSize asks git the type and size of object h of type typ (of any
// type for plumbing.AnyObject).
func (o *Objects) gitSize(typ plumbing.ObjectType, h plumbing.Hash) (plumbing.ObjectType, int64, error) {
	missing := fmt.Errorf("%s %s: %w", typ, h, ErrMissing)
	info, err := gitcli.New(filepath.Dir(o.dir), "cat-file", "--batch-check").Stdin([]byte(h.String() + "\n")).Output(context.Background())
	if err != nil {
		return 0, 0, missing
	}
	f := strings.Fields(string(info))
	if len(f) != 3 || f[0] != h.String() {
		return 0, 0, missing // "<hash> missing"
	}
	got, err := plumbing.ParseObjectType(f[1])
	if err != nil || (typ != plumbing.AnyObject && got != typ) {
		return 0, 0, missing // another type
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return 0, 0, missing
	}
	return got, size, nil
}

// TreeEntry is one entry of a tree being built.
type TreeEntry struct {
	Name string
	Hash OID
	Dir  bool
}

func treeKey(e TreeEntry) string {
	if e.Dir {
		return e.Name + "/"
	}
	return e.Name
}

// LooseEstimate estimates the number of loose objects from a sample of the
// fan-out directories, the way `git gc --auto` does.
func (o *Objects) LooseEstimate(sample int) int {
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
