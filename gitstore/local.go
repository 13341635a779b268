package gitstore

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/lazyorch/lazy/gitrepo"
)

// Local is the in-process gitrepo.Repo over the repository's files: the
// pack, loose-object and ref readers lazy's list and show run on, for a
// SHA-1 repository with the files ref backend. It passes the conformance
// suite of gitrepo/repotest, as gitrepo.Git does.
func (r *Repo) Local() gitrepo.Repo {
	return &local{repo: r, objs: newObjects(r.CommonDir)}
}

type local struct {
	repo *Repo
	objs *objects
}

func (l *local) Format() string { return gitrepo.SHA1 }

// hashOf converts an id to the reader's 20-byte hash, refusing SHA-256.
func hashOf(id gitrepo.OID) (plumbing.Hash, error) {
	var h plumbing.Hash
	if id.Format() != gitrepo.SHA1 {
		return h, fmt.Errorf("object id %q is not a SHA-1 id: %w", id, gitrepo.ErrMissing)
	}
	copy(h[:], id.Bytes())
	return h, nil
}

// oidOf is the id of a 20-byte hash.
func oidOf(h plumbing.Hash) gitrepo.OID {
	id, _ := gitrepo.FromBytes(h[:])
	return id
}

var gitTypes = map[plumbing.ObjectType]gitrepo.Type{
	plumbing.BlobObject:   gitrepo.Blob,
	plumbing.TreeObject:   gitrepo.Tree,
	plumbing.CommitObject: gitrepo.Commit,
	plumbing.TagObject:    gitrepo.Tag,
}

func (l *local) Read(id gitrepo.OID, typ gitrepo.Type, limit int64) (*gitrepo.Object, error) {
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
	if err := gitrepo.CheckType(id, typ, got, obj.Size(), limit); err != nil {
		return nil, err
	}
	content, err := content(obj, obj.Type())
	if err != nil {
		return nil, err
	}
	return &gitrepo.Object{Type: got, Size: obj.Size(), Content: content}, nil
}

func (l *local) Has(id gitrepo.OID) (bool, error) {
	h, err := hashOf(id)
	if err != nil {
		return false, nil //nolint:nilerr // a SHA-256 id is not in a SHA-1 repository
	}
	return l.objs.has(h), nil
}

func (l *local) Write(typ gitrepo.Type, content []byte) (gitrepo.OID, error) {
	for pt, gt := range gitTypes {
		if gt == typ {
			h, err := l.objs.write(pt, content)
			return oidOf(h), err
		}
	}
	return gitrepo.OID{}, fmt.Errorf("cannot write an object of type %q", typ)
}

func (l *local) ReadRef(name string) (gitrepo.OID, bool, error) {
	if err := gitrepo.ValidRefName(name); err != nil {
		return gitrepo.OID{}, false, err
	}
	h, ok, err := l.repo.ReadRef(name)
	return oidOf(h), ok, err
}

func (l *local) ListRefs(prefix string) (map[string]gitrepo.OID, error) {
	if err := gitrepo.ValidRefPrefix(prefix); err != nil {
		return nil, err
	}
	refs, err := l.repo.ListRefs(prefix)
	if err != nil {
		return nil, err
	}
	out := make(map[string]gitrepo.OID, len(refs))
	for name, h := range refs {
		out[name] = oidOf(h)
	}
	return out, nil
}

func (l *local) CompareAndSwap(name string, old, new gitrepo.OID) error {
	if err := gitrepo.ValidRefName(name); err != nil {
		return err
	}
	var oldH plumbing.Hash
	if !old.IsZero() {
		h, err := hashOf(old)
		if err != nil {
			return err
		}
		oldH = h
	}
	newH, err := hashOf(new)
	if err != nil {
		return err
	}
	if !l.objs.has(newH) {
		return fmt.Errorf("update ref %s: %s: %w", name, new, gitrepo.ErrMissing)
	}
	return l.repo.CompareAndSwap(name, oldH, newH)
}

func (l *local) Close() error { return nil }
