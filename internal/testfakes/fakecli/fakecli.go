// Package fakecli is what the fake forge CLIs of lazy's tests
// (internal/testfakes/fakegh, internal/testfakes/fakeglab) share: gh- and glab-style flag
// parsing, and running one invocation against a JSON state file that
// tests read and edit to play the forge.
//
// Run appends every invocation's argv to STATE.log (one JSON array a
// line), holds STATE.lock (an flock, which tests take too) while it reads,
// changes and writes the state, and can hang before or after an operation
// until killed, writing its pid to STATE.hang: the kill -9 tests use that.
package fakecli

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// State is a fake forge's state file contents.
type State interface {
	// Hangs names the operations during which the fake blocks until
	// killed: before acting, and after its effect is saved.
	Hangs() (before, after string)
}

// Fail prints a message to stderr and returns code.
func Fail(code int, format string, a ...any) int {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	return code
}

// PrintJSON prints v as one line of JSON.
func PrintJSON(v any) int {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
	return 0
}

// Flags parses cobra-style flags: --name value, --name=value, -n value
// and bare booleans. known maps each accepted flag (long or shorthand)
// to whether it takes a value. An unknown flag fails as cobra words it.
func Flags(args []string, known map[string]bool) (map[string]string, []string, error) {
	vals := map[string]string{}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takes, ok := known[name]
		if !ok {
			return nil, nil, fmt.Errorf("unknown flag: %s", a)
		}
		if takes && !hasVal {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("flag needs an argument: %s", a)
			}
			i++
			val = args[i]
		}
		if !takes && !hasVal {
			val = "true"
		}
		vals[name] = val
	}
	return vals, pos, nil
}

// Run runs one invocation: st is loaded from the file named by the
// environment variable envVar, op names the operation args asks for (as
// State.Hangs names them), and dispatch acts on st and returns the exit
// code. st is saved afterwards, whatever the code.
func Run(envVar string, args []string, st State, op string, dispatch func() int) int {
	path := os.Getenv(envVar)
	if path == "" {
		return Fail(1, "fake: %s is not set", envVar)
	}
	if line, err := json.Marshal(args); err == nil {
		if f, err := os.OpenFile(path+".log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			_, _ = f.Write(append(line, '\n'))
			_ = f.Close()
		}
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return Fail(1, "fake: %v", err)
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return Fail(1, "fake: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Fail(1, "fake: %v", err)
	}
	if err := json.Unmarshal(b, st); err != nil {
		return Fail(1, "fake: %v", err)
	}
	before, after := st.Hangs()
	if op != "" && before == op {
		hang(path, lock)
	}
	code := dispatch()
	out, _ := json.MarshalIndent(st, "", "  ")
	if err := os.WriteFile(path+".tmp", out, 0o600); err == nil {
		_ = os.Rename(path+".tmp", path)
	}
	if op != "" && after == op {
		hang(path, lock)
	}
	return code
}

// hang releases the state and blocks until killed.
func hang(path string, lock *os.File) {
	_ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	_ = os.WriteFile(path+".hang", []byte(strconv.Itoa(os.Getpid())), 0o600)
	for {
		time.Sleep(time.Hour)
	}
}
