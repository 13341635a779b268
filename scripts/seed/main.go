// Command seed fills a repository with N tasks through gitstore, for the
// benchmarks in scripts/bench.sh (creating 10,000 tasks through 10,000
// CLI processes would dominate the benchmark run).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

func main() {
	dir := flag.String("C", ".", "repository")
	n := flag.Int("n", 1000, "tasks to create")
	spent := flag.Bool("spent", false, "give every task the usage of an agent turn, as a lived-in repository has")
	flag.Parse()
	repo, err := gitrepo.Discover(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := gitstore.Open(repo, gitstore.WithHost("seed"))
	for i := 0; i < *n; i++ {
		sn, err := s.Create(task.CreateSpec{Title: fmt.Sprintf("seeded task %d", i), Goal: "seeded", Actor: machine.Human})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if !*spent {
			continue
		}
		if _, _, err := s.Update(context.Background(), sn.Task.ID, func(t *task.Snapshot) (*task.Op, error) {
			t.Task.Usage = &task.Usage{CostUSD: float64(i%500) / 100, InputTokens: int64(1000 + i), CachedInputTokens: int64(i % 7 * 1000), OutputTokens: int64(100 + i%50)}
			return &task.Op{Name: "seed", Actor: machine.System}, nil
		}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
