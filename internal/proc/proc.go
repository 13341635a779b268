// Package proc answers whether a process recorded in a file is still the
// process that wrote it.
package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// Alive reports whether pid names a running process. A zombie (dead, not
// yet reaped, as a detached lazy process becomes when nothing reaps
// orphans) is not running.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc here: the signal check is all there is
	}
	// The state follows the parenthesized command name, which may itself
	// contain parentheses: take the last one.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// Runs reports whether pid is alive and, where /proc can tell, its
// command line contains every one of args as consecutive arguments:
// a pid recycled by an unrelated process does not pass.
func Runs(pid int, args ...string) bool {
	if !Alive(pid) {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return true
	}
	want := []byte{}
	for i, a := range args {
		if i > 0 {
			want = append(want, 0)
		}
		want = append(want, a...)
	}
	return bytes.Contains(cmdline, want)
}
