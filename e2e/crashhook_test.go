package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/lazyorch/lazy/landing"
)

// The test-only crash hook kills an accept exactly as the phase it names
// begins, for every phase of an accept into a dirty checkout; a value
// that names no phase does nothing.
func TestCrashHookKillsAnAcceptAsEachPhaseBegins(t *testing.T) {
	r := newRepo(t)
	for _, phase := range chaosPhases {
		tk := workedTask(t, r, "crash at "+phase, "f-"+phase+".txt work")
		if err := os.WriteFile(filepath.Join(r.dir, "wip.txt"), []byte("mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(lazyBin, "accept", tk.Slug)
		cmd.Dir, cmd.Env = r.dir, append(r.environ(), landing.CrashAtEnv+"="+phase)
		out, _ := cmd.CombinedOutput()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("accept with %s=%s was not SIGKILLed (%v):\n%s", landing.CrashAtEnv, phase, cmd.ProcessState, out)
		}
		if got := acceptPhaseOf(string(out)); got != phase {
			t.Fatalf("accept with %s=%s died in phase %s:\n%s", landing.CrashAtEnv, phase, got, out)
		}
	}
	tk := workedTask(t, r, "no crash", "g.txt work")
	if res := r.with(landing.CrashAtEnv+"=nosuch-phase").run(nil, "accept", tk.Slug); res.Code != 0 {
		t.Fatalf("accept with %s naming no phase did not run to its end: %s", landing.CrashAtEnv, res)
	}
}
