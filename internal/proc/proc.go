// Package proc answers whether a process recorded in a file is still the
// process that wrote it.
package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
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

// WithEnv returns the live processes of this user whose environment
// holds the exact entry kv ("NAME=value"). It is how lazy finds an agent
// its dead supervisor left behind: the marker is inherited by everything
// the agent starts, and a recycled pid does not carry it.
func WithEnv(kv string) []int { return WithEnvIn(kv, "") }

// WithEnvIn is WithEnv within scope, an entry "NAME=value" ("" for
// none): of the processes holding kv, those that hold scope too, or no
// entry named NAME at all (marked before the marker had a scope). Two
// clones of one repository on one machine share its task ids; the scope
// (the repository) keeps each from taking the other's agents for its own.
func WithEnvIn(kv, scope string) []int {
	name, value, _ := strings.Cut(kv, "=")
	return ByEnvIn(name, scope)[value]
}

// ByEnv scans the live processes of this user once and groups those whose
// environment sets name by its value.
func ByEnv(name string) map[string][]int { return ByEnvIn(name, "") }

// ByEnvIn is ByEnv within scope (see WithEnvIn).
func ByEnvIn(name, scope string) map[string][]int { return byEnv(name, scope, false) }

// ByEnvStrict is ByEnvIn for processes that hold scope itself: one
// without any entry of the scope's name is left out (it may be another
// repository's, marked by a lazy that did not scope its marks yet).
func ByEnvStrict(name, scope string) map[string][]int { return byEnv(name, scope, true) }

func byEnv(name, scope string, strict bool) map[string][]int {
	out := map[string][]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	prefix := []byte(name + "=")
	scopeName, _, _ := strings.Cut(scope, "=")
	scopePrefix := []byte(scopeName + "=")
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue // gone, or not ours to read
		}
		var value []byte
		marked, inScope := false, !strict || scope == ""
		for _, entry := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(entry, prefix); ok && !marked {
				value, marked = v, true
			}
			if scope != "" && bytes.HasPrefix(entry, scopePrefix) {
				inScope = string(entry) == scope
			}
		}
		if marked && inScope && Alive(pid) {
			out[string(value)] = append(out[string(value)], pid)
		}
	}
	return out
}

// KillMarked SIGKILLs every process whose environment holds kv (see
// WithEnv), and the process group each one leads, and returns their
// pids. The caller must know that whatever carries the marker is a
// leftover: lazy calls it only while no supervisor of the task runs, or
// as the new supervisor before it starts its agent.
func KillMarked(kv string) []int { return KillMarkedIn(kv, "") }

// KillMarkedIn is KillMarked within scope (see WithEnvIn).
func KillMarkedIn(kv, scope string) []int {
	pids := WithEnvIn(kv, scope)
	for _, pid := range pids {
		if g, err := syscall.Getpgid(pid); err == nil && g == pid {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// SIGKILL is delivered when the target next runs; on a loaded machine
	// that can take a moment, and the caller is about to start a new agent
	// in the same worktree.
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return pids
}

// HeldOpen reports whether a live process of this user has path open,
// by its file descriptors in /proc. git keeps a lock file open from
// taking the lock until it commits or rolls it back, so a lock file that
// nothing holds open was left by a git that was killed. Without /proc the
// answer is true: nothing can be proven stale.
func HeldOpen(path string) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		fds, err := os.ReadDir("/proc/" + e.Name() + "/fd")
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			if target, err := os.Readlink("/proc/" + e.Name() + "/fd/" + fd.Name()); err == nil && target == path {
				return true
			}
		}
	}
	return false
}

// Cmdline is pid's command line as a person reads it (arguments joined
// by spaces), or "" when /proc cannot tell. It is the process's own
// text: escape it before a terminal shows it.
func Cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(bytes.ReplaceAll(bytes.TrimRight(b, "\x00"), []byte{0}, []byte{' '})))
}

// parents maps each live process of this user to its parent, read from
// /proc once.
func parents() map[int]int {
	out := map[int]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			out[pid] = pp
		}
	}
	return out
}

// Descendants returns the live descendants of pid (children, their
// children, and so on), read from /proc; none where /proc cannot tell.
func Descendants(pid int) []int {
	byParent := map[int][]int{}
	for p, pp := range parents() {
		byParent[pp] = append(byParent[pp], p)
	}
	var out []int
	seen := map[int]bool{pid: true}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range byParent[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// KillDescendants SIGKILLs every live descendant of this process and
// reaps those that were its own children (a subreaper adopts orphans,
// which would stay zombies otherwise), and returns the pids it killed.
// The caller must have no child it means to keep: lazy calls it in a
// turn's supervisor once the agent has exited, and nothing else of the
// supervisor runs.
func KillDescendants() []int { return KillDescendantsExcept(nil) }

// KillDescendantsExcept is KillDescendants sparing every descendant keep
// reports (nil: none), with its own descendants and the processes
// between it and this one: a process the agent had started detached on
// purpose (lazy's own daemon or another task's supervisor) lives on with
// what it runs.
func KillDescendantsExcept(keep func(pid int) bool) []int {
	self := os.Getpid()
	parent := parents()
	spared := map[int]bool{}
	all := Descendants(self)
	if keep != nil {
		byParent := map[int][]int{}
		for p, pp := range parent {
			byParent[pp] = append(byParent[pp], p)
		}
		for _, pid := range all {
			if spared[pid] || !keep(pid) {
				continue
			}
			for p := pid; p != self && p > 0 && !spared[p]; p = parent[p] {
				spared[p] = true
			}
			for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
				for _, c := range byParent[queue[0]] {
					if !spared[c] {
						spared[c] = true
						queue = append(queue, c)
					}
				}
			}
		}
	}
	var pids []int
	for _, pid := range all {
		if !spared[pid] {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil) // ECHILD: not ours to reap
	}
	return pids
}

// Exe is the file pid runs ("" when /proc cannot tell).
func Exe(pid int) string {
	p, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return ""
	}
	return p
}

// EnvHas reports whether pid's environment sets name (false when it
// cannot be read).
func EnvHas(pid int, name string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	prefix := []byte(name + "=")
	for _, entry := range bytes.Split(env, []byte{0}) {
		if bytes.HasPrefix(entry, prefix) {
			return true
		}
	}
	return false
}
