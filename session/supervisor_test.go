package session

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/proc"
	"github.com/lazyorch/lazy/proto"
)

// TestHelperLateSupervisor is not a test: run by TestStopRightAfterStart
// (with LAZY_TEST_LOCK set), it is a supervisor caught between taking its
// lock and writing its pid there, then one that hangs until signalled.
// Its arguments end in "supervise <id>", as a real supervisor's do.
func TestHelperLateSupervisor(t *testing.T) {
	path := os.Getenv("LAZY_TEST_LOCK")
	if path == "" {
		t.Skip("a helper process, not a test")
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		os.Exit(3)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		os.Exit(3)
	}
	_ = os.WriteFile(path+".held", nil, 0o644)
	time.Sleep(300 * time.Millisecond) // the window a stop right after a start falls in
	_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	select {} // hang, like an agent that never ends its turn
}

// A stop that comes while a fresh supervisor holds its lock but has not
// written its pid yet must still end it: the pid is read again until it
// is known. (Read once, it was 0, the supervisor was never signalled,
// and the stop failed after the kill grace with "end it with kill 0".)
func TestStopRightAfterStart(t *testing.T) {
	e := &Env{Repo: &gitrepo.Location{CommonDir: t.TempDir()}}
	id := "0123456789abcdef"
	lock := proto.SupervisorLock(e.Repo.LazyDir(), id)
	if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperLateSupervisor$", "--", "supervise", id)
	helper.Env = append(os.Environ(), "LAZY_TEST_LOCK="+lock)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- helper.Wait() }()
	t.Cleanup(func() { _ = helper.Process.Kill(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(lock + ".held"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the helper never took the lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if pid, held := e.Supervisors().Running(id); !held || pid != 0 {
		t.Fatalf("before the pid is written: pid %d, held %v; want 0, true", pid, held)
	}
	if !proc.Runs(helper.Process.Pid, "supervise", id) {
		t.Fatal("the helper does not look like a supervisor of the task")
	}
	if _, err := e.Supervisors().StopTurn(context.Background(), id); err != nil {
		t.Fatalf("stop: %v", err)
	}
	select {
	case <-done:
		done <- nil // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("the stop returned but the supervisor runs on")
	}
	if _, held := e.Supervisors().Running(id); held {
		t.Fatal("the lock is still held after the stop")
	}
}
