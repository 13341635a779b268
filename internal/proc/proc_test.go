package proc

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestAliveAndRuns(t *testing.T) {
	if !Alive(os.Getpid()) || Alive(0) || Alive(-1) {
		t.Fatal("Alive is wrong about this process or invalid pids")
	}
	cmd := exec.Command("/bin/sh", "-c", "exit 0", "supervise", "abc")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// Until Wait reaps it, the exited child is a zombie: not alive. Poll,
	// since it may still be running for a moment.
	for Alive(pid) {
		time.Sleep(time.Millisecond)
	}
	if Runs(pid, "supervise", "abc") {
		t.Fatal("a zombie runs nothing")
	}
	_ = cmd.Wait()

	// "; exit": a shell may exec its last command in place, and then the
	// cmdline would be sleep's by the time Runs looks.
	sleeper := exec.Command("/bin/sh", "-c", "sleep 30; exit 0", "supervise", "abc")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	// Between fork and exec the child's cmdline is still this test's: poll
	// until the exec shows, as a loaded machine may take a moment.
	for deadline := time.Now().Add(10 * time.Second); !Runs(sleeper.Process.Pid, "supervise", "abc") && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if !Runs(sleeper.Process.Pid, "supervise", "abc") || Runs(sleeper.Process.Pid, "supervise", "abd") {
		t.Fatal("Runs does not match the command line")
	}
}

func TestHeldOpenSeesAnOpenFileOnly(t *testing.T) {
	path := t.TempDir() + "/index.lock"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if !HeldOpen(path) {
		t.Fatal("a file this process holds open reads as not held")
	}
	_ = f.Close()
	if HeldOpen(path) {
		t.Fatal("a closed file reads as held open")
	}
}
