package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// compareBatch accepts N ready tasks, the one at -fail failing the gate,
// two ways in one run at the same lazy.gate.parallel: today's
// speculative train and a batched train (lazy.gate.batch N). It checks
// that both land every good task exactly once and never the culprit,
// and prints each way's gate runs and time to land them, and the
// batch's ratios to the train.
func compareBatch(work string) {
	if *failing >= *n {
		fail("-fail %d: there are only %d tasks", *failing, *n)
	}
	cmd := fmt.Sprintf("sleep %g; test ! -e bad.txt", check.Seconds())
	if *command != "" {
		cmd = *command + "; test ! -e bad.txt"
	}
	ways := []way{
		{fmt.Sprintf("train, lazy.gate.parallel %d", *par), *par, 0},
		{fmt.Sprintf("batch %d, lazy.gate.parallel %d", *n, *par), *par, *n},
	}
	times := make([][]time.Duration, len(ways))
	gates := make([][]time.Duration, len(ways)) // gate runs, as a count
	for r := 0; r < *runs; r++ {
		for i, w := range ways {
			dir := filepath.Join(work, fmt.Sprintf("run%d-way%d", r, i))
			slugs := setup(dir, work, *n)
			took, runs := acceptFailing(dir, slugs, w, cmd)
			times[i] = append(times[i], took)
			gates[i] = append(gates[i], time.Duration(runs))
		}
	}
	fmt.Printf("%d ready tasks, task %d failing, each checked with %q, %d CPUs, %d run(s), median\n", *n, *failing, cmd, runtime.NumCPU(), *runs)
	fmt.Printf("  %-36s %9s %10s\n", "way", "time", "gate runs")
	for i, w := range ways {
		fmt.Printf("  %-36s %8.1fs %10d\n", w.name, median(times[i]).Seconds(), int(median(gates[i])))
	}
	fmt.Printf("  batch vs train: %.2fx as fast, %.2fx the gate runs\n",
		median(times[0]).Seconds()/median(times[1]).Seconds(), float64(median(gates[1]))/float64(median(gates[0])))
}

// acceptFailing accepts the tasks as one queue the way w says and
// returns how long it took and how many gate runs it made.
func acceptFailing(dir string, slugs []string, w way, cmd string) (time.Duration, int) {
	before := strings.TrimSpace(git(dir, "rev-parse", "main"))
	git(dir, "config", "--add", "lazy.gate", cmd)
	git(dir, "config", "lazy.gate.parallel", strconv.Itoa(w.parallel))
	if w.batch > 0 {
		git(dir, "config", "lazy.gate.batch", strconv.Itoa(w.batch))
	}
	began := time.Now()
	out, err := lazyRun(dir, filepath.Join(filepath.Dir(dir), "script"), append([]string{"accept"}, slugs...)...)
	took := time.Since(began)
	if err == nil {
		fail("%s: the accept of a queue with a failing task succeeded:\n%s", w.name, out)
	}
	log := git(dir, "log", "--format=%B", before+"..main")
	if got := strings.Count(log, "Lazy-Gate: passed "); got != len(slugs)-1 {
		fail("%s: %d of %d good tasks landed through the gate:\n%s", w.name, got, len(slugs)-1, out)
	}
	// Each good task landed once: as many distinct tasks as commits.
	tasks := map[string]bool{}
	for _, l := range strings.Split(log, "\n") {
		if id, ok := strings.CutPrefix(l, "Lazy-Task: "); ok {
			tasks[id] = true
		}
	}
	if commits := strings.Count(git(dir, "log", "--format=%H", before+"..main"), "\n"); commits != len(slugs)-1 || len(tasks) != commits {
		fail("%s: main gained %d commits of %d tasks, want %d each", w.name, commits, len(tasks), len(slugs)-1)
	}
	if strings.Contains(git(dir, "ls-tree", "--name-only", "main"), "bad.txt") {
		fail("%s: the failing change landed", w.name)
	}
	logs, err := filepath.Glob(filepath.Join(dir, ".git", "lazy", "logs", "*", "gate-*.log"))
	must(err)
	if len(logs) == 0 {
		fmt.Fprintln(os.Stderr, "queuebench: no gate logs found; the count of runs is 0")
	}
	return took, len(logs)
}
