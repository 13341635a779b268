package render

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// TestOrderEntriesMatchesTreeOrder holds the JSON listing's order, taken
// from list entries, to the table's, taken from decoded summaries: the
// same random forests (cycles, self-parents, missing parents, repeated
// ids, equal update times) in the same order under every key but title,
// with and without a limit.
func TestOrderEntriesMatchesTreeOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	statuses := machine.Statuses()
	for round := range 500 {
		n := r.IntN(40)
		rows := make([]task.Entry, n)
		sums := make([]*task.Summary, n)
		for i := range rows {
			e := task.Entry{
				ID:      fmt.Sprint(r.IntN(n + 3)),
				Status:  statuses[r.IntN(len(statuses))],
				Updated: fmt.Sprintf("2026-12-0%dT00:00:00Z", 1+r.IntN(4)),
			}
			if r.IntN(3) > 0 {
				e.Parent = fmt.Sprint(r.IntN(n + 3))
			}
			rows[i] = e
			sums[i] = &task.Summary{ID: e.ID, Status: e.Status, UpdatedAt: e.Updated, Parent: e.Parent}
		}
		for _, key := range []string{"attention", "updated", "created"} {
			limit := 0
			if round%3 == 0 {
				limit = r.IntN(n + 1)
			}
			want := TreeOrder(sums, TaskLess(key))
			if limit > 0 && len(want) > limit {
				want = want[:limit]
			}
			got := OrderEntries(rows, key, limit)
			if len(got) != len(want) {
				t.Fatalf("round %d %s: %d entries, want %d", round, key, len(got), len(want))
			}
			for i := range got {
				w := want[i].Item
				if g := got[i]; g.ID != w.ID || g.Status != w.Status || g.Updated != w.UpdatedAt || g.Parent != w.Parent {
					t.Fatalf("round %d %s: entry %d is %s (%s %s), want %s (%s %s)", round, key, i, g.ID, g.Status, g.Updated, w.ID, w.Status, w.UpdatedAt)
				}
			}
		}
	}
}
