package unixsock

import "golang.org/x/sys/unix"

// dirFlags open a directory only to name it: O_PATH needs no read access.
const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
