// Command seed fills a repository with N tasks through gitstore, for the
// benchmarks in scripts/bench.sh (creating 10,000 tasks through 10,000
// CLI processes would dominate the benchmark run).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
)

func main() {
	dir := flag.String("C", ".", "repository")
	n := flag.Int("n", 1000, "tasks to create")
	flag.Parse()
	repo, err := gitstore.Discover(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := gitstore.Open(repo, gitstore.WithHost("seed"))
	for i := 0; i < *n; i++ {
		if _, err := s.Create(gitstore.CreateSpec{Title: fmt.Sprintf("seeded task %d", i), Goal: "seeded", Actor: machine.Human}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
