// Package pair hands a human's terminal to an agent CLI running in a task's
// worktree: the terminal goes raw, the agent gets a pty of the same size,
// which follows window resizes, and bytes pass through both ways.
package pair

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/term"
)

// ErrNoTerminal means stdin is not a terminal: pairing is interactive.
var ErrNoTerminal = errors.New("lazy pair and lazy chat need an interactive terminal (stdin is not one)")

// Run runs argv in dir with the terminal in and out handed over, and
// returns the agent's exit code.
func Run(ctx context.Context, argv []string, dir string, env []string, in *os.File, out io.Writer) (int, error) {
	if !term.IsTerminal(int(in.Fd())) {
		return -1, ErrNoTerminal
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	// The agent's pty has the human's size from its first instant: an
	// agent that asks at once (a TUI drawing its first frame, stty size)
	// must not see 0x0 before the resize below.
	size, _ := pty.GetsizeFull(in) // nil when the terminal cannot say: the resize below tries again
	ptmx, err := pty.StartWithSize(cmd, size)
	if err != nil {
		return -1, fmt.Errorf("start %s: %w", argv[0], err)
	}
	// The keyboard copier and the resizer may be mid-call when the agent
	// exits: they use the pty under mu and stop once it is closed.
	var mu sync.Mutex
	closed := false
	defer func() {
		mu.Lock()
		closed = true
		_ = ptmx.Close()
		mu.Unlock()
	}()

	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	resize := func() {
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			_ = pty.InheritSize(in, ptmx)
		}
	}
	resize()
	go func() {
		for range winch {
			resize()
		}
	}()

	old, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return -1, fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	defer func() { _ = term.Restore(int(in.Fd()), old) }()

	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := in.Read(buf)
			mu.Lock()
			if closed {
				mu.Unlock()
				return
			}
			if n > 0 {
				_, _ = ptmx.Write(buf[:n])
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	_, _ = io.Copy(out, ptmx) // ends when the agent exits and the pty closes
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), nil
	case err != nil:
		return -1, err
	}
	return 0, nil
}
