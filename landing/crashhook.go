package landing

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// CrashAtEnv names the environment variable of the test-only crash hook:
// LAZY_TEST_CRASH_AT=<phase>[:<n>] makes the process SIGKILL itself as
// the n-th accept phase of that name (default the first) begins in it,
// exactly as a kill -9 at that moment would. The chaos and crash tests
// use it to kill accepts at every phase boundary deterministically.
//
// It is for tests only and inert otherwise: it is read from this
// process's environment alone (never from git config, a record or any
// other repository data), and a value that is not exactly a phase of
// AcceptPhases, optionally followed by a positive count, does nothing.
const CrashAtEnv = "LAZY_TEST_CRASH_AT"

// CrashPoint is a parsed LAZY_TEST_CRASH_AT. A nil *CrashPoint, the
// value of every process that does not set the variable, does nothing.
type CrashPoint struct {
	phase string
	n     int64
	hits  atomic.Int64
}

// CrashPointFromEnv reads LAZY_TEST_CRASH_AT; nil when it is unset or
// not a valid crash point.
func CrashPointFromEnv() *CrashPoint {
	return ParseCrashPoint(os.Getenv(CrashAtEnv))
}

// ParseCrashPoint parses "<phase>[:<n>]"; nil unless phase is an accept
// phase and n, if given, a positive number.
func ParseCrashPoint(v string) *CrashPoint {
	phase, count, hasCount := strings.Cut(v, ":")
	n := int64(1)
	if hasCount {
		var err error
		if n, err = strconv.ParseInt(count, 10, 64); err != nil || n < 1 {
			return nil
		}
	}
	for _, p := range AcceptPhases {
		if p.ID == phase {
			return &CrashPoint{phase: phase, n: n}
		}
	}
	return nil
}

// reached is called as phase begins; it kills the process if this is
// the crash point's phase for the n-th time.
func (c *CrashPoint) reached(phase string) {
	if c == nil || phase != c.phase || c.hits.Add(1) != c.n {
		return
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way; nothing more may run
}
