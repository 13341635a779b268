package e2e

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyRun starts lazy under a real pty, as a human's terminal would.
func ptyRun(t *testing.T, r *runner, size *pty.Winsize, args ...string) (*exec.Cmd, *os.File, func() string) {
	t.Helper()
	cmd := exec.Command(lazyBin, args...)
	cmd.Dir = r.dir
	cmd.Env = r.environ()
	ptmx, err := pty.StartWithSize(cmd, size)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out bytes.Buffer
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = ptmx.Close() })
	return cmd, ptmx, func() string {
		// Once Wait has returned, what the process wrote may still sit in
		// the pty: the reader ends (EIO) when it has read all of it, unless
		// a child the process left behind holds the terminal open.
		if cmd.ProcessState != nil {
			select {
			case <-drained:
			case <-time.After(5 * time.Second):
			}
		}
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
}

func TestPairHandsTheTerminalOver(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "paired", "p.txt p")
	dir := t.TempDir()
	size1, typed := filepath.Join(dir, "size1"), filepath.Join(dir, "typed")
	human := r.with("SHELL="+fakeAgentBin, script(t,
		"winsize "+size1, "wait-winsize 40 120", "readline "+typed,
		"write paired.txt written while pairing", "commit pair: by hand", "print bye"))
	if msg := human.fails(1, nil, "pair", tk.Slug); !strings.Contains(msg, "interactive terminal") {
		t.Fatalf("pair without a terminal: %s", msg)
	}
	cmd, ptmx, output := ptyRun(t, human, &pty.Winsize{Rows: 30, Cols: 100}, "pair", tk.Slug)
	waitFile(t, size1)
	if b, _ := os.ReadFile(size1); string(b) != "30x100" {
		t.Fatalf("the agent's pty is %s, not the terminal's 30x100", b)
	}
	if got := r.refStatus(tk.ID); got != "pairing" {
		t.Fatalf("status while pairing: %s", got)
	}
	if _, err := os.Stat(filepath.Join(r.dir, ".git", "lazy", "proto", tk.ID, "pairing.json")); err != nil {
		t.Fatalf("no pairing lock: %v", err)
	}
	// The window grows: the agent's pty follows.
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGWINCH)
	if _, err := io.WriteString(ptmx, "hello from the human\r"); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lazy pair: %v\n%s", err, output())
	}
	if b, _ := os.ReadFile(typed); string(b) != "hello from the human" {
		t.Fatalf("the agent read %q from the terminal", b)
	}
	s := r.showFull(tk.Slug)
	last := s.TurnList[len(s.TurnList)-1]
	// The pairing's work is the human's, so its turn is labelled human.
	if s.Status != "blocked" || last.Kind != "pair" || last.Role != "human" || last.Actor != "human" || !strings.Contains(last.Content, "1 commit;") || len(last.Commits) != 1 {
		t.Fatalf("after pairing: %s, last turn %+v", s.Status, last)
	}
	if !strings.Contains(output(), "bye") {
		t.Fatalf("the agent's output did not reach the terminal: %q", output())
	}
	if _, err := os.Stat(filepath.Join(r.dir, ".git", "lazy", "proto", tk.ID, "pairing.json")); !os.IsNotExist(err) {
		t.Fatalf("the pairing lock outlived the pairing: %v", err)
	}

	// A pairing whose process is killed is recovered by the reconciler.
	stuck := r.with("SHELL="+fakeAgentBin, script(t, "winsize "+filepath.Join(dir, "size2"), "hang"))
	cmd, _, _ = ptyRun(t, stuck, &pty.Winsize{Rows: 24, Cols: 80}, "pair", tk.Slug)
	waitFile(t, filepath.Join(dir, "size2"))
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	s = r.waitUntil(tk.Slug, "left pairing", func(s showFull) bool { return s.Status != "pairing" })
	if s.Status != "blocked" {
		t.Fatalf("a dead pairing became %s", s.Status)
	}
}
