package pair

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"
)

// buffer is an io.Writer the test can read while Run writes to it.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// human is the terminal a person sits at: keys typed into master arrive
// on tty, which Run takes over.
type human struct {
	master, tty *os.File
}

func newHuman(t *testing.T, rows, cols uint16) *human {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty on this machine: %v", err)
	}
	t.Cleanup(func() {
		_ = master.Close()
		_ = tty.Close()
	})
	if err := pty.Setsize(tty, &pty.Winsize{Rows: rows, Cols: cols}); err != nil {
		t.Fatal(err)
	}
	// Drain what the terminal echoes back to the person so it never fills.
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()
	return &human{master: master, tty: tty}
}

func (h *human) typeKeys(t *testing.T, s string) {
	t.Helper()
	if _, err := h.master.WriteString(s); err != nil {
		t.Fatalf("type %q: %v", s, err)
	}
}

type result struct {
	code int
	err  error
}

// start runs script under Run with h's terminal and returns its output
// and the channel its result arrives on.
func start(t *testing.T, h *human, script string) (*buffer, <-chan result) {
	t.Helper()
	out := &buffer{}
	done := make(chan result, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		code, err := Run(ctx, []string{"sh", "-c", script}, t.TempDir(), []string{"PATH=" + os.Getenv("PATH"), "PAIR_TEST=from-env"}, h.tty, out)
		done <- result{code, err}
	}()
	// A failed test must not leave the agent running.
	t.Cleanup(cancel)
	return out, done
}

// waitFor polls out until it contains want.
func waitFor(t *testing.T, out *buffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(out.String(), want) {
			return
		}
	}
	t.Fatalf("no %q within 30s; the agent printed %q", want, out.String())
}

func wait(t *testing.T, done <-chan result) result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not exit within 30s")
		return result{}
	}
}

// The agent gets a pty of the human's size, its working directory and
// environment, the human's keys, and its exit code comes back; the
// human's terminal is raw while it runs and restored after.
func TestRunHandsTheTerminalOver(t *testing.T) {
	h := newHuman(t, 30, 100)
	before, err := term.GetState(int(h.tty.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	out, done := start(t, h, `stty size; echo "env:$PAIR_TEST"; echo "dir:$(basename "$PWD")"; read line; echo "got:$line"; exit 7`)
	waitFor(t, out, "30 100")
	waitFor(t, out, "env:from-env")
	// The agent's own terminal echoes; the human's is raw, so Enter
	// arrives as CR and the agent's line discipline ends the line.
	h.typeKeys(t, "hello\r")
	r := wait(t, done)
	if r.err != nil || r.code != 7 {
		t.Fatalf("Run = %d, %v; want 7, nil", r.code, r.err)
	}
	if !strings.Contains(out.String(), "got:hello") {
		t.Fatalf("the agent did not read the human's line: %q", out.String())
	}
	after, err := term.GetState(int(h.tty.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Fatal("the human's terminal was not restored after the agent exited")
	}
}

// A window resize reaches the agent's pty.
func TestRunFollowsResizes(t *testing.T) {
	h := newHuman(t, 24, 80)
	out, done := start(t, h, `while read x; do [ "$x" = q ] && exit 3; stty size; done`)
	h.typeKeys(t, "\r")
	waitFor(t, out, "24 80")
	if err := pty.Setsize(h.tty, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	// The resize lands asynchronously: ask for the size until it shows.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "40 120"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent never saw 40x120: %q", out.String())
		}
		h.typeKeys(t, "\r")
	}
	h.typeKeys(t, "q\r")
	if r := wait(t, done); r.err != nil || r.code != 3 {
		t.Fatalf("Run = %d, %v; want 3, nil", r.code, r.err)
	}
}

// Without a terminal, pairing is refused before anything starts.
func TestRunRefusesWithoutATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close(); _ = w.Close() }()
	marker := t.TempDir() + "/started"
	code, err := Run(t.Context(), []string{"touch", marker}, t.TempDir(), nil, r, &buffer{})
	if !errors.Is(err, ErrNoTerminal) || code != -1 {
		t.Fatalf("Run = %d, %v; want ErrNoTerminal", code, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the agent ran without a terminal")
	}
}

// An agent that cannot start is an error naming it, and the terminal
// is left as it was.
func TestRunReportsAnAgentThatCannotStart(t *testing.T) {
	h := newHuman(t, 24, 80)
	before, err := term.GetState(int(h.tty.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	code, err := Run(t.Context(), []string{"/nonexistent/agent-cli"}, t.TempDir(), nil, h.tty, &buffer{})
	var pe *exec.Error
	var perr *os.PathError
	typed := errors.As(err, &pe) || errors.As(err, &perr)
	if err == nil || code != -1 || !strings.Contains(err.Error(), "/nonexistent/agent-cli") || !typed {
		t.Fatalf("Run = %d, %v; want an error naming the agent", code, err)
	}
	if after, _ := term.GetState(int(h.tty.Fd())); after == nil || *after != *before {
		t.Fatal("a failed start changed the human's terminal")
	}
}
