// Command maxrss runs a command and writes its peak resident set, in
// KiB, to the file named by its first argument; it exits with the
// command's code.
//
// The tests cannot read a child's peak from their own wait: Go starts a
// child with vfork semantics (the child shares the parent's memory until
// it execs), and Linux carries the parent's high-water mark into the
// child's ru_maxrss at that exec. A test binary running many tests is
// hundreds of MiB, so a small lazy measured directly reads as large as
// its test. This wrapper is small, so the command it starts is measured
// on its own.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: maxrss OUTFILE COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "maxrss:", err)
		os.Exit(2)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "maxrss: no resource usage on this platform")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], []byte(strconv.FormatInt(ru.Maxrss, 10)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "maxrss:", err)
		os.Exit(2)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
