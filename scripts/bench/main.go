// Command bench times lazy CLI processes against the git floor doing the
// equivalent work in the same repository, and prints each figure as a
// ratio measured in one interleaved run: the contenders of a row take
// turns, run after run, so machine noise lands on all of them alike, and
// each gets the median of its runs. scripts/bench.sh builds and runs it.
//
// Usage: bench -lazy LAZY -seed SEED [-n 10000] [-runs 21] [-quick] [-peers]
// [-list] [-base LAZY] [-dir DIR]
//
// The list rows include lazy cost by outcome and by task, against the
// floor and, in a second repository whose every task spent (seed
// -spent), against a warm list of the same tasks: the bar for cost is
// 1.5x that list.
//
// -quick uses 1,000 tasks and fewer runs. -list runs only the list rows.
// -base adds a second lazy binary (the one being compared against, built
// from main) to the list rows, taking turns with the other two, so a
// change is measured as a before/after ratio in one run. -dir keeps the
// scratch repositories, and reuses a big repository seeded there before.
// -peers instead runs git-bug and bd (beads), when they are on PATH,
// doing create, close/reopen, list and show at 1,000 and 10,000 items,
// for the side-by-side table.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

var (
	lazyBin  = flag.String("lazy", "lazy", "lazy binary")
	seedBin  = flag.String("seed", "seed", "seed binary")
	work     = flag.String("dir", "", "scratch directory")
	runs     = flag.Int("runs", 21, "runs per contender in each row")
	size     = flag.Int("n", 10000, "tasks in the large repository")
	quick    = flag.Bool("quick", false, "1,000 tasks, 7 runs: a smoke run")
	peers    = flag.Bool("peers", false, "run git-bug and bd (when on PATH) instead of lazy against git")
	onlyList = flag.Bool("list", false, "run only the list rows")
	baseBin  = flag.String("base", "", "a second lazy binary to time in the list rows (before/after)")
)

func main() {
	flag.Parse()
	if *quick {
		*size, *runs = 1000, 7
	}
	if *work == "" {
		d, err := os.MkdirTemp("", "lazy-bench-")
		check(err)
		*work = d
		defer os.RemoveAll(d)
	}
	if *peers {
		runPeers()
		return
	}
	fmt.Printf("lazy against the git floor in %s: %d tasks, %d interleaved runs per contender, medians\n\n", *work, *size, *runs)

	big := filepath.Join(*work, "big")
	if _, err := os.Stat(filepath.Join(big, ".git", "packed-refs")); err != nil {
		big = newRepo("big")
		must(big, *lazyBin, "init")
		must(big, *seedBin, "-C", big, "-n", fmt.Sprint(*size))
		gitOut(big, nil, "gc", "-q") // packed refs and objects, as a lived-in repository has
	}
	cache := filepath.Join(big, ".git", "lazy", "cache")

	floorList := func() { catAll(big) }
	coldList := func() { check(os.RemoveAll(cache)); must(big, *lazyBin, "list", "--json") }
	warmList := func() { must(big, *lazyBin, "list", "--json") }
	must(big, *lazyBin, "list", "--json")

	fmt.Printf("list --json over %d packed tasks (floor: git for-each-ref | git cat-file --batch of every task.json)\n", *size)
	d := interleave(coldList, floorList)
	row("cold (no derived cache)", d[0], d[1])
	d = interleave(warmList, floorList)
	row("warm", d[0], d[1])
	// What work cost, by outcome and by task, reads the summaries the
	// list reads and no turn record: it costs what a warm list does.
	costBy := func(dir, by string) func() { return func() { must(dir, *lazyBin, "cost", "--by", by, "--json") } }
	d = interleave(costBy(big, "outcome"), floorList)
	row("lazy cost --by outcome", d[0], d[1])
	d = interleave(costBy(big, "task"), floorList)
	row("lazy cost --by task", d[0], d[1])
	costRows(costBy)
	rss := peakRSS(func() int64 {
		check(os.RemoveAll(cache))
		_, kb := run(big, nil, *lazyBin, "list", "--json")
		return kb
	})
	floorRSS := peakRSS(func() int64 {
		specs, a := run(big, nil, "git", "for-each-ref", "--format=%(objectname):task.json", "refs/lazy/tasks/")
		_, b := run(big, []byte(specs+"\n"), "git", "cat-file", "--batch")
		return max(a, b)
	})
	fmt.Printf("  %-40s %8d KiB   %6.2fx the floor's largest process (%d KiB)\n\n", "peak RSS of cold list", rss, float64(rss)/float64(floorRSS), floorRSS)
	if *baseBin != "" {
		listRows(big, cache, floorList)
	}
	if *onlyList {
		return
	}
	empty := newRepo("empty")
	must(empty, *lazyBin, "init")
	id := firstTask(big)
	ref := "refs/lazy/tasks/" + id

	fmt.Printf("show one task of %d (floor: git rev-parse + cat-file task.json + log of its ref)\n", *size)
	show := func(dir, id string) func() { return func() { must(dir, *lazyBin, "show", id) } }
	floorShow := func(dir, ref string) func() {
		return func() {
			h := gitOut(dir, nil, "rev-parse", ref)
			gitOut(dir, nil, "cat-file", "-p", h+":task.json")
			gitOut(dir, nil, "log", "--format=%H %s", ref)
		}
	}
	d = interleave(show(big, id), floorShow(big, ref))
	row("lazy show", d[0], d[1])
	fmt.Println()

	fmt.Printf("create and one transition with %d packed task refs (floor: hash-object + mktree + commit-tree + update-ref)\n", *size)
	must(empty, *lazyBin, "create", "toggled")
	must(big, *lazyBin, "create", "toggled")
	i := 0
	raw := func() { i++; rawOp(big, i) }
	j := 0
	createIn := func(dir string) func() {
		return func() { j++; must(dir, *lazyBin, "create", fmt.Sprintf("bench task %d", j)) }
	}
	d = interleave(createIn(big), raw, createIn(empty))
	row3("lazy create", d[0], d[1], d[2])
	d = interleave(toggle(big), raw, toggle(empty))
	row3("lazy close/reopen (1 transition)", d[0], d[1], d[2])
	fmt.Println()

	// The same task shown with ten times the objects around it.
	more := newRepo("more")
	must(more, *lazyBin, "init")
	gitOut(more, nil, "fetch", "-q", big, "+refs/lazy/*:refs/lazy/*")
	objs := countObjects(big)
	addBlobs(more, 9*objs)
	gitOut(more, nil, "gc", "-q")
	fmt.Printf("show of one task in %d objects against %d objects\n", objs, countObjects(more))
	d = interleave(show(big, id), show(more, id))
	fmt.Printf("  %-40s %8.2f ms   %8.2f ms   %6.2fx\n", "lazy show (1x objects, 10x objects)", ms(d[0]), ms(d[1]), ratio(d[1], d[0]))
}

