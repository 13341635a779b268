package gitrepo

import (
	"bytes"
	"fmt"
	"sort"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// What a task record's write is made of, over any Repo: the tree
// encoding, the journal of one operation's objects and the checks made
// before a ref is moved onto them. They are written once, over the
// roles of Repo, so every implementation (SHA-1 or SHA-256, in process
// or through git) takes the same path.

// ObjectWriter stores an object: what WriteTree needs of a repository.
type ObjectWriter interface {
	Write(typ Type, content []byte) (OID, error)
}

// WriteTree encodes entries in git's canonical order (directories sort as
// if their name ended in "/") and stores the tree through w.
func WriteTree(w ObjectWriter, entries []TreeEntry) (OID, error) {
	sort.Slice(entries, func(i, j int) bool { return treeKey(entries[i]) < treeKey(entries[j]) })
	var buf bytes.Buffer
	for _, e := range entries {
		mode := filemode.Regular
		if e.Dir {
			mode = filemode.Dir
		}
		fmt.Fprintf(&buf, "%o %s\x00", uint32(mode), e.Name)
		buf.Write(e.Hash.Bytes())
	}
	return w.Write(Tree, buf.Bytes())
}

// EncodeCommit is the content of a commit of tree, with parent (none
// when zero), author and committer sig ("name <email> seconds zone")
// and message msg, as git writes it.
func EncodeCommit(tree, parent OID, sig, msg string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "tree %s\n", tree)
	if !parent.IsZero() {
		fmt.Fprintf(&b, "parent %s\n", parent)
	}
	fmt.Fprintf(&b, "author %s\ncommitter %s\n\n%s", sig, sig, msg)
	return b.Bytes()
}

// Journal remembers the objects one operation wrote, so that they can be
// written again if a concurrent gc pruned them before a ref protected
// them.
type Journal struct {
	mu   sync.Mutex
	objs []journalEntry
}

type journalEntry struct {
	typ     Type
	content []byte
	hash    OID
}

// Journaled returns a view of r that records every object written
// through it (WriteTree's included) in the returned Journal; everything
// else is r's.
func Journaled(r Repo) (Repo, *Journal) {
	j := &Journal{}
	return &journaled{Repo: r, j: j}, j
}

// journaled is the view Journaled returns.
type journaled struct {
	Repo
	j *Journal
}

// Write stores the object through the repository and records it, even
// when the write failed: a failed write is one more reason to verify.
func (v *journaled) Write(typ Type, content []byte) (OID, error) {
	id, err := v.Repo.Write(typ, content)
	if id.IsZero() {
		id = HashFor(v.Format(), typ, content)
	}
	v.j.mu.Lock()
	v.j.objs = append(v.j.objs, journalEntry{typ, content, id})
	v.j.mu.Unlock()
	return id, err
}

// Replay writes again, through w, every object j recorded; w skips
// those that still exist.
func Replay(w ObjectStore, j *Journal) error {
	if v, ok := w.(*journaled); ok {
		w = v.Repo // writing through the view would journal into j, which is held
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, e := range j.objs {
		if _, err := w.Write(e.typ, e.content); err != nil {
			return err
		}
	}
	return nil
}

// Present is ObjectStore.Has with a failure to answer taken as an
// absence: the checks before a ref moves refuse an object that cannot be
// confirmed.
func Present(r ObjectStore, id OID) bool {
	ok, err := r.Has(id)
	return ok && err == nil
}

// VerifyWritten checks that every object j recorded still exists, and
// the parent commit: what a new commit needs beyond what its parent
// already reaches (reused entries are reachable from the parent, which
// the ref names, so no gc removes them). It costs a stat per new object
// in process.
func VerifyWritten(r ObjectStore, j *Journal, parent OID) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, e := range j.objs {
		if !Present(r, e.hash) {
			return fmt.Errorf("%s %s: %w", e.typ, e.hash, ErrMissing)
		}
	}
	if !parent.IsZero() && !Present(r, parent) {
		return fmt.Errorf("parent commit %s: %w", parent, ErrMissing)
	}
	return nil
}

// VerifyCommit checks that commit h, its tree (recursively) and its
// parents exist: what git checks before it lets a ref point anywhere. A
// concurrent git gc --prune=now may delete objects lazy just wrote and
// no ref reaches yet; a ref moved onto them would name a hole.
func VerifyCommit(r Repo, h OID) error {
	if !Present(r, h) {
		return fmt.Errorf("commit %s: %w", h, ErrMissing)
	}
	c, err := r.ReadCommit(h)
	if err != nil {
		return err
	}
	for _, p := range c.ParentHashes {
		if !Present(r, p) {
			return fmt.Errorf("parent %s of %s: %w", p, h, ErrMissing)
		}
	}
	return verifyTree(r, c.TreeHash)
}

func verifyTree(r Repo, h OID) error {
	t, err := r.ReadTree(h)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		if !e.Mode.IsFile() {
			if err := verifyTree(r, e.Hash); err != nil {
				return err
			}
			continue
		}
		if !Present(r, e.Hash) {
			return fmt.Errorf("%s in tree %s: %w", e.Name, h, ErrMissing)
		}
	}
	return nil
}
