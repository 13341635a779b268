// Command bench times lazy CLI processes against raw git doing the
// equivalent work in the same repository, and prints medians and ratios.
// scripts/bench.sh builds and runs it.
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
	"time"
)

var (
	lazyBin = flag.String("lazy", "lazy", "lazy binary")
	seedBin = flag.String("seed", "seed", "seed binary")
	work    = flag.String("dir", "", "scratch directory")
	runs    = flag.Int("runs", 40, "runs per measurement")
)

func main() {
	flag.Parse()
	if *work == "" {
		d, err := os.MkdirTemp("", "lazy-bench-")
		check(err)
		*work = d
		defer os.RemoveAll(d)
	}
	fmt.Printf("lazy benchmarks in %s, %d runs each, median wall time per process\n\n", *work, *runs)
	repo := newRepo("ops")
	must(repo, *lazyBin, "init")

	// One raw-git "operation": write a blob, a tree, a commit, CAS a ref.
	rawOp := func(i int) func() {
		return func() {
			blob := gitOut(repo, []byte(fmt.Sprintf(`{"n":%d}`, i)), "hash-object", "-w", "--stdin")
			tree := gitOut(repo, []byte("100644 blob "+blob+"\ttask.json\n"), "mktree")
			commit := gitOut(repo, nil, "commit-tree", "-m", "op", tree)
			gitOut(repo, nil, "update-ref", "refs/bench/raw", commit)
		}
	}
	i := 0
	updateRef := median(func() { i++; gitOut(repo, nil, "update-ref", fmt.Sprintf("refs/bench/u%d", i), "HEAD") })
	i = 0
	raw := median(func() { i++; rawOp(i)() })
	i = 0
	create := median(func() { i++; must(repo, *lazyBin, "create", fmt.Sprintf("bench task %d", i)) })
	must(repo, *lazyBin, "create", "toggled")
	closed := false
	transition := median(func() {
		if closed {
			must(repo, *lazyBin, "reopen", "toggled")
		} else {
			must(repo, *lazyBin, "close", "toggled")
		}
		closed = !closed
	})
	row := func(name string, d time.Duration) {
		fmt.Printf("  %-34s %8.2f ms   %5.1fx git update-ref   %5.2fx raw git op\n", name, ms(d), ratio(d, updateRef), ratio(d, raw))
	}
	fmt.Printf("  %-34s %8.2f ms\n", "git update-ref (1 process)", ms(updateRef))
	fmt.Printf("  %-34s %8.2f ms   (hash-object + mktree + commit-tree + update-ref)\n", "raw git op (4 processes)", ms(raw))
	row("lazy create", create)
	row("lazy close/reopen (1 transition)", transition)
	fmt.Println()

	for _, n := range []int{1000, 10000} {
		r := newRepo(fmt.Sprintf("list%d", n))
		must(r, *seedBin, "-C", r, "-n", fmt.Sprint(n))
		gitOut(r, nil, "gc", "-q")
		must(r, *lazyBin, "list", "--json") // builds the derived cache once
		warm := median(func() { must(r, *lazyBin, "list", "--json") })
		cacheDir := filepath.Join(r, ".git", "lazy", "cache")
		cold := medianN(5, func() {
			check(os.RemoveAll(cacheDir))
			must(r, *lazyBin, "list", "--json")
		})
		forEach := median(func() { gitOut(r, nil, "for-each-ref", "refs/lazy/tasks/") })
		catAll := median(func() {
			specs := gitOut(r, nil, "for-each-ref", "--format=%(objectname):task.json", "refs/lazy/tasks/")
			gitOut(r, []byte(specs+"\n"), "cat-file", "--batch")
		})
		fmt.Printf("  list over %d tasks:\n", n)
		fmt.Printf("    %-32s %8.2f ms\n", "git for-each-ref refs/lazy/tasks", ms(forEach))
		fmt.Printf("    %-32s %8.2f ms   (reads every task.json)\n", "git for-each-ref | cat-file", ms(catAll))
		fmt.Printf("    %-32s %8.2f ms   %5.2fx for-each-ref   %5.2fx for-each-ref|cat-file\n", "lazy list --json (cache)", ms(warm), ratio(warm, forEach), ratio(warm, catAll))
		fmt.Printf("    %-32s %8.2f ms   %5.2fx for-each-ref   %5.2fx for-each-ref|cat-file\n", "lazy list --json (no cache)", ms(cold), ratio(cold, forEach), ratio(cold, catAll))
	}
}

func newRepo(name string) string {
	dir := filepath.Join(*work, name)
	check(os.MkdirAll(dir, 0o755))
	gitOut(dir, nil, "init", "-q", "-b", "main")
	gitOut(dir, nil, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "init")
	return dir
}

func median(fn func()) time.Duration { return medianN(*runs, fn) }

func medianN(n int, fn func()) time.Duration {
	fn() // warm the page cache and the binary
	ds := make([]time.Duration, n)
	for i := range ds {
		t := time.Now()
		fn()
		ds[i] = time.Since(t)
	}
	sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
	return ds[n/2]
}

func must(dir, bin string, args ...string) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Stdout = nil
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v\n%s", bin, strings.Join(args, " "), err, errb.String())
		os.Exit(1)
	}
}

func gitOut(dir string, stdin []byte, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "git %s: %v\n", strings.Join(args, " "), err)
		os.Exit(1)
	}
	return strings.TrimSpace(string(out))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
