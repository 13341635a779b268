package gitstore

import (
	"errors"
	"io/fs"

	"github.com/lazyorch/lazy/gitrepo"
)

// TransientReadError reports whether err, the error of a List entry, may
// not last: an object a concurrent repack moved, or a pack doctor can
// re-index. Such a record is read again by the next List even though its
// ref did not move, so a caller that keeps a listing while refs stay
// must list again too. It is the test List's cache applies (corruptRec):
// the errors it caches are the lasting ones.
func TransientReadError(err error) bool {
	var mp mayPass
	return errors.As(err, &mp) || gitrepo.IsMissing(err) ||
		errors.Is(err, fs.ErrNotExist)
}

// mayPass is the error of a List entry whose record failed to read for a
// reason TransientReadError accepts. The listing carries only the text of
// an entry's error (it may come from the cache), so this type is what
// keeps its nature.
type mayPass struct{ msg string }

func (e mayPass) Error() string { return e.msg }
