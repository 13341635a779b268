// Package unixsock listens on and dials unix sockets at any path length.
//
// A socket's address holds at most about 107 bytes (sun_path), so a
// repository checked out deep in a home directory, or a test's temporary
// directory, gives lazy's daemon a socket path the kernel refuses with
// "invalid argument". On Linux the socket is reached through its directory
// instead: a descriptor of the directory is opened and the short path
// /proc/self/fd/N/NAME is bound or dialled, which the kernel resolves to the
// same file. Elsewhere a long path is refused in one sentence.
package unixsock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxPath is the longest path the kernel takes in a sockaddr_un: 108 bytes
// on Linux and 104 on the BSDs and macOS, less the terminating NUL.
func maxPath() int {
	if runtime.GOOS == "linux" {
		return 107
	}
	return 103
}

// Listen listens on the unix socket at path, however long the path is.
// Closing the listener removes the socket file at path, as net.Listen's
// does.
func Listen(path string) (net.Listener, error) {
	var ln *net.UnixListener
	err := viaDir(path, func(addr string) error {
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
		if err != nil {
			return err
		}
		// The listener would unlink the address it was given, and a
		// descriptor path names another directory once the descriptor is
		// closed and its number reused: the file is removed by its real
		// path instead.
		l.SetUnlinkOnClose(false)
		ln = l
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &listener{UnixListener: ln, path: path}, nil
}

// listener removes its socket file by its real path when it is closed.
type listener struct {
	*net.UnixListener
	path string
}

// Close stops listening and removes the socket file.
func (l *listener) Close() error {
	err := l.UnixListener.Close()
	_ = os.Remove(l.path)
	return err
}

// Dial connects to the unix socket at path, however long the path is.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	var c net.Conn
	err := viaDir(path, func(addr string) error {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", addr)
		c = conn
		return err
	})
	return c, err
}

// viaDir calls fn with path itself when it fits in a socket address, and
// otherwise with a short name for it through a descriptor of its directory,
// held open for the call.
func viaDir(path string, fn func(addr string) error) error {
	if len(path) <= maxPath() {
		return fn(path)
	}
	if runtime.GOOS != "linux" {
		return fmt.Errorf("the socket path %s is %d bytes, longer than the %d this system allows; move the repository to a shorter path", path, len(path), maxPath())
	}
	fd, err := unix.Open(filepath.Dir(path), dirFlags, 0)
	if err != nil {
		return fmt.Errorf("open the directory of %s: %w", path, err)
	}
	defer func() { _ = unix.Close(fd) }()
	short := filepath.Join("/proc/self/fd", strconv.Itoa(fd), filepath.Base(path))
	if len(short) > maxPath() {
		return fmt.Errorf("the socket name %s is too long for a socket address; use a shorter name", filepath.Base(path))
	}
	if err := fn(short); err != nil {
		return fmt.Errorf("%s: %w", path, unwrapOp(err))
	}
	return nil
}

// unwrapOp keeps the cause of a net.OpError, whose address would name the
// descriptor path instead of the socket the caller asked for.
func unwrapOp(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}
