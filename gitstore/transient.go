package gitstore

import (
	"errors"
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// TransientReadError reports whether err, the error of a List entry, may
// not last: an object a concurrent repack moved, or a pack doctor can
// re-index. Such a record is read again by the next List even though its
// ref did not move, so a caller that keeps a listing while refs stay
// must list again too. It is the test List's cache applies (corruptRec):
// the errors it caches are the lasting ones.
func TransientReadError(err error) bool {
	return errors.Is(err, ErrMissingObject) || errors.Is(err, plumbing.ErrObjectNotFound) ||
		errors.Is(err, dotgit.ErrPackfileNotFound) || errors.Is(err, fs.ErrNotExist)
}
