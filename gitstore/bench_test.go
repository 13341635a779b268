package gitstore

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

func BenchmarkCreate(b *testing.B) {
	s, _ := open(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Create(task.CreateSpec{Title: fmt.Sprintf("task %d", i), Actor: machine.Human}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransition flips one task between blocked and pairing, a pair
// of edges that can repeat forever.
func BenchmarkTransition(b *testing.B) {
	s, _ := open(b)
	id := parkedTask(b, s)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := s.Update(context.Background(), id, toggle); err != nil {
			b.Fatal(err)
		}
	}
}

func toggle(sn *task.Snapshot) (*task.Op, error) {
	if sn.Task.Status == machine.Blocked {
		sn.Task.Status = machine.Pairing
	} else {
		sn.Task.Status = machine.Blocked
	}
	return &task.Op{Name: "toggle", Actor: machine.Human}, nil
}

// parkedTask creates a task and walks it to blocked.
func parkedTask(tb testing.TB, s *Store) string {
	tb.Helper()
	sn, err := s.Create(task.CreateSpec{Title: "contended", Actor: machine.Human})
	if err != nil {
		tb.Fatal(err)
	}
	for _, st := range []machine.Status{machine.Working, machine.Blocked} {
		if _, _, err := s.Update(context.Background(), sn.Task.ID, func(sn *task.Snapshot) (*task.Op, error) {
			sn.Task.Status = st
			return &task.Op{Name: "walk", Actor: machine.System}, nil
		}); err != nil {
			tb.Fatal(err)
		}
	}
	return sn.Task.ID
}

func benchList(b *testing.B, n int, dropCache bool) {
	s, dir := open(b)
	for i := 0; i < n; i++ {
		if _, err := s.Create(task.CreateSpec{Title: fmt.Sprintf("task %d", i), Actor: machine.Human}); err != nil {
			b.Fatal(err)
		}
	}
	testrepo.Git(b, dir, "gc", "-q")
	if _, err := s.List(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if dropCache {
			_ = os.Remove(s.repo.LazyDir("cache", cacheFile))
		}
		fresh := Open(s.repo) // a new process sees no in-memory state
		l, err := fresh.List()
		if err != nil || len(l) != n {
			b.Fatalf("list: %d entries, %v", len(l), err)
		}
	}
}

func BenchmarkList1000(b *testing.B)         { benchList(b, 1000, false) }
func BenchmarkList10000(b *testing.B)        { benchList(b, 10000, false) }
func BenchmarkList10000NoCache(b *testing.B) { benchList(b, 10000, true) }

// BenchmarkContention8x100 runs 8 processes doing 100 transitions each on
// one task. It fails on any lost update (see contend) and reports the
// compare-and-swap races lost along the way.
func BenchmarkContention8x100(b *testing.B) {
	s, dir := open(b)
	id := parkedTask(b, s)
	b.ResetTimer()
	total := 0
	for i := 0; i < b.N; i++ {
		total += contend(b, s, dir, id, 8, 100)
	}
	b.ReportMetric(float64(total)/float64(b.N), "cas-retries/run")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*800), "µs/transition")
}

// benchCreate creates tasks, each through a new Store (a new process),
// beside n packed tasks.
func benchCreate(b *testing.B, n int) {
	dir := testrepo.New(b)
	if n > 0 {
		testrepo.PackRefs(b, dir, n)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		repo, err := Discover(dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Open(repo).Create(task.CreateSpec{Title: fmt.Sprintf("bench task %d", i), Actor: "human"}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCreateFreshEmpty(b *testing.B)     { benchCreate(b, 0) }
func BenchmarkCreateFresh10kPacked(b *testing.B) { benchCreate(b, 10000) }
