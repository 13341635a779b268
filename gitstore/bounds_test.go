package gitstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// Scaled-down bounds: the same code paths as the real 64 MiB and 10,000
// entries, at a test's cost.
var testBounds = recordBounds{bytes: 4 << 20, entries: 100}

// plantDir replaces the dir (turns or comments) of task id, as an
// attacker's git plumbing would, with n entries that all name one blob:
// a record of n times its size that costs one blob to store.
func plantDir(t *testing.T, s *Store, id, dir string, n int, body []byte) {
	t.Helper()
	sn, err := s.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	blob, err := s.objs.Write(gitrepo.Blob, body)
	if err != nil {
		t.Fatal(err)
	}
	sub := make([]treeEntry, n)
	for i := range sub {
		sub[i] = treeEntry{Name: seqName(i + 1), Hash: blob}
	}
	subTree, err := gitrepo.WriteTree(s.objs, sub)
	if err != nil {
		t.Fatal(err)
	}
	var entries []treeEntry
	for name, e := range entriesOf(sn) {
		if name != dir {
			entries = append(entries, e)
		}
	}
	entries = append(entries, treeEntry{Name: dir, Hash: subTree, Dir: true})
	tree, err := gitrepo.WriteTree(s.objs, entries)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.objs.Write(gitrepo.Commit, encodeCommit(tree, sn.Commit, "attacker", s.now(), "many entries\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.repo.CompareAndSwap(TaskRef(id), sn.Commit, c); err != nil {
		t.Fatal(err)
	}
}

// bigComment is a valid comment whose text is size bytes.
func bigComment(t *testing.T, size int) []byte {
	t.Helper()
	b, err := json.Marshal(task.Comment{Seq: 1, Actor: machine.Human, Text: strings.Repeat("z", size)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRecordReadIsBounded: 500 comments entries naming one 1 MiB blob
// are a 500 MiB record that costs 1 MiB to push. Every read (Detail,
// Comments, ReadTexts) loads only the newest entries that fit in the
// bounds, sized from headers first, and says what it left out; its heap
// stays near the bound, not near the record.
func TestRecordReadIsBounded(t *testing.T) {
	s, _ := open(t)
	s.bounds = testBounds
	id := mustCreate(t, s, "many comments").Task.ID
	plantDir(t, s, id, dirComments, 500, bigComment(t, 1<<20))
	sn, err := s.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	var d *task.Detail
	if n := allocDuring(func() { d, err = s.Detail(sn, 0) }); n > 64<<20 {
		t.Fatalf("Detail allocated %d MB for a record bounded at 4 MiB", n>>20)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(d.CommentList) == 0 || len(d.CommentList) > 4 {
		t.Fatalf("Detail kept %d comments", len(d.CommentList))
	}
	want := fmt.Sprintf("showing the last %d of 500 comments; the record is over lazy's limits", len(d.CommentList))
	if len(d.Truncated) != 1 || !strings.Contains(d.Truncated[0], want) {
		t.Fatalf("Detail.Truncated = %q, want %q", d.Truncated, want)
	}
	var cs []task.Comment
	if n := allocDuring(func() { cs, err = s.Comments(sn) }); n > 64<<20 || err != nil || len(cs) > 4 {
		t.Fatalf("Comments: %d comments, %d MB allocated, %v", len(cs), n>>20, err)
	}
	if err := s.sizer().CheckBounds(sn); !errors.Is(err, ErrOverBounds) || !strings.Contains(err.Error(), "500 comments") {
		t.Fatalf("CheckBounds: %v", err)
	}
	// A merge must rewrite every entry: it refuses, it never merges short.
	if _, err := s.merger().loadFull(id, sn.Commit); !errors.Is(err, ErrOverBounds) {
		t.Fatalf("loadFull of an over-bounds record: %v", err)
	}
}

// TestRecordEntriesAreBounded: past the entry bound the newest turns are
// kept, in order; the turns and comments share the byte budget, so
// neither starves the other.
func TestRecordEntriesAreBounded(t *testing.T) {
	s, _ := open(t)
	s.bounds = testBounds
	id := mustCreate(t, s, "many turns").Task.ID
	plantDir(t, s, id, dirTurns, 250, []byte(`{"seq":7,"role":"agent","content":"hi"}`))
	sn, err := s.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	turns, err := s.Turns(sn)
	if err != nil || len(turns) != testBounds.entries {
		t.Fatalf("Turns: %d turns, %v", len(turns), err)
	}
	tx, err := s.ReadTexts(sn)
	if err != nil || len(tx.Turns) != 100 || len(tx.Truncated) != 1 || !strings.Contains(tx.Truncated[0], "showing the last 100 of 250 turns") {
		t.Fatalf("ReadTexts: %d turns, %q, %v", len(tx.Turns), tx.Truncated, err)
	}
	if tx.Goal != "goal of many turns" {
		t.Fatalf("goal %q", tx.Goal)
	}

	// Both directories over the budget: each gets half of it.
	both := mustCreate(t, s, "both").Task.ID
	plantDir(t, s, both, dirComments, 50, bigComment(t, 512<<10))
	turn, _ := json.Marshal(task.Turn{Seq: 1, Role: task.RoleAgent, Content: strings.Repeat("t", 512<<10)})
	plantDir(t, s, both, dirTurns, 50, turn)
	if sn, err = s.Load(both); err != nil {
		t.Fatal(err)
	}
	tx, err = s.ReadTexts(sn)
	if err != nil || len(tx.Turns) < 3 || len(tx.Comments) < 3 || len(tx.Truncated) != 2 {
		t.Fatalf("shared budget: %d turns, %d comments, %q, %v", len(tx.Turns), len(tx.Comments), tx.Truncated, err)
	}
}

// TestPullRefusesOverBoundsRecord: a record over the bounds, pushed from
// an attacker's clone, is reported by pull and not taken in; the pull
// reads none of its entries' content.
func TestPullRefusesOverBoundsRecord(t *testing.T) {
	t.Parallel()
	victim, attacker := twoClones(t)
	victim.bounds, attacker.bounds = testBounds, testBounds
	honest := mustCreate(t, attacker, "honest").Task.ID
	bomb := mustCreate(t, attacker, "bomb").Task.ID
	plantDir(t, attacker, bomb, dirComments, 2000, bigComment(t, 1<<20))
	mustPush(t, attacker)

	var rep *SyncReport
	var err error
	if n := allocDuring(func() { rep, err = victim.Sync().Pull(context.Background(), "origin") }); n > 64<<20 {
		t.Fatalf("pull allocated %d MB: it read the bomb's content", n>>20)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Created) != 1 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "over lazy's limits for a whole record") ||
		!strings.Contains(rep.Skipped[0].Reason, "2000 comments") {
		t.Fatalf("pull: created %v, skipped %+v", rep.Created, rep.Skipped)
	}
	if !victim.Exists(honest) || victim.Exists(bomb) {
		t.Fatalf("honest taken in: %v, bomb taken in: %v", victim.Exists(honest), victim.Exists(bomb))
	}
}

// TestHistoryIsBounded: History walks at most the entry bound of commits,
// the newest, and Detail says the history was cut.
func TestHistoryIsBounded(t *testing.T) {
	s, _ := open(t)
	s.bounds = recordBounds{bytes: 4 << 20, entries: 20}
	id := mustCreate(t, s, "long history").Task.ID
	for i := 0; i < 30; i++ {
		comment(t, s, id, fmt.Sprint("note ", i))
	}
	sn, err := s.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Detail(sn, 0)
	if err != nil || len(d.History) != 20 || d.History[19].Op != "comment" {
		t.Fatalf("history of %d operations, %v", len(d.History), err)
	}
	if len(d.Truncated) != 2 || !strings.Contains(d.Truncated[1], "the history shows the last 20 operations only") {
		t.Fatalf("Truncated = %q", d.Truncated)
	}
}

// TestHistoryNamesACommitLazyDidNotWrite: a pushed commit without lazy's
// trailers (or with made-up ones) stays in the history, with the status
// its own task.json records and a known actor field, so no reader (MCP's
// output schema, say) breaks on it.
func TestHistoryNamesACommitLazyDidNotWrite(t *testing.T) {
	s, dir := open(t)
	id := mustCreate(t, s, "plain commit on top").Task.ID
	ref := "refs/lazy/tasks/" + id
	tip := strings.TrimSpace(testrepo.Git(t, dir, "rev-parse", ref))
	tree := strings.TrimSpace(testrepo.Git(t, dir, "rev-parse", tip+"^{tree}"))
	plain := strings.TrimSpace(testrepo.Git(t, dir, "commit-tree", "-p", tip, "-m", "no trailers here", tree))
	forged := strings.TrimSpace(testrepo.Git(t, dir, "commit-tree", "-p", plain, "-m", "x\n\nLazy-To: pwned\nLazy-Actor: root", tree))
	testrepo.Git(t, dir, "update-ref", ref, forged)
	sn, err := s.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.History(sn)
	if err != nil || len(h) != 3 {
		t.Fatalf("history %+v, %v", h, err)
	}
	for _, c := range h {
		if !c.To.Valid() || (c.Actor != "" && !c.Actor.Valid()) {
			t.Errorf("entry %s: to %q, actor %q", c.Subject, c.To, c.Actor)
		}
	}
	plainOps := 0
	for _, c := range h {
		if c.Op == "not-a-lazy-operation" && c.To == machine.Backlog && c.Actor == "" {
			plainOps++
		}
	}
	if plainOps != 2 {
		t.Errorf("%d entries named as not lazy's, want 2: %+v", plainOps, h)
	}
}

// TestPullRefusesAnEndlessHistory: a record whose pulled history is far
// longer than anything a read shows (each operation is a commit) is
// refused by pull before it judges every commit, and nothing is taken in.
func TestPullRefusesAnEndlessHistory(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	victim, attacker := twoClones(t)
	small := recordBounds{bytes: 4 << 20, entries: 3}
	victim.bounds = small
	long := mustCreate(t, attacker, "long history").Task.ID
	for i := 0; i <= pulledHistoryFactor*small.entries; i++ {
		if _, _, err := attacker.Update(context.Background(), long, func(x *task.Snapshot) (*task.Op, error) {
			x.SetGoal(fmt.Sprint("goal ", i))
			return &task.Op{Name: "edit", Actor: machine.Human}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	mustPush(t, attacker)
	rep, err := victim.Sync().Pull(context.Background(), "origin")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "new commits of history") || victim.Exists(long) {
		t.Fatalf("pull: created %v, skipped %+v", rep.Created, rep.Skipped)
	}
}
