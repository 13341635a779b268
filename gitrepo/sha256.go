package gitrepo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// A SHA-256 repository is served by the same Objects and Refs: writes
// stay in process (a loose object and a ref file have the same shape in
// both formats, only the hash differs), while reads go through git,
// whose pack and packed-refs formats for SHA-256 the in-process reader
// does not parse. The bulk reader falls back to git for such ids.

// viaGit reports whether o reads through git.
func (o *Objects) viaGit() bool { return o.format == SHA256 }

// gitObject reads object id of type typ through git, checking its type
// and size from git's answer first so an oversize object is never read.
func (o *Objects) gitObject(typ Type, id OID, what string, limit int64) ([]byte, error) {
	got, size, err := o.gitInfo(id)
	if err != nil {
		return nil, err
	}
	if got != typ {
		return nil, fmt.Errorf("%s %s is a %s: %w", what, id, got, ErrWrongType)
	}
	if size > limit {
		return nil, Oversize(what, id, size, limit)
	}
	return o.gitContent(got, id, what, size)
}

// gitReadAny is Repo.Read through git: object id of type typ (Any for
// any), checked against typ and limit before its content is read.
func (o *Objects) gitReadAny(id OID, typ Type, limit int64) (*Object, error) {
	got, size, err := o.gitInfo(id)
	if err != nil {
		return nil, err
	}
	if err := CheckType(id, typ, got, size, limit); err != nil {
		return nil, err
	}
	content, err := o.gitContent(got, id, "object", size)
	if err != nil {
		return nil, err
	}
	return &Object{Type: got, Size: size, Content: content}, nil
}

// gitContent reads the content of object id, of type typ and size bytes
// as git said a moment ago.
func (o *Objects) gitContent(typ Type, id OID, what string, size int64) ([]byte, error) {
	content, err := gitcli.New(filepath.Dir(o.dir), "cat-file", string(typ), id.String()).Output(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, id, ErrMissing)
	}
	if int64(len(content)) != size {
		return nil, fmt.Errorf("git cat-file changed its answer for %s %s", what, id)
	}
	return content, nil
}

// gitInfo asks git the type and size of object id.
func (o *Objects) gitInfo(id OID) (Type, int64, error) {
	if id.Format() != o.format {
		return "", 0, fmt.Errorf("object id %q is not a %s id: %w", id, o.format, ErrMissing)
	}
	info, err := gitcli.New(filepath.Dir(o.dir), "cat-file", "--batch-check").Stdin([]byte(id.String() + "\n")).Output(context.Background())
	if err != nil {
		return "", 0, fmt.Errorf("ask git about object %s: %w", id, err)
	}
	f := strings.Fields(string(info))
	if len(f) != 3 || f[0] != id.String() {
		return "", 0, fmt.Errorf("object %s: %w", id, ErrMissing) // "<id> missing"
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 {
		return "", 0, fmt.Errorf("git cat-file gave %s size %q", id, f[2])
	}
	return Type(f[1]), size, nil
}

// gitHasID reports whether object id exists, loose or as git sees it.
func (o *Objects) gitHasID(id OID) bool {
	if id.Format() != o.format {
		return false
	}
	hex := id.String()
	if _, err := os.Stat(filepath.Join(o.dir, hex[:2], hex[2:])); err == nil {
		return true
	}
	return gitcli.New(filepath.Dir(o.dir), "cat-file", "-e", hex).Run(context.Background()) == nil
}

// gitTree reads and parses tree id through git.
func (o *Objects) gitTree(id OID) (*ParsedTree, error) {
	b, err := o.gitObject(Tree, id, "tree", MaxTree)
	if err != nil {
		return nil, err
	}
	return parseTreeIDs(b, len(id.Bytes()))
}

// gitCommit reads and parses commit id through git.
func (o *Objects) gitCommit(id OID) (*ParsedCommit, error) {
	b, err := o.gitObject(Commit, id, "commit", MaxCommit)
	if err != nil {
		return nil, err
	}
	return parseCommit(b)
}

// gitBlobSize asks git the size of blob id (named name in errors).
func (o *Objects) gitBlobSize(id OID, name string) (int64, error) {
	got, size, err := o.gitInfo(id)
	if err != nil {
		return 0, err
	}
	if got != Blob {
		return 0, fmt.Errorf("%s %s is a %s: %w", name, id, got, ErrWrongType)
	}
	return size, nil
}

// gitSortedRefs lists the refs under prefix through git, sorted by name.
func (r *Refs) gitSortedRefs(prefix string) ([]RefEntry, error) {
	return r.git.SortedRefs(prefix)
}
