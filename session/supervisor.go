package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/proc"
	"github.com/lazyorch/lazy/proto"
)

// Running reports whether a supervisor of task id is alive, and
// its pid when the lock file names it (0 when not). Liveness is the
// supervisor's own flock, which the kernel drops when it dies: a pid read
// from a status file earlier proves nothing once that process is gone
// and its pid is reused.
func (s Supervisors) Running(id string) (int, bool) {
	e := s.e
	path := proto.SupervisorLock(e.Repo.LazyDir(), id)
	if !flock.Held(path) {
		return 0, false
	}
	pid, _ := strconv.Atoi(flock.Owner(path))
	return pid, true
}

// Strays returns the pids of processes carrying task id's turn
// marker. With no supervisor running they are leftovers of a dead one.
func (s Supervisors) Strays(id string) []int {
	e := s.e
	return proc.WithEnvIn(proto.TurnMarker(id), proto.TurnScope(e.Repo.LazyDir()))
}

// StopTurn ends everything that runs a turn of task id: its
// supervisor (SIGTERM, which takes its agent down, then SIGKILL past the
// kill grace), then any agent process a dead supervisor left behind. It
// returns the pids of the leftovers it killed.
func (s Supervisors) StopTurn(ctx context.Context, id string) ([]int, error) {
	e := s.e
	var deadline time.Time
	signalled := map[int]bool{}
	for {
		// The pid is read again each time: a supervisor that has just
		// taken the lock (a stop right after a start) has not written it
		// yet, and one that would not die may have been replaced.
		pid, ok := e.Supervisors().Running(id)
		if !ok {
			break
		}
		if pid > 0 && !signalled[pid] && proc.Runs(pid, "supervise", id) {
			signalled[pid] = true
			if err := e.Supervisors().Stop(ctx, pid); err != nil {
				return nil, err
			}
			continue
		}
		// The lock is released when the holder is gone; a holder whose pid
		// could not be read or verified is waited for, never signalled.
		if deadline.IsZero() {
			deadline = time.Now().Add(e.Timing.WithDefaults().KillGrace + 5*time.Second)
		}
		if time.Now().After(deadline) {
			if pid > 0 {
				return nil, fmt.Errorf("the supervisor of task %s (pid %d) still holds its lock; end it with kill %d and run lazy doctor", id, pid, pid)
			}
			return nil, fmt.Errorf("the supervisor of task %s still holds its lock, which does not name it; find it with pgrep -f 'supervise.*%s', end it, and run lazy doctor", id, id)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return proc.KillMarkedIn(proto.TurnMarker(id), proto.TurnScope(e.Repo.LazyDir())), nil
}

// Stop sends a supervisor SIGTERM (it takes its agent's process
// group down with it) and waits for it to exit, past its own kill grace,
// before SIGKILL.
func (s Supervisors) Stop(ctx context.Context, pid int) error {
	e := s.e
	return stopProcess(ctx, pid, e.Timing.WithDefaults().KillGrace+2*time.Second)
}

// stopProcess sends SIGTERM and waits for the process to exit.
func stopProcess(ctx context.Context, pid int, wait time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if !proc.Alive(pid) { // a zombie is gone too
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return nil
}
