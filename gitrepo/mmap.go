package gitrepo

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// mapping is a read-only memory map of a whole file: lookups in the pack
// index and in packed-refs touch a few pages of a file of megabytes, so
// mapping it costs nothing up front, as it does in git.
//
// The map is released by a cleanup once the mapping is unreachable, never
// explicitly: a reader in another goroutine may still hold it after the
// file was replaced. Readers therefore keep the *mapping alive while they
// use data (runtime.KeepAlive) and copy out what they return.
//
// Both kinds of file are replaced by rename and never rewritten in place,
// so a mapped file does not shrink under the reader (which would fault).
type mapping struct {
	data []byte
	fi   os.FileInfo // the identity the map was made from
}

// mapFile maps the open file f, whose stat is fi.
func mapFile(f *os.File, fi os.FileInfo) (*mapping, error) {
	m := &mapping{fi: fi}
	size := fi.Size()
	if size == 0 {
		return m, nil
	}
	if size != int64(int(size)) || size < 0 {
		return nil, fmt.Errorf("map %s: %d bytes is too large to map", f.Name(), size)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	m.data = data
	runtime.AddCleanup(m, func(b []byte) { _ = syscall.Munmap(b) }, data)
	return m, nil
}

// sameFile reports whether fi still describes the file a mapping was made
// from: the same inode, size and modification time. Writers of
// packed-refs rename a new file over it, which changes the inode.
func (m *mapping) sameFile(fi os.FileInfo) bool {
	return os.SameFile(m.fi, fi) && m.fi.Size() == fi.Size() && m.fi.ModTime().Equal(fi.ModTime())
}