// listRows times list --json of -lazy and -base against the floor, the
// three taking turns, and compares their output.
func listRows(big, cache string, floor func()) {
	list := func(bin string, cold bool) func() {
		return func() {
			if cold {
				check(os.RemoveAll(cache))
			}
			must(big, bin, "list", "--json")
		}
	}
	for _, cold := range []bool{true, false} {
		a, _ := run(big, nil, *lazyBin, "list", "--json")
		b, _ := run(big, nil, *baseBin, "list", "--json")
		if a != b {
			fmt.Println("  OUTPUT DIFFERS between -lazy and -base")
		}
		d := interleave(list(*lazyBin, cold), list(*baseBin, cold), floor)
		name := map[bool]string{true: "cold", false: "warm"}[cold]
		fmt.Printf("  %-40s %8.2f ms   base %8.2f ms   floor %8.2f ms   %6.2fx base   %6.2fx floor (base %4.2fx)\n",
			name+" list, -lazy against -base", ms(d[0]), ms(d[1]), ms(d[2]), ratio(d[0], d[1]), ratio(d[0], d[2]), ratio(d[1], d[2]))
	}
	for _, bin := range []string{*lazyBin, *baseBin} {
		rss := peakRSS(func() int64 {
			check(os.RemoveAll(cache))
			_, kb := run(big, nil, bin, "list", "--json")
			return kb
		})
		fmt.Printf("  %-40s %8d KiB  %s\n", "peak RSS of cold list", rss, bin)
	}
	fmt.Println()
}

// interleave runs the contenders in turn, *runs times after one warm-up
// round, and returns each one's median.
func interleave(fns ...func()) []time.Duration {
	for _, fn := range fns {
		fn()
	}
	ds := make([][]time.Duration, len(fns))
	for r := 0; r < *runs; r++ {
		for k, fn := range fns {
			t := time.Now()
			fn()
			ds[k] = append(ds[k], time.Since(t))
		}
	}
	out := make([]time.Duration, len(fns))
	for k := range ds {
		sort.Slice(ds[k], func(a, b int) bool { return ds[k][a] < ds[k][b] })
		out[k] = ds[k][len(ds[k])/2]
	}
	return out
}

// costRows times lazy cost against a warm list of the same repository,
// one whose every task spent (seed -spent), as a lived-in one's have:
// the bar is 1.5x the warm list.
func costRows(costBy func(dir, by string) func()) {
	spent := filepath.Join(*work, "spent")
	if _, err := os.Stat(filepath.Join(spent, ".git", "packed-refs")); err != nil {
		spent = newRepo("spent")
		must(spent, *lazyBin, "init")
		must(spent, *seedBin, "-C", spent, "-n", fmt.Sprint(*size), "-spent")
		gitOut(spent, nil, "gc", "-q")
	}
	warm := func() { must(spent, *lazyBin, "list", "--json") }
	warm()
	fmt.Printf("lazy cost over %d packed tasks that all spent, against a warm list --json of them (bar: 1.5x)\n", *size)
	for _, by := range []string{"outcome", "task"} {
		d := interleave(costBy(spent, by), warm)
		fmt.Printf("  %-40s %8.2f ms   warm list %8.2f ms   %6.2fx\n", "lazy cost --by "+by, ms(d[0]), ms(d[1]), ratio(d[0], d[1]))
	}
}

