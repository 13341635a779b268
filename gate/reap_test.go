package gate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/proc"
)

// TestMain lets the test binary be the gate's reaper, as lazy gate-reap
// is lazy's: with LAZY_GATE_TEST_REAPER=1 it runs what follows "--"
// under Reap.
func TestMain(m *testing.M) {
	if os.Getenv("LAZY_GATE_TEST_REAPER") == "1" {
		if i := slices.Index(os.Args, "--"); i >= 0 {
			code, err := Reap(os.Args[i+1:])
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
			if code < 0 {
				code = 1
			}
			os.Exit(code)
		}
	}
	os.Exit(m.Run())
}

// testReaper is the argv prefix that runs a command under Reap.
func testReaper(t *testing.T) []string {
	t.Helper()
	env, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env here")
	}
	return []string{env, "LAZY_GATE_TEST_REAPER=1", os.Args[0], "--"}
}

// TestRunReaperEndsWhatNoMarkFinds: a command whose child leaves its
// session and clears its environment (no mark survives that) leaves
// nothing running under the reaper, at the command's end and at the
// gate's timeout; the reaper keeps the command's exit status, a missing
// command's 127 and a signal's death.
func TestRunReaperEndsWhatNoMarkFinds(t *testing.T) {
	t.Parallel() // each run carries a mark of its own, and what it waits for is sleep
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("no setsid here")
	}
	reaper := testReaper(t)
	escape := "env -i " + setsid + " /bin/sh -c 'echo $$ > escaped; exec /bin/sleep 1000' </dev/null >/dev/null 2>&1 & while [ ! -s escaped ]; do sleep 0.01; done"
	for _, tc := range []struct {
		name    string
		cmd     string
		timeout time.Duration
		exit    int
	}{
		{"at its end", escape + "; echo done", time.Hour, 0},
		{"with its exit status", escape + "; exit 3", time.Hour, 3},
		{"at its timeout", escape + "; sleep 1000", 1500 * time.Millisecond, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r, err := run(t, context.Background(), Spec{Dir: dir, Commands: []string{tc.cmd}, Timeout: tc.timeout, Reaper: reaper,
				Mark: fmt.Sprintf("LAZY_GATE_RUN=reap-%d", time.Now().UnixNano())})
			if err != nil || r.Commands[0].Exit != tc.exit || r.Passed != (tc.exit == 0) {
				t.Fatalf("%+v %v", r, err)
			}
			for _, p := range pidsIn(t, filepath.Join(dir, "escaped")) {
				if proc.Alive(p) {
					t.Fatalf("the orphan %d that cleared its environment outlived the gate", p)
				}
			}
		})
	}
	r, err := run(t, context.Background(), Spec{Dir: t.TempDir(), Commands: []string{"no-such-command-here", "kill -KILL $$"}, Reaper: reaper})
	if err != nil || len(r.Commands) != 1 || !r.Commands[0].Missing || r.Commands[0].Exit != 127 {
		t.Fatalf("a missing command under the reaper: %+v %v", r, err)
	}
	r, err = run(t, context.Background(), Spec{Dir: t.TempDir(), Commands: []string{"kill -KILL $$"}, Reaper: reaper})
	if err != nil || r.Commands[0].Exit != -1 {
		t.Fatalf("a command killed by a signal under the reaper: %+v %v", r, err)
	}
}
