package gitrepo

import (
	"context"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Local is the in-process Repo over the repository's files: the pack,
// loose-object and ref readers lazy's list and show run on, for a
// repository with the files ref backend. A SHA-256 repository's objects
// and refs are written in process too, and read through git (see
// sha256.go). It passes the conformance suite of gitrepo/repotest in
// both formats, as Git does. Beyond Repo, it offers the object
// database and the ref store themselves (Objects, Refs) to the fast paths
// of the task store.
type Local struct {
	refs   *Refs
	objs   *Objects
	format string
}

// OpenLocal is the in-process reader of the repository whose common git
// directory is commonDir, which must be a SHA-1 repository with the files
// ref backend (see DetectFormat).
func OpenLocal(commonDir string) *Local { return OpenLocalFor(commonDir, SHA1) }

// OpenLocalFor is OpenLocal for a repository of object format format
// (SHA1 or SHA256), as DetectFormat found it; the task store runs on
// this.
func OpenLocalFor(commonDir, format string) *Local {
	return &Local{refs: NewRefsFor(commonDir, format), objs: NewObjectsFor(commonDir, format), format: format}
}

// OpenLocation is the in-process Repo of the repository loc locates,
// sharing loc's ref store (and so its map of packed-refs).
func OpenLocation(loc *Location) *Local {
	return &Local{refs: loc.Refs, objs: NewObjectsFor(loc.CommonDir, loc.ObjectFormat), format: loc.ObjectFormat}
}

// Objects is the object database Local reads and writes.
func (l *Local) Objects() *Objects { return l.objs }

// Refs is the ref store Local reads and writes.
func (l *Local) Refs() *Refs { return l.refs }

// Format is the repository's object format.
func (l *Local) Format() string { return l.format }

// hashOf converts an id to the reader's 20-byte hash, refusing SHA-256.
func hashOf(id OID) (plumbing.Hash, error) {
	var h plumbing.Hash
	if id.Format() != SHA1 {
		return h, fmt.Errorf("object id %q is not a SHA-1 id: %w", id, ErrMissing)
	}
	copy(h[:], id.Bytes())
	return h, nil
}

// oidOf is the id of a 20-byte hash.
func oidOf(h plumbing.Hash) OID {
	id, _ := FromBytes(h[:])
	return id
}

var gitTypes = map[plumbing.ObjectType]Type{
	plumbing.BlobObject:   Blob,
	plumbing.TreeObject:   Tree,
	plumbing.CommitObject: Commit,
	plumbing.TagObject:    Tag,
}

// plumbingType is the reader's name of an object type
// (plumbing.InvalidObject for none).
func plumbingType(typ Type) plumbing.ObjectType {
	for pt, gt := range gitTypes {
		if gt == typ {
			return pt
		}
	}
	return plumbing.InvalidObject
}

// Read returns object id, checked against typ and limit before its
// content is read.
func (l *Local) Read(id OID, typ Type, limit int64) (*Object, error) {
	if l.objs.viaGit() {
		return l.objs.gitReadAny(id, typ, limit)
	}
	h, err := hashOf(id)
	if err != nil {
		return nil, err
	}
	obj, err := l.objs.read(plumbing.AnyObject, h, "object", limit)
	if err != nil {
		return nil, err
	}
	got, ok := gitTypes[obj.Type()]
	if !ok {
		return nil, fmt.Errorf("object %s has type %s", id, obj.Type())
	}
	if err := CheckType(id, typ, got, obj.Size(), limit); err != nil {
		return nil, err
	}
	content, err := content(obj, obj.Type())
	if err != nil {
		return nil, err
	}
	return &Object{Type: got, Size: obj.Size(), Content: content}, nil
}

// Has reports whether the repository holds object id.
func (l *Local) Has(id OID) (bool, error) {
	if l.objs.viaGit() {
		return l.objs.Has(id), nil
	}
	h, err := hashOf(id)
	if err != nil {
		return false, nil //nolint:nilerr // a SHA-256 id is not in a SHA-1 repository
	}
	return l.objs.has(h), nil
}

// Write stores content as a loose object of type typ.
func (l *Local) Write(typ Type, content []byte) (OID, error) {
	return l.objs.Write(typ, content)
}

// ReadRef returns the id ref name holds, and whether it exists.
func (l *Local) ReadRef(name string) (OID, bool, error) {
	if err := ValidRefName(name); err != nil {
		return OID{}, false, err
	}
	return l.refs.ReadRef(name)
}

// ListRefs returns every ref under prefix.
func (l *Local) ListRefs(prefix string) (map[string]OID, error) {
	if err := ValidRefPrefix(prefix); err != nil {
		return nil, err
	}
	return l.refs.ListRefs(prefix)
}

// CompareAndSwap moves ref name from old to new under git's lock-file
// protocol, once new exists.
func (l *Local) CompareAndSwap(name string, old, new OID) error {
	if err := ValidRefName(name); err != nil {
		return err
	}
	if !old.IsZero() && old.Format() != l.format {
		return fmt.Errorf("object id %q is not a %s id: %w", old, l.format, ErrMissing)
	}
	if new.Format() != l.format {
		return fmt.Errorf("object id %q is not a %s id: %w", new, l.format, ErrMissing)
	}
	if !l.objs.Has(new) {
		return fmt.Errorf("update ref %s: %s: %w", name, new, ErrMissing)
	}
	return l.refs.CompareAndSwap(name, old, new)
}

// ReadBlob reads blob id from the packs or loose, without a copy of
// an inflated packed blob.
func (l *Local) ReadBlob(id OID, name string, limit int64) ([]byte, error) {
	return l.objs.ReadBlob(id, name, limit)
}

// BlobSize reads blob id's size from its header.
func (l *Local) BlobSize(id OID, name string) (int64, error) { return l.objs.BlobSize(id, name) }

// ReadTree reads and decodes tree id.
func (l *Local) ReadTree(id OID) (*ParsedTree, error) { return l.objs.ReadTree(id) }

// ReadCommit reads and decodes commit id.
func (l *Local) ReadCommit(id OID) (*ParsedCommit, error) { return l.objs.ReadCommit(id) }

// SortedRefs merges the loose refs under prefix over the packed ones.
func (l *Local) SortedRefs(prefix string) ([]RefEntry, error) {
	if err := ValidRefPrefix(prefix); err != nil {
		return nil, err
	}
	return l.refs.SortedRefs(prefix)
}

// CountLooseRefs counts the ref files under prefix.
func (l *Local) CountLooseRefs(prefix string) int { return l.refs.CountLooseRefs(prefix) }

// CompareAndSwapVerified moves ref name under git's lock-file protocol,
// running verify under the lock; verify, not a lookup of new, is what
// vouches for the objects.
func (l *Local) CompareAndSwapVerified(name string, old, new OID, verify func() error) error {
	if err := ValidRefName(name); err != nil {
		return err
	}
	return l.refs.CompareAndSwapVerified(name, old, new, verify)
}

// Bulk maps the indexes of the packs for one listing (every lookup falls
// back in a SHA-256 repository, or one with replace refs).
func (l *Local) Bulk() *Bulk { return l.objs.Bulk(l.refs) }

// LooseEstimate samples the fan-out directories.
func (l *Local) LooseEstimate(sample int) int { return l.objs.LooseEstimate(sample) }

// PackCount counts the packs.
func (l *Local) PackCount() int { return l.objs.PackCount() }

// OrphanPacks lists the packs without an index.
func (l *Local) OrphanPacks(now time.Time, minAge time.Duration) ([]OrphanPack, error) {
	return l.objs.OrphanPacks(now, minAge)
}

// IndexPack indexes an orphaned pack with git index-pack.
func (l *Local) IndexPack(ctx context.Context, p OrphanPack) error { return l.objs.IndexPack(ctx, p) }

// Close releases nothing: maps are released when unreachable.
func (l *Local) Close() error { return nil }

// Open serves the repository whose common git directory is commonDir by
// the implementation that reads it: the in-process reader for a SHA-1
// repository, git processes for a SHA-256 one. A format neither reads
// (reftable, an unknown extension) is refused by DetectFormat in one
// sentence; cacheFile is its memo ("" for none).
func Open(commonDir, cacheFile string) (Repo, error) {
	format, err := DetectFormat(commonDir, cacheFile)
	if err != nil {
		return nil, err
	}
	if format == SHA1 {
		return OpenLocal(commonDir), nil
	}
	return OpenGit(commonDir)
}