func row(name string, lazy, floor time.Duration) {
	fmt.Printf("  %-40s %8.2f ms   floor %8.2f ms   %6.2fx\n", name, ms(lazy), ms(floor), ratio(lazy, floor))
}

func row3(name string, lazy, floor, empty time.Duration) {
	fmt.Printf("  %-40s %8.2f ms   floor %8.2f ms   %6.2fx   empty repo %8.2f ms   %6.2fx\n", name, ms(lazy), ms(floor), ratio(lazy, floor), ms(empty), ratio(lazy, empty))
}

// toggle closes and reopens one task, one transition per call.
func toggle(dir string) func() {
	closed := false
	return func() {
		if closed {
			must(dir, *lazyBin, "reopen", "toggled")
		} else {
			must(dir, *lazyBin, "close", "toggled")
		}
		closed = !closed
	}
}

// rawOp is one git-only operation: a blob, a tree, a commit, a ref.
func rawOp(dir string, i int) {
	blob := gitOut(dir, []byte(fmt.Sprintf(`{"n":%d}`, i)), "hash-object", "-w", "--stdin")
	tree := gitOut(dir, []byte("100644 blob "+blob+"\ttask.json\n"), "mktree")
	commit := gitOut(dir, nil, "-c", "user.name=b", "-c", "user.email=b@b", "commit-tree", "-m", "op", tree)
	gitOut(dir, nil, "update-ref", "refs/bench/raw", commit)
}

// catAll reads every task.json the way the floor would: one for-each-ref
// feeding one cat-file --batch.
func catAll(dir string) {
	specs := gitOut(dir, nil, "for-each-ref", "--format=%(objectname):task.json", "refs/lazy/tasks/")
	gitOut(dir, []byte(specs+"\n"), "cat-file", "--batch")
}

// peakRSS is the median over five runs of the largest resident set (KiB)
// of the processes fn reports.
func peakRSS(fn func() int64) int64 {
	var peaks []int64
	for r := 0; r < 5; r++ {
		peaks = append(peaks, fn())
	}
	sort.Slice(peaks, func(a, b int) bool { return peaks[a] < peaks[b] })
	return peaks[len(peaks)/2]
}

func firstTask(dir string) string {
	out := gitOut(dir, nil, "for-each-ref", "--count=1", "--format=%(refname)", "refs/lazy/tasks/")
	return strings.TrimPrefix(out, "refs/lazy/tasks/")
}

func countObjects(dir string) int {
	out := gitOut(dir, nil, "count-objects", "-v")
	n := 0
	for _, l := range strings.Split(out, "\n") {
		var v int
		if _, err := fmt.Sscanf(l, "count: %d", &v); err == nil {
			n += v
		} else if _, err := fmt.Sscanf(l, "in-pack: %d", &v); err == nil {
			n += v
		}
	}
	return n
}

// addBlobs writes n small distinct blobs through one git fast-import.
func addBlobs(dir string, n int) {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		data := fmt.Sprintf("filler object %d\n", i)
		fmt.Fprintf(&b, "blob\ndata %d\n%s\n", len(data), data)
	}
	gitOut(dir, b.Bytes(), "fast-import", "--quiet")
}

func newRepo(name string) string {
	dir := filepath.Join(*work, name)
	check(os.MkdirAll(dir, 0o755))
	gitOut(dir, nil, "init", "-q", "-b", "main")
	// No automatic gc or maintenance in the background of a measurement
	// (a fetch or many loose objects start one, detached): the bench runs
	// gc itself where a row needs it.
	gitOut(dir, nil, "config", "gc.auto", "0")
	gitOut(dir, nil, "config", "maintenance.auto", "false")
	gitOut(dir, nil, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "init")
	return dir
}

// run runs bin in dir and returns its trimmed stdout and its peak
// resident set in KiB; any failure ends the bench.
func run(dir string, stdin []byte, bin string, args ...string) (string, int64) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v\n%s", bin, strings.Join(args, " "), err, errb.String())
		os.Exit(1)
	}
	var kb int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		kb = ru.Maxrss
	}
	return strings.TrimSpace(string(out)), kb
}

func must(dir, bin string, args ...string) { run(dir, nil, bin, args...) }

func gitOut(dir string, stdin []byte, args ...string) string {
	out, _ := run(dir, stdin, "git", args...)
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
