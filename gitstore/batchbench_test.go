package gitstore

import (
	"fmt"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// BenchmarkBatchSummaries2000 times the cat-file path of a cold listing
// alone (batchSummaries: two processes side by side at this size) on
// 2,000 packed records.
func BenchmarkBatchSummaries2000(b *testing.B) {
	s, dir := open(b)
	const n = 2000
	for i := 0; i < n; i++ {
		if _, err := s.Create(task.CreateSpec{Title: fmt.Sprintf("task %d", i), Actor: machine.Human}); err != nil {
			b.Fatal(err)
		}
	}
	testrepo.Git(b, dir, "gc", "-q")
	refs, err := s.objs.ListRefs(TasksPrefix)
	if err != nil {
		b.Fatal(err)
	}
	var ids []string
	var commits []gitrepo.OID
	for name, c := range refs {
		ids = append(ids, name[len(TasksPrefix):])
		commits = append(commits, c)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		recs, err := Open(s.repo).lister().batchSummaries(ids, commits)
		if err != nil || len(recs) != n {
			b.Fatalf("%d records, %v", len(recs), err)
		}
	}
}
