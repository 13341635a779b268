package gate

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/lazyorch/lazy/internal/proc"
)

// A gate runs inside the lazy process that accepts (a CLI command, the
// daemon, lazy mcp), which starts processes it means to keep and so
// cannot be the subreaper of everything. Each gate command runs under a
// small reaper of its own instead (lazy gate-reap -- sh -c CMD, see
// Spec.Reaper): a process that exists for that command alone, its child
// subreaper, which ends everything still running under it when the
// command exits, an orphan that left its session and cleared its
// environment (so that no mark finds it) included.

// reapGrace is how long the reaper waits, once told to stop, for the
// command to exit on the signal its process group got too, before it
// ends everything under it: well within termGrace, after which the
// gate SIGKILLs the group, the reaper with it.
const reapGrace = time.Second

// Reap runs argv as the child of this process, made a child subreaper
// first, and returns the status to exit with: the command's own, or
// -1 after it re-raised on itself the signal that ended the command
// (when it returns -1 the caller exits 1; the signal normally ends it
// first). When the command exits, or this process is told to stop
// (SIGTERM, SIGINT, SIGHUP: the gate's timeout signals the whole group),
// every process still running under it is SIGKILLed and reaped.
func Reap(argv []string) (int, error) {
	if len(argv) == 0 {
		return 2, errors.New("gate-reap: no command to run; give it after --")
	}
	if err := proc.BecomeSubreaper(); err != nil {
		return 2, fmt.Errorf("gate-reap: become a subreaper: %w", err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(stop)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127, err
		}
		return 126, err
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	var ended []int
	select {
	case werr = <-waited:
	case <-stop:
		// The group got the signal too: the command may end by itself.
		select {
		case werr = <-waited:
		case <-time.After(reapGrace):
			ended = proc.KillDescendants()
			werr = <-waited
		}
	}
	ended = append(ended, proc.KillDescendants()...)
	if len(ended) > 0 {
		// Into the gate's output: its log says what was ended.
		fmt.Fprintf(os.Stderr, "lazy: ended %d process(es) the gate command left running\n", len(ended))
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// Die as the command did, so the gate sees a signal, not an exit.
			signal.Reset(ws.Signal())
			_ = syscall.Kill(os.Getpid(), ws.Signal())
			time.Sleep(100 * time.Millisecond)
			return -1, nil
		}
		return ee.ExitCode(), nil
	}
	if werr != nil {
		return 126, werr
	}
	return 0, nil
}
