package e2e

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/creack/pty"
)

// TestBashCompletionFindsLazyOnPath: the script lazy completion bash
// prints names no binary's path, so it keeps working when the binary
// that printed it is gone (an upgrade, a go install elsewhere): a real
// interactive bash on a terminal, with the script sourced, completes a
// task's slug by asking the lazy it finds on PATH.
func TestBashCompletionFindsLazyOnPath(t *testing.T) {
	r := newRepo(t)
	r.create("Fix the login race", "--slug", "fix-login")
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	// The binary that prints the script, then is removed.
	old := filepath.Join(t.TempDir(), "old")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(lazyBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "lazy"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(old, "lazy"), "completion", "bash")
	cmd.Env = r.environ()
	script, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(script), "/") {
		t.Fatalf("the completion script names a path:\n%s", script)
	}
	if err := os.RemoveAll(old); err != nil {
		t.Fatal(err)
	}
	scriptFile := filepath.Join(t.TempDir(), "lazy.bash")
	if err := os.WriteFile(scriptFile, script, 0o644); err != nil {
		t.Fatal(err)
	}
	// The lazy on PATH, somewhere else.
	bin := t.TempDir()
	if err := os.Symlink(lazyBin, filepath.Join(bin, "lazy")); err != nil {
		t.Fatal(err)
	}
	sh := exec.Command(bash, "--norc", "--noprofile", "-i")
	sh.Dir = r.dir
	sh.Env = append(r.environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "PS1=$ ", "HOME="+t.TempDir(), "INPUTRC=/dev/null", "HISTFILE=/dev/null")
	ptmx, err := pty.StartWithSize(sh, &pty.Winsize{Rows: 24, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return out.Write(p)
		}), ptmx)
	}()
	t.Cleanup(func() { _ = sh.Process.Kill(); _ = sh.Wait(); _ = ptmx.Close(); <-done })
	screen := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	send := func(s string) {
		if _, err := ptmx.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	send("source " + scriptFile + "\n")
	send("echo sourced-$((20+22))\n")
	eventually(t, "bash to source the script", func() bool { return strings.Contains(screen(), "sourced-42") })
	send("lazy show fix-lo\t")
	eventually(t, "bash to complete the slug", func() bool { return strings.Contains(screen(), "lazy show fix-login") })
	send("\x15exit\n")
	if err := sh.Wait(); err != nil {
		t.Fatalf("bash: %v\n%s", err, screen())
	}
}

// writerFunc is a function as an io.Writer.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
