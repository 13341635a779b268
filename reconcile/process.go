package reconcile

import (
	"syscall"
	"time"

	"github.com/lazyorch/lazy/internal/proc"
)

func alive(pid int) bool { return proc.Alive(pid) }

// isSupervisor reports whether pid is alive and, where /proc can tell, is
// lazy's supervisor of taskID: a pid recycled by an unrelated process
// after a crash must not pass for a running turn, nor be signalled.
func isSupervisor(pid int, taskID string) bool { return proc.Runs(pid, "supervise", taskID) }

// killGroup SIGKILLs the process group an agent led, if it still exists.
// The agent runs as a session leader, so its pid is its group id; a
// recycled pid that leads no group of that id is left alone.
func killGroup(pgid int) {
	if pgid <= 0 || !alive(pgid) {
		return
	}
	if g, err := syscall.Getpgid(pgid); err != nil || g != pgid {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// stopSupervisor sends SIGTERM to a supervisor (which takes its agent down
// with it) and waits up to wait before SIGKILL.
func stopSupervisor(pid int, taskID string, wait time.Duration) {
	if !isSupervisor(pid, taskID) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
