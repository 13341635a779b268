package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/proc"
	"github.com/lazyorch/lazy/proto"
)

// Everything a gate or a turn starts dies with it, including what left
// its process group with setsid (SECURITY.md, "The gate cannot be
// decided by the candidate").

// lazyDirOf is the repository's lazy directory as the markers name it.
func lazyDirOf(t *testing.T, r *runner) string {
	t.Helper()
	dir := filepath.Join(r.dir, ".git", "lazy")
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return filepath.Clean(dir)
}

// escapeTo is a shell command that starts a process in a new session
// (out of the caller's process group) that writes its pid to pidFile and
// sleeps, and waits until it has.
func escapeTo(pidFile string) string {
	return "setsid sh -c 'echo $$ >> " + pidFile + "; exec sleep 1000' </dev/null >/dev/null 2>&1 & while ! grep -q . " + pidFile + " 2>/dev/null; do sleep 0.01; done"
}

// readPids reads the pids in path, one a line.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, p)
	}
	if len(pids) == 0 {
		t.Fatalf("%s names no process", path)
	}
	return pids
}

// noneAlive fails if any of pids still runs (a moment is allowed for a
// SIGKILL to be delivered on a busy machine).
func noneAlive(t *testing.T, what string, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var alive []int
		for _, p := range pids {
			if proc.Alive(p) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v still running (%s)", what, alive, proc.Cmdline(alive[0]))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// plant starts `sleep 1000` with env added, as a process lazy did not
// start, ended when the test ends.
func plant(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	// proc reads its environment from /proc: wait until it is there.
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(proc.WithEnv(env[0]), cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("the planted process never showed its environment")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cmd
}

// TestEverythingAGateStartsDiesWithIt: a gate command that starts a
// setsid child (one keeping the run's mark, one with its environment
// cleared) leaves nothing running after the gate passes and the accept
// lands, nor after the gate's timeout ends it; lazy doctor
// reports (and ends) a process that still carries a finished gate run's
// mark, with its pid and command.
func TestEverythingAGateStartsDiesWithIt(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid here")
	}
	r := newRepo(t)
	lazyDir := lazyDirOf(t, r)
	scope := "LAZY_GATE_REPO=" + lazyDir
	setsid, _ := exec.LookPath("setsid")
	passed, bare := filepath.Join(t.TempDir(), "passed"), filepath.Join(t.TempDir(), "bare")
	// One child keeps the run's mark; the other clears its environment,
	// so only the reaper each gate command runs under finds it.
	r.git("config", "lazy.gate", escapeTo(passed)+"; env -i "+setsid+" /bin/sh -c 'echo $$ > "+bare+"; exec /bin/sleep 1000' </dev/null >/dev/null 2>&1 & while ! grep -q . "+bare+" 2>/dev/null; do sleep 0.01; done; echo checked")
	tk := workedTask(t, r, "gated work", "work.txt w")
	if res := r.run(nil, "accept", tk.Slug); res.Code != 0 || !strings.Contains(res.Stdout, "gate passed") {
		t.Fatalf("accept: %s", res)
	}
	noneAlive(t, "after the gate passed and the accept landed", append(readPids(t, passed), readPids(t, bare)...)...)
	if left := proc.WithEnv(scope); len(left) > 0 {
		t.Fatalf("processes of this repository's gates still run: %v", left)
	}
	g := r.gateShow(tk.Slug).GateRecord
	if g == nil || len(g.Runs) != 1 {
		t.Fatalf("gate record: %+v", g)
	}
	b, err := os.ReadFile(filepath.Join(lazyDir, "logs", tk.ID, "gate-"+g.Runs[0].ID+".log"))
	if err != nil || !strings.Contains(string(b), "checked\nlazy: ended 2 process(es) the gate command left running") {
		t.Fatalf("the gate's log (%v):\n%s", err, b)
	}

	// At its timeout.
	timedOut := filepath.Join(t.TempDir(), "timedout")
	r.git("config", "lazy.gate", escapeTo(timedOut)+"; sleep 1000")
	r.git("config", "lazy.gate.timeout", "3s")
	slow := workedTask(t, r, "slow work", "slow.txt s")
	res := r.run(nil, "gate", slow.Slug)
	if res.Code != 1 || !strings.Contains(res.Stdout, "Gate failed") {
		t.Fatalf("lazy gate with a command that outlives the timeout: %s", res)
	}
	noneAlive(t, "after the gate's timeout", readPids(t, timedOut)...)
	if left := proc.WithEnv(scope); len(left) > 0 {
		t.Fatalf("processes of this repository's gates still run: %v", left)
	}

	// A survivor (planted: nothing lazy runs leaves one) is reported with
	// its pid and command, then ended.
	if out := r.ok("doctor", "--dry-run"); !strings.Contains(out, "No problems found") {
		t.Fatalf("doctor before the survivor:\n%s", out)
	}
	survivor := plant(t, "LAZY_GATE_RUN=0123456789abcdef", scope)
	pid := strconv.Itoa(survivor.Process.Pid)
	dry := r.run(nil, "doctor", "--dry-run")
	if dry.Code != 1 || !strings.Contains(dry.Stdout, "gate-survivor: process "+pid+" (sleep 1000) of gate run 0123456789abcdef is still running after its gate ended") {
		t.Fatalf("doctor --dry-run does not report the survivor:\n%s", dry)
	}
	rep := r.doctor(0)
	if a, ok := rep.kinds()["/gate-survivor"]; !ok || a != "ended it" {
		t.Fatalf("doctor did not end the survivor: %+v", rep.Findings)
	}
	noneAlive(t, "after doctor", survivor.Process.Pid)
	// Another clone's gate processes are not this one's survivors.
	plant(t, "LAZY_GATE_RUN=fedcba9876543210", "LAZY_GATE_REPO=/elsewhere/.git/lazy")
	if out := r.ok("doctor", "--dry-run"); !strings.Contains(out, "No problems found") {
		t.Fatalf("doctor took another repository's gate for a survivor:\n%s", out)
	}
}

// TestEverythingATurnStartsDiesWithIt: an agent that starts a setsid
// child, and one that also clears its environment (so no mark finds
// it), leaves neither running once its turn ends: the supervisor is
// their subreaper and ends them, and says so in the turn's log. lazy
// doctor reports a process that carries a parked task's turn mark with
// its pid and command, and ends it.
func TestEverythingATurnStartsDiesWithIt(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid here")
	}
	setsid, _ := exec.LookPath("setsid")
	r := newRepo(t)
	dir := t.TempDir()
	marked, bare := filepath.Join(dir, "marked"), filepath.Join(dir, "bare")
	agent := execAgent(t, escapeTo(marked)+`
env -i `+setsid+` /bin/sh -c 'echo $$ > `+bare+`; exec /bin/sleep 1000' </dev/null >/dev/null 2>&1 &
while ! grep -q . `+bare+` 2>/dev/null; do sleep 0.01; done
printf 'w\n' > work.txt
git add work.txt
git commit -q -m "agent: work"
echo "did the work"
`)
	tk := r.create("escaping agent", "-m", "Do the work.")
	startWith(t, r, tk.Slug, agent)
	pids := append(readPids(t, marked), readPids(t, bare)...)
	noneAlive(t, "after the turn ended", pids...)
	if logs := r.ok("logs", tk.Slug); !strings.Contains(logs, "· the agent exited and left 2 process(es) running (pid ") || !strings.Contains(logs, "; lazy ended them") {
		t.Fatalf("the turn's log does not say what was ended:\n%s", logs)
	}

	// A leftover (planted) of the parked task's turn.
	survivor := plant(t, proto.TurnMarker(tk.ID), proto.TurnScope(filepath.Join(r.dir, ".git", "lazy")))
	pid := strconv.Itoa(survivor.Process.Pid)
	dry := r.run(nil, "doctor", "--dry-run")
	if dry.Code != 1 || !strings.Contains(dry.Stdout, "stray-turn: blocked, but processes of its turn are still running with no supervisor (the agent, or what it left behind): pid "+pid+" (sleep 1000)") {
		t.Fatalf("doctor --dry-run does not report the leftover:\n%s", dry)
	}
	r.doctor(0)
	noneAlive(t, "after doctor", survivor.Process.Pid)
}

// TestASubtaskTheAgentStartedOutlivesItsTurn: what an agent starts
// detached through lazy itself (another task's supervisor, spawned by a
// lazy start it ran) is not its leftover: the subtask's turn runs on
// after the parent's turn ended, and completes.
func TestASubtaskTheAgentStartedOutlivesItsTurn(t *testing.T) {
	r := manualResume(newRepo(t))
	parent := r.create("parent", "-m", "Start the subtask.")
	sub := r.create("child", "--parent", parent.Slug, "-m", "Do the subtask.")
	release := filepath.Join(t.TempDir(), "release")
	subScript := script(t, "wait-file "+release, "write sub.txt s", "commit agent: sub", "print sub done")
	agent := execAgent(t, `export `+subScript+`
`+lazyBin+` start `+sub.Slug+` --command `+fakeAgentBin+` >/dev/null 2>&1
printf 'p\n' > p.txt
git add p.txt
git commit -q -m "agent: parent work"
echo "started the subtask"
`)
	startWith(t, r, parent.Slug, agent)
	if st := r.showFull(sub.Slug).Status; st != "working" {
		t.Fatalf("the subtask is %s after its parent's turn ended, want still working", st)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitStatus(sub.Slug, "blocked")
}
