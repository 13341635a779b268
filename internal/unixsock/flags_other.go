//go:build !linux

package unixsock

import "golang.org/x/sys/unix"

// dirFlags open a directory; viaDir refuses a long path before it would
// use them, since only Linux has /proc/self/fd to bind through.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
