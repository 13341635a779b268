package unixsock

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A socket whose path is past the kernel's limit is listened on and
// dialled as if it were short: the daemon of a deep checkout must start.
func TestLongPathsListenAndDial(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the long-path route goes through /proc/self/fd")
	}
	for _, n := range []int{20, 200} {
		dir := filepath.Join(t.TempDir(), strings.Repeat("d", n), strings.Repeat("e", n))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "daemon.sock")
		if n == 200 && len(path) <= maxPath() {
			t.Fatalf("the test path is only %d bytes", len(path))
		}
		ln, err := Listen(path)
		if err != nil {
			t.Fatalf("listen on a %d-byte path: %v", len(path), err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("the socket is not at %s: %v", path, err)
		}
		done := make(chan string, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				done <- err.Error()
				return
			}
			b, _ := io.ReadAll(c)
			_ = c.Close()
			done <- string(b)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := Dial(ctx, path)
		cancel()
		if err != nil {
			t.Fatalf("dial a %d-byte path: %v", len(path), err)
		}
		_, _ = c.Write([]byte("hello"))
		_ = c.Close()
		if got := <-done; got != "hello" {
			t.Fatalf("the server read %q", got)
		}
		_ = ln.Close()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("closing the listener left its socket file: %v", err)
		}
	}
}

// A dial of a long path that nothing listens on names the path asked for,
// not the descriptor route.
func TestLongPathErrorsNameThePath(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the long-path route goes through /proc/self/fd")
	}
	dir := filepath.Join(t.TempDir(), strings.Repeat("x", 120))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "daemon.sock")
	_, err := Dial(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "/proc/self/fd") {
		t.Fatalf("error = %v; want one naming %s", err, path)
	}
}
