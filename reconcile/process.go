package reconcile

import (
	"context"
	"syscall"

	"github.com/lazyorch/lazy/internal/proc"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/wire"
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

// stopSupervisor stops taskID's supervisor if pid still is it. It returns
// once the shell that launched it has also recorded its exit, so that a
// caller removing the protocol directory next does not race that write.
func stopSupervisor(env *wire.Env, pid int, taskID string) {
	if isSupervisor(pid, taskID) {
		_ = env.Supervisors().Stop(context.Background(), pid)
		supervisorExit(proto.ForTask(env.Repo.LazyDir(), taskID))
	}
}
