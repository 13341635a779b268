// Command queuebench measures the throughput of accepting N ready tasks
// whose checks take a while, four ways in one run: the serial baseline
// a user has without the merge gate (lazy accept, then the test command
// run by hand on the result, task after task), and lazy accept of all of
// them as one merge queue with lazy.gate.parallel 1, 2 and 4. It prints
// each way's time, tasks per minute and its throughput against the
// serial baseline. With -fail I, the task at index I fails the gate
// instead, and it compares today's speculative train with a batched one
// (lazy.gate.batch N) at the same lazy.gate.parallel: gate runs and time
// to land the good tasks, as ratios in one run. scripts/bench-queue.sh
// builds and runs it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

var (
	lazyBin = flag.String("lazy", "lazy", "lazy binary")
	fake    = flag.String("fake", "fakeagent", "fake agent binary")
	n       = flag.Int("n", 8, "ready tasks to accept")
	check   = flag.Duration("check", 3*time.Second, "how long the test command (the gate) takes: it sleeps that long")
	command = flag.String("cmd", "", "the test command instead of the sleep (a CPU-bound one shows what the cores allow)")
	runs    = flag.Int("runs", 1, "runs of every way, interleaved; the median is shown")
	failing = flag.Int("fail", -1, "index of a task whose change fails the gate: compare the train with a batched train (lazy.gate.batch N)")
	par     = flag.Int("parallel", 2, "lazy.gate.parallel of both trains, with -fail")
)

// way is one way of accepting the tasks.
type way struct {
	name     string
	parallel int // lazy.gate.parallel; 0: no gate, the test run by hand after each accept
	batch    int // lazy.gate.batch (0: unset)
}

func main() {
	flag.Parse()
	work, err := os.MkdirTemp("", "lazy-queuebench-")
	must(err)
	defer os.RemoveAll(work)
	if *failing >= 0 {
		compareBatch(work)
		return
	}
	cmd := fmt.Sprintf("sleep %g", check.Seconds())
	if *command != "" {
		cmd = *command
	}
	ways := []way{
		{"serial: accept, then the test by hand", 0, 0},
		{"queue, lazy.gate.parallel 1", 1, 0},
		{"queue, lazy.gate.parallel 2", 2, 0},
		{"queue, lazy.gate.parallel 4", 4, 0},
	}
	times := make([][]time.Duration, len(ways))
	for r := 0; r < *runs; r++ {
		for i, w := range ways {
			dir := filepath.Join(work, fmt.Sprintf("run%d-way%d", r, i))
			slugs := setup(dir, work, *n)
			times[i] = append(times[i], accept(dir, slugs, w, cmd))
		}
	}
	fmt.Printf("%d ready tasks, each checked with %q, %d CPUs, %d run(s), median\n", *n, cmd, runtime.NumCPU(), *runs)
	fmt.Printf("  %-40s %9s %10s %10s\n", "way", "time", "tasks/min", "vs serial")
	base := median(times[0])
	for i, w := range ways {
		d := median(times[i])
		fmt.Printf("  %-40s %8.1fs %10.1f %9.2fx\n", w.name, d.Seconds(), float64(*n)/d.Minutes(), base.Seconds()/d.Seconds())
	}
}

// setup makes a repository at dir with n blocked tasks, each of whose
// one turn committed a file of its own, and returns their slugs.
func setup(dir, work string, n int) []string {
	must(os.MkdirAll(dir, 0o755))
	git(dir, "init", "-q", "-b", "main")
	git(dir, "config", "user.name", "bench")
	git(dir, "config", "user.email", "bench@example.invalid")
	git(dir, "commit", "-q", "--allow-empty", "-m", "init")
	script := filepath.Join(work, "script")
	must(os.WriteFile(script, []byte("taskfile work\ncommit agent: work\nprint done\n"), 0o644))
	must(os.WriteFile(script+"-bad", []byte("write bad.txt broken\ntaskfile work\ncommit agent: work\nprint done\n"), 0o644))
	var slugs []string
	for i := 0; i < n; i++ {
		slug := fmt.Sprintf("task-%d", i)
		lazy(dir, "create", slug)
		if i == *failing {
			lazyWith(dir, script+"-bad", "start", slug, "--command", *fake)
		} else {
			lazy(dir, "start", slug, "--command", *fake)
		}
		slugs = append(slugs, slug)
	}
	for _, s := range slugs {
		lazy(dir, "wait", s, "--timeout", "120s")
		if st := lazy(dir, "show", "--json", s); !strings.Contains(st, `"status": "blocked"`) {
			fail("task %s did not park blocked:\n%s", s, st)
		}
	}
	return slugs
}

// accept accepts the tasks the way w says and returns how long it took.
func accept(dir string, slugs []string, w way, cmd string) time.Duration {
	before := strings.TrimSpace(git(dir, "rev-parse", "main"))
	var took time.Duration
	if w.parallel == 0 {
		began := time.Now()
		for _, s := range slugs {
			lazy(dir, "accept", s)
			run(dir, "sh", "-c", cmd)
		}
		took = time.Since(began)
	} else {
		git(dir, "config", "--add", "lazy.gate", cmd)
		git(dir, "config", "lazy.gate.parallel", strconv.Itoa(w.parallel))
		began := time.Now()
		lazy(dir, append([]string{"accept"}, slugs...)...)
		took = time.Since(began)
	}
	// Every task landed, each once, and through the gate when there is one.
	log := git(dir, "log", "--format=%B", before+"..main")
	if got := strings.Count(log, "Lazy-Task: "); got != len(slugs) {
		fail("%s: %d of %d tasks landed", w.name, got, len(slugs))
	}
	if got := strings.Count(log, "Lazy-Gate: passed "); w.parallel > 0 && got != len(slugs) {
		fail("%s: %d of %d commits name a passed gate run", w.name, got, len(slugs))
	}
	return took
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	return s[len(s)/2]
}

func lazy(dir string, args ...string) string {
	return lazyWith(dir, filepath.Join(filepath.Dir(dir), "script"), args...)
}

// lazyWith runs lazy with the fake agent following script.
func lazyWith(dir, script string, args ...string) string {
	out, err := lazyRun(dir, script, args...)
	if err != nil {
		fail("lazy %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// lazyRun runs lazy and returns its output, stderr after stdout.
func lazyRun(dir, script string, args ...string) (string, error) {
	cmd := exec.Command(*lazyBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LAZY_NO_DAEMON=1", "FAKE_AGENT_SCRIPT="+script,
		"XDG_DATA_HOME="+filepath.Join(filepath.Dir(dir), "data"))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	return string(out) + errb.String(), err
}

func git(dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		fail("git %v: %v", args, err)
	}
	return string(out)
}

func run(dir, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		fail("%s %v: %v\n%s", name, args, err, out)
	}
}

func must(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "queuebench: "+format+"\n", a...)
	os.Exit(1)
}
