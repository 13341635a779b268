package main

import (
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// peer is an issue tracker driven through its CLI the way the bench
// drives lazy: create, one status change each way, list, show.
type peer struct {
	name, bin string
	init      [][]string
	create    func(i int) []string
	// idOf reads the new item's id from create's output.
	idOf          func(out string) string
	close, reopen func(id string) []string
	list          []string
	show          func(id string) []string
}

var peerList = []peer{
	{
		name: "git-bug", bin: "git-bug",
		init: [][]string{{"user", "new", "--name", "bench", "--email", "bench@example.com", "--non-interactive"}},
		create: func(i int) []string {
			return []string{"bug", "new", "--title", fmt.Sprintf("bench item %d", i), "--message", "seeded", "--non-interactive"}
		},
		idOf:   func(out string) string { return firstField(out) },
		close:  func(id string) []string { return []string{"bug", "status", "close", id} },
		reopen: func(id string) []string { return []string{"bug", "status", "open", id} },
		list:   []string{"bug", "--format", "json"},
		show:   func(id string) []string { return []string{"bug", "show", id} },
	},
	{
		name: "bd (beads)", bin: "bd",
		init:   [][]string{{"init", "--quiet"}},
		create: func(i int) []string { return []string{"create", fmt.Sprintf("bench item %d", i), "--silent"} },
		idOf:   func(out string) string { return lastField(out) },
		close:  func(id string) []string { return []string{"close", id} },
		reopen: func(id string) []string { return []string{"reopen", id} },
		list:   []string{"list", "--json", "--all"},
		show:   func(id string) []string { return []string{"show", id} },
	},
}

// runPeers times each peer on PATH at 1,000 and 10,000 items (only 1,000
// with -quick). Seeding goes through the peer's own CLI, one process per
// item, since that is the only interface they share: at 10,000 items it
// takes a while.
func runPeers() {
	sizes := []int{1000, 10000}
	if *quick {
		sizes = sizes[:1]
	}
	fmt.Printf("peers in %s, %d interleaved runs, medians per process\n", *work, *runs)
	for _, p := range peerList {
		bin, err := exec.LookPath(p.bin)
		if err != nil {
			fmt.Printf("\n%s: %s is not on PATH; skipped\n", p.name, p.bin)
			continue
		}
		for _, n := range sizes {
			dir := newRepo(fmt.Sprintf("%s-%d", p.bin, n))
			for _, args := range p.init {
				must(dir, bin, args...)
			}
			t := time.Now()
			var id string
			for i := 0; i < n; i++ {
				out, _ := run(dir, nil, bin, p.create(i)...)
				if i == 0 {
					id = p.idOf(out)
				}
			}
			fmt.Printf("\n%s with %d items (seeded through its CLI in %s):\n", p.name, n, time.Since(t).Round(time.Second))
			k := n
			closed := false
			d := interleave(
				func() { k++; must(dir, bin, p.create(k)...) },
				func() {
					if closed {
						must(dir, bin, p.reopen(id)...)
					} else {
						must(dir, bin, p.close(id)...)
					}
					closed = !closed
				},
				func() { must(dir, bin, p.list...) },
				func() { must(dir, bin, p.show(id)...) },
			)
			for i, what := range []string{"create", "close/reopen (1 transition)", "list", "show"} {
				fmt.Printf("  %-40s %8.2f ms\n", what, ms(d[i]))
			}
		}
	}
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

func lastField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[len(f)-1]
	}
	return ""
}
