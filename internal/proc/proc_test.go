package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAliveAndRuns(t *testing.T) {
	if !Alive(os.Getpid()) || Alive(0) || Alive(-1) {
		t.Fatal("Alive is wrong about this process or invalid pids")
	}
	cmd := exec.Command("/bin/sh", "-c", "exit 0", "supervise", "abc")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// Until Wait reaps it, the exited child is a zombie: not alive. Poll,
	// since it may still be running for a moment.
	for Alive(pid) {
		time.Sleep(time.Millisecond)
	}
	if Runs(pid, "supervise", "abc") {
		t.Fatal("a zombie runs nothing")
	}
	_ = cmd.Wait()

	// "; exit": a shell may exec its last command in place, and then the
	// cmdline would be sleep's by the time Runs looks.
	sleeper := exec.Command("/bin/sh", "-c", "sleep 30; exit 0", "supervise", "abc")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	// Between fork and exec the child's cmdline is still this test's: poll
	// until the exec shows, as a loaded machine may take a moment.
	for deadline := time.Now().Add(10 * time.Second); !Runs(sleeper.Process.Pid, "supervise", "abc") && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if !Runs(sleeper.Process.Pid, "supervise", "abc") || Runs(sleeper.Process.Pid, "supervise", "abd") {
		t.Fatal("Runs does not match the command line")
	}
}

func TestHeldOpenSeesAnOpenFileOnly(t *testing.T) {
	path := t.TempDir() + "/index.lock"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if !HeldOpen(path) {
		t.Fatal("a file this process holds open reads as not held")
	}
	_ = f.Close()
	if HeldOpen(path) {
		t.Fatal("a closed file reads as held open")
	}
}

func TestWithEnvInKeepsToItsScope(t *testing.T) {
	mark := "LAZY_PROC_TEST_MARK=" + t.Name() + strconv.Itoa(os.Getpid())
	start := func(env ...string) int {
		t.Helper()
		c := exec.Command("sleep", "30")
		c.Env = append(os.Environ(), env...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c.Process.Pid
	}
	inA := start(mark, "LAZY_PROC_TEST_SCOPE=a")
	unscoped := start(mark) // marked before markers had a scope
	inB := start(mark, "LAZY_PROC_TEST_SCOPE=b")
	start("LAZY_PROC_TEST_SCOPE=a") // in scope, unmarked

	sorted := func(p []int) []int { slices.Sort(p); return p }
	want := func(p ...int) []int { return sorted(p) }
	// A child shows this test's environment until its exec shows: poll.
	for deadline := time.Now().Add(10 * time.Second); len(WithEnv(mark)) < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := sorted(WithEnv(mark)); !slices.Equal(got, want(inA, unscoped, inB)) {
		t.Fatalf("WithEnv: %v", got)
	}
	if got := sorted(WithEnvIn(mark, "LAZY_PROC_TEST_SCOPE=a")); !slices.Equal(got, want(inA, unscoped)) {
		t.Fatalf("WithEnvIn scope a: %v, want %v", got, want(inA, unscoped))
	}
	name, value, _ := strings.Cut(mark, "=")
	if got := sorted(ByEnvIn(name, "LAZY_PROC_TEST_SCOPE=b")[value]); !slices.Equal(got, want(unscoped, inB)) {
		t.Fatalf("ByEnvIn scope b: %v, want %v", got, want(unscoped, inB))
	}
	if got := sorted(ByEnvStrict(name, "LAZY_PROC_TEST_SCOPE=b")[value]); !slices.Equal(got, want(inB)) {
		t.Fatalf("ByEnvStrict scope b: %v, want %v (never the unscoped one)", got, want(inB))
	}
	if got := KillMarkedIn(mark, "LAZY_PROC_TEST_SCOPE=b"); !slices.Equal(sorted(got), want(unscoped, inB)) || !Alive(inA) || Alive(inB) {
		t.Fatalf("KillMarkedIn scope b killed %v (scope a's alive: %v)", got, Alive(inA))
	}
}

// TestKillDescendantsEndsOrphansASubreaperAdopted: a grandchild whose
// parent exited (a daemonizing double fork, with its environment
// cleared) is re-parented to a subreaper, and KillDescendants ends it.
// It runs in a child process of the test binary: the subreaper
// setting and the kill would otherwise reach every process the test
// binary runs.
func TestKillDescendantsEndsOrphansASubreaperAdopted(t *testing.T) {
	if os.Getenv("LAZY_PROC_TEST_SUBREAPER") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillDescendantsEndsOrphansASubreaperAdopted$", "-test.v")
		cmd.Env = append(os.Environ(), "LAZY_PROC_TEST_SUBREAPER=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ended the orphan") {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("no child subreaper here")
	}
	if err := BecomeSubreaper(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	// sh starts the orphan in a new session without any environment,
	// and exits at once: the orphan's parent is gone.
	c := exec.Command("/bin/sh", "-c", "env -i /bin/sh -c 'echo $$ > "+pidFile+"; exec /bin/sleep 1000' </dev/null >/dev/null 2>&1 &")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	var orphan int
	for deadline := time.Now().Add(10 * time.Second); orphan == 0; {
		if b, err := os.ReadFile(pidFile); err == nil {
			orphan, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			t.Fatal("the orphan never started")
		}
		time.Sleep(time.Millisecond)
	}
	if !slices.Contains(Descendants(os.Getpid()), orphan) {
		t.Fatalf("the orphan %d is not among this subreaper's descendants %v", orphan, Descendants(os.Getpid()))
	}
	// Sparing it keeps it, and its own children.
	if got := KillDescendantsExcept(func(pid int) bool { return pid == orphan }); slices.Contains(got, orphan) || !Alive(orphan) {
		t.Fatalf("KillDescendantsExcept killed %v, the spared orphan %d among them", got, orphan)
	}
	if got := KillDescendants(); !slices.Contains(got, orphan) || Alive(orphan) {
		t.Fatalf("KillDescendants killed %v; the orphan %d alive: %v", got, orphan, Alive(orphan))
	}
	if Cmdline(os.Getpid()) == "" {
		t.Error("Cmdline of this process is empty")
	}
	t.Log("ended the orphan")
}
