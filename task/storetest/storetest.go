// Package storetest is the one conformance suite every task.Store
// passes: memstore's, and gitstore's in a SHA-1 and a SHA-256
// repository. It holds the port's behaviour (create, resolve, load,
// update, list, history, turns, comments, watch, and their errors),
// concurrency (many goroutines updating one task lose no update), the
// compare-and-swap (an operation that lost a race is applied again to
// the newer snapshot; a stale snapshot never overwrites) and what a
// failed write leaves (nothing: an operation that fails or panics
// changes no record, and another handle on the store sees what was
// written). What only one implementation has (git's records as plain
// git, a process killed mid-write) stays in its own tests.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// Harness is how the suite reaches the implementation under test.
type Harness struct {
	// Open returns a new, empty store that records host on the
	// operations it writes and reads the time from now.
	Open func(t *testing.T, host string, now func() time.Time) task.Store
	// Reopen returns another handle on the records of s, as another
	// process opening the same store gets: for a store that keeps
	// nothing outside the process, s itself.
	Reopen func(t *testing.T, s task.Store) task.Store
	// Corrupt makes the record of task id unreadable, as a hand edit or
	// a hostile remote could (nil: the suite skips what needs it).
	Corrupt func(t *testing.T, s task.Store, id string)
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"create and load", testCreateLoad},
		{"create with an id", testCreateWithID},
		{"slugs are unique", testSlugsAreUnique},
		{"slug never shadows an id prefix", testSlugNeverShadowsIDPrefix},
		{"resolve", testResolve},
		{"resolve says did you mean", testResolveSaysDidYouMean},
		{"ambiguous prefix lists candidates", testAmbiguousPrefix},
		{"load errors", testLoadErrors},
		{"update transitions through the machine", testUpdateTransitions},
		{"a failed update changes nothing", testFailedUpdateChangesNothing},
		{"turns and comments", testTurnsAndComments},
		{"history", testHistory},
		{"list", testList},
		{"list follows updates", testListFollowsUpdates},
		{"corrupt record hides no other", testCorruptRecord},
		{"watch", testWatch},
		{"clock and host", testClockAndHost},
		{"a reopened store sees every write", testReopen},
		{"conflict applies the operation again", testConflictReapplies},
		{"concurrent updates lose nothing", testConcurrentUpdates},
		{"concurrent creates take distinct slugs", testConcurrentCreates},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Each case opens stores of its own, so they run side by
			// side, except the concurrent ones: they contend for one
			// record on purpose and run alone (before the others, which
			// wait for Run to return), so that other cases' load is no
			// part of what they measure.
			if !strings.HasPrefix(tc.name, "concurrent ") {
				t.Parallel()
			}
			tc.fn(t, h)
		})
	}
}

// Clock is a time source a test moves by hand.
type Clock struct {
	mu sync.Mutex
	at time.Time
}

// NewClock is a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{at: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.at = t
	c.mu.Unlock()
}

func open(t *testing.T, h Harness) task.Store {
	t.Helper()
	return h.Open(t, "test-host", time.Now)
}

func create(t *testing.T, s task.Store, title string) *task.Snapshot {
	t.Helper()
	sn, err := s.Create(task.CreateSpec{Title: title, Goal: "goal of " + title, Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

func load(t *testing.T, s task.Store, id string) *task.Snapshot {
	t.Helper()
	sn, err := s.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

func update(t *testing.T, s task.Store, id string, fn task.UpdateFunc) *task.Snapshot {
	t.Helper()
	sn, _, err := s.Update(context.Background(), id, fn)
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

func comment(text string) task.UpdateFunc {
	return func(sn *task.Snapshot) (*task.Op, error) {
		sn.AddComment(task.Comment{Actor: machine.Human, Text: text})
		return &task.Op{Name: "comment", Actor: machine.Human}, nil
	}
}

// toggle flips a parked task between blocked and pairing, a pair of
// edges that can repeat forever.
func toggle(sn *task.Snapshot) (*task.Op, error) {
	if sn.Task.Status == machine.Blocked {
		sn.Task.Status = machine.Pairing
	} else {
		sn.Task.Status = machine.Blocked
	}
	return &task.Op{Name: "toggle", Actor: machine.Human}, nil
}

// parked creates a task and walks it to blocked.
func parked(t *testing.T, s task.Store, title string) string {
	t.Helper()
	id := create(t, s, title).Task.ID
	for _, st := range []machine.Status{machine.Working, machine.Blocked} {
		update(t, s, id, func(sn *task.Snapshot) (*task.Op, error) {
			sn.Task.Status = st
			return &task.Op{Name: "walk", Actor: machine.System}, nil
		})
	}
	return id
}

// same fails the test when got is not the version of want, field for
// field as far as a listing and the long parts tell.
func same(t *testing.T, what string, s task.Store, got, want *task.Snapshot) {
	t.Helper()
	if got.Commit != want.Commit || got.Task.Clock != want.Task.Clock || got.Task.Status != want.Task.Status || got.Task.Comments != want.Task.Comments || got.Task.Turns != want.Task.Turns {
		t.Fatalf("%s: the record is at %s clock %d %s (%d comments, %d turns), want %s clock %d %s (%d comments, %d turns)", what,
			got.Commit, got.Task.Clock, got.Task.Status, got.Task.Comments, got.Task.Turns,
			want.Commit, want.Task.Clock, want.Task.Status, want.Task.Comments, want.Task.Turns)
	}
	gc, err := s.Comments(got)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := s.Comments(want)
	if err != nil {
		t.Fatal(err)
	}
	if len(gc) != len(wc) {
		t.Fatalf("%s: %d comments, want %d", what, len(gc), len(wc))
	}
}

func testCreateLoad(t *testing.T, h Harness) {
	s := open(t, h)
	sn := create(t, s, "Fix the flaky login test")
	if sn.Task.Slug != "fix-the-flaky-login-test" || sn.Task.Status != machine.Backlog || !task.ValidID(sn.Task.ID) {
		t.Fatalf("created %+v", sn.Task)
	}
	if sn.Commit.IsZero() || sn.Task.Clock != 1 || sn.Task.Version != task.SchemaVersion || sn.Task.CreatedBy != machine.Human {
		t.Fatalf("created at %s: %+v", sn.Commit, sn.Task)
	}
	got := load(t, s, sn.Task.ID)
	if got.Task.Title != "Fix the flaky login test" || got.Commit != sn.Commit || got.Task.Clock != 1 {
		t.Fatalf("loaded %+v at %s", got.Task, got.Commit)
	}
	goal, err := got.Goal()
	if err != nil || goal != "goal of Fix the flaky login test" {
		t.Fatalf("goal %q %v", goal, err)
	}
	if got.Session != nil || got.Violations.Pending == nil || len(got.Violations.Pending) != 0 {
		t.Fatalf("a new task has session %+v, violations %+v", got.Session, got.Violations)
	}
	// Every field of the spec is kept.
	budget := 2.5
	full := task.CreateSpec{
		Title: "full", Goal: "the goal", Slug: "my-slug", Parent: sn.Task.ID, TargetBranch: "main",
		AllowedPaths: []string{"docs/**"}, Metadata: map[string]string{"k": "v"}, After: []string{sn.Task.ID},
		BudgetUSD: &budget, Actor: machine.Agent,
	}
	f, err := s.Create(full)
	if err != nil {
		t.Fatal(err)
	}
	ft := load(t, s, f.Task.ID).Task
	if ft.Slug != "my-slug" || ft.Parent != sn.Task.ID || ft.TargetBranch != "main" || !slices.Equal(ft.AllowedPaths, full.AllowedPaths) ||
		ft.Metadata["k"] != "v" || !slices.Equal(ft.After, full.After) || ft.BudgetUSD == nil || *ft.BudgetUSD != budget || ft.CreatedBy != machine.Agent {
		t.Fatalf("created from %+v: %+v", full, ft)
	}
	// A task without a goal has an empty one.
	bare, err := s.Create(task.CreateSpec{Title: "no goal", Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	if g, err := load(t, s, bare.Task.ID).Goal(); err != nil || g != "" {
		t.Fatalf("goal of a task created without one: %q %v", g, err)
	}
	// A create without a valid actor records nothing.
	if _, err := s.Create(task.CreateSpec{Title: "nobody", Actor: "nobody"}); err == nil || !strings.Contains(err.Error(), "no valid actor") {
		t.Fatalf("create by an invalid actor: %v", err)
	}
	if _, err := s.Resolve("nobody"); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("a refused create left a task: %v", err)
	}
}

func testCreateWithID(t *testing.T, h Harness) {
	s := open(t, h)
	const id = "00c0ffee00c0ffee"
	sn, err := s.Create(task.CreateSpec{ID: id, Title: "fixed id", Actor: machine.Human})
	if err != nil || sn.Task.ID != id {
		t.Fatalf("create with id %s: %+v %v", id, sn, err)
	}
	if _, err := s.Create(task.CreateSpec{ID: id, Title: "again", Actor: machine.Human}); !errors.Is(err, task.ErrExists) {
		t.Fatalf("a second create with id %s: %v, want ErrExists", id, err)
	}
	if _, err := s.Resolve("again"); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("the refused create took a slug: %v", err)
	}
	for _, bad := range []string{"XYZ", "00C0FFEE00C0FFEE", "00c0ffee", "../../etc/passwd"} {
		if _, err := s.Create(task.CreateSpec{ID: bad, Title: "bad", Actor: machine.Human}); err == nil || !strings.Contains(err.Error(), "not an id lazy mints") {
			t.Errorf("create with id %q: %v", bad, err)
		}
	}
	if got := load(t, s, id); got.Task.Title != "fixed id" {
		t.Fatalf("the first create's record became %+v", got.Task)
	}
}

func testSlugsAreUnique(t *testing.T, h Harness) {
	s := open(t, h)
	a := create(t, s, "same title")
	b := create(t, s, "same title")
	c := create(t, s, "Same  Title!")
	if a.Task.Slug != "same-title" || b.Task.Slug != "same-title-2" || c.Task.Slug != "same-title-3" {
		t.Fatalf("slugs %s %s %s", a.Task.Slug, b.Task.Slug, c.Task.Slug)
	}
	if _, err := s.Create(task.CreateSpec{Title: "x", Slug: "same-title", Actor: machine.Human}); err == nil || !strings.Contains(err.Error(), "already taken") {
		t.Fatalf("explicit duplicate slug: %v", err)
	}
	if _, err := s.Create(task.CreateSpec{Title: "x", Slug: "../../etc", Actor: machine.Human}); err == nil || !strings.Contains(err.Error(), "invalid slug") {
		t.Fatalf("hostile slug: %v", err)
	}
	for _, sn := range []*task.Snapshot{a, b, c} {
		if id, err := s.Resolve(sn.Task.Slug); err != nil || id != sn.Task.ID {
			t.Fatalf("slug %s names %q (%v), want %s", sn.Task.Slug, id, err, sn.Task.ID)
		}
	}
}

// testSlugNeverShadowsIDPrefix: a title that is another task's id prefix
// gets a slug that is not, and the prefix keeps naming that task.
func testSlugNeverShadowsIDPrefix(t *testing.T, h Harness) {
	s := open(t, h)
	var victims []*task.Snapshot
	for len(victims) < 8 {
		victims = append(victims, create(t, s, "victim"))
	}
	for _, v := range victims {
		prefix := v.Task.ID[:8]
		sn := create(t, s, prefix)
		if sn.Task.Slug == prefix || task.ShadowsID(sn.Task.Slug) {
			t.Fatalf("title %q got slug %q", prefix, sn.Task.Slug)
		}
		if id, err := s.Resolve(prefix); err != nil || id != v.Task.ID {
			t.Fatalf("%s now names %q (%v), want the victim %s", prefix, id, err, v.Task.ID)
		}
		if id, err := s.Resolve(sn.Task.Slug); err != nil || id != sn.Task.ID {
			t.Fatalf("slug %s: %q %v", sn.Task.Slug, id, err)
		}
		if _, err := s.Create(task.CreateSpec{Title: "x", Slug: prefix, Actor: machine.Human}); err == nil || (!strings.Contains(err.Error(), "id prefix") && !strings.Contains(err.Error(), "starting with a letter")) {
			t.Fatalf("--slug %s: %v", prefix, err)
		}
	}
}

func testResolve(t *testing.T, h Harness) {
	s := open(t, h)
	a := create(t, s, "alpha")
	if id, err := s.Resolve("alpha"); err != nil || id != a.Task.ID {
		t.Fatalf("by slug: %s %v", id, err)
	}
	if id, err := s.Resolve(a.Task.ID[:6]); err != nil || id != a.Task.ID {
		t.Fatalf("by prefix: %s %v", id, err)
	}
	if id, err := s.Resolve(a.Task.ID); err != nil || id != a.Task.ID {
		t.Fatalf("by id: %s %v", id, err)
	}
	if id, err := s.Resolve(strings.ToUpper(a.Task.ID)); err != nil || id != a.Task.ID {
		t.Fatalf("by upper-case id: %s %v", id, err)
	}
	if id, err := s.Resolve("  alpha\n"); err != nil || id != a.Task.ID {
		t.Fatalf("with spaces around: %s %v", id, err)
	}
	for _, bad := range []string{"", "nope", "../x", "-rf", "a\x00b", "ab", strings.Repeat("a", 1<<20), "ffffffffffffffff"} {
		_, err := s.Resolve(bad)
		if !errors.Is(err, task.ErrNotFound) {
			t.Errorf("Resolve(%.20q) = %v, want not found", bad, err)
		}
	}
}

// testResolveSaysDidYouMean: a name that names no task is one sentence
// that names the nearest slugs (a typo, a prefix, a part, another
// spelling), or says where to look when none is near, and is still
// ErrNotFound.
func testResolveSaysDidYouMean(t *testing.T, h Harness) {
	s := open(t, h)
	for _, title := range []string{"fix login", "fix logout", "release notes", "cover the docs"} {
		if _, err := s.Create(task.CreateSpec{Title: title, Actor: machine.Human}); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{
		"fix-logn":      `no task named "fix-logn"; did you mean fix-login?`,
		"relase-notes":  `no task named "relase-notes"; did you mean release-notes?`,
		"fix-log":       `no task named "fix-log"; did you mean fix-login or fix-logout?`,
		"notes":         `no task named "notes"; did you mean release-notes?`,
		"Release_Notes": `no task named "Release_Notes" (slugs are lowercase letters, digits and dashes; ids are hex); did you mean release-notes?`,
		"zzzzzzzz":      `no task named "zzzzzzzz"; lazy list shows the tasks`,
		"abc":           `no task named "abc" (an id prefix needs at least 4 characters); lazy list shows the tasks`,
		"cafe":          `no task named "cafe"; lazy list shows the tasks`,
		"":              `no task named: give a task's slug or id (lazy list shows them)`,
	} {
		_, err := s.Resolve(name)
		if err == nil || err.Error() != want || !errors.Is(err, task.ErrNotFound) {
			t.Errorf("Resolve(%q) = %v; want %q (and ErrNotFound)", name, err, want)
		}
	}
	for i := 0; i < 7; i++ {
		if _, err := s.Create(task.CreateSpec{Title: "cover the docs", Actor: machine.Human}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Resolve("cover-the-doc")
	if err == nil || !strings.Contains(err.Error(), "did you mean cover-the-docs, cover-the-docs-2, cover-the-docs-3, cover-the-docs-4 or cover-the-docs-5? (and 3 more: lazy list -q cover-the-doc)") {
		t.Fatalf("many near slugs: %v", err)
	}
}

func testAmbiguousPrefix(t *testing.T, h Harness) {
	s := open(t, h)
	ids := []string{"abcd000000000001", "abcd000000000002", "abce000000000003"}
	for i, id := range ids {
		if _, err := s.Create(task.CreateSpec{ID: id, Title: fmt.Sprintf("t%d", i), Actor: machine.Human}); err != nil {
			t.Fatal(err)
		}
	}
	// A prefix below the minimum is not found, with a hint.
	if _, err := s.Resolve("ab"); err == nil || !strings.Contains(err.Error(), "at least 4") {
		t.Fatalf("short prefix: %v", err)
	}
	_, err := s.Resolve("abcd")
	var amb *task.AmbiguousError
	if !errors.As(err, &amb) || len(amb.Candidates) != 2 || !strings.Contains(err.Error(), ids[0]) || !strings.Contains(err.Error(), ids[1]) {
		t.Fatalf("ambiguous: %v", err)
	}
	if c := amb.Candidates[0]; c.ID != ids[0] || c.Slug != "t0" || c.Title != "t0" {
		t.Fatalf("first candidate %+v", c)
	}
	if _, err := s.Resolve("abcd0000000000"); !errors.As(err, &amb) || len(amb.Candidates) != 2 {
		t.Fatalf("a longer shared prefix: %v", err)
	}
	if id, err := s.Resolve("ABCE"); err != nil || id != ids[2] {
		t.Fatalf("a unique prefix: %q %v", id, err)
	}
}

func testLoadErrors(t *testing.T, h Harness) {
	s := open(t, h)
	create(t, s, "there")
	for _, id := range []string{"", "nope", "ffffffffffffffff", "../../../etc", "FFFFFFFFFFFFFFFF"} {
		if _, err := s.Load(id); !errors.Is(err, task.ErrNotFound) {
			t.Errorf("Load(%q) = %v, want ErrNotFound", id, err)
		}
	}
	if _, _, err := s.Update(context.Background(), "ffffffffffffffff", toggle); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("Update of no task: %v, want ErrNotFound", err)
	}
}

func testUpdateTransitions(t *testing.T, h Harness) {
	s := open(t, h)
	sn := create(t, s, "task")
	id := sn.Task.ID
	_, _, err := s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Status = machine.Merging
		return &task.Op{Name: "bogus", Actor: machine.Human}, nil
	})
	if !errors.Is(err, machine.ErrTransition) {
		t.Fatalf("backlog -> merging: %v", err)
	}
	same(t, "after a refused transition", s, load(t, s, id), sn)
	got := update(t, s, id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Status = machine.Abandoned
		sn.Task.Outcome = task.OutcomeClosed
		sn.AddComment(task.Comment{Actor: machine.Human, Text: "dup"})
		return &task.Op{Name: "close", Actor: machine.Human, Reason: "a duplicate"}, nil
	})
	if got.Task.Status != machine.Abandoned || got.Task.Clock != 2 || got.Task.Comments != 1 || got.Commit == sn.Commit {
		t.Fatalf("after close: %+v at %s", got.Task, got.Commit)
	}
	same(t, "loaded after close", s, load(t, s, id), got)
	hist, err := s.History(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[1].From != machine.Backlog || hist[1].To != machine.Abandoned || hist[1].Op != "close" || hist[1].Actor != machine.Human {
		t.Fatalf("history %+v", hist)
	}
	cs, err := s.Comments(got)
	if err != nil || len(cs) != 1 || cs[0].Text != "dup" || cs[0].Seq != 1 {
		t.Fatalf("comments %+v %v", cs, err)
	}
	// A status the actor may not set is refused whoever asks.
	_, _, err = s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Status = machine.Working
		return &task.Op{Name: "revive", Actor: machine.Agent}, nil
	})
	if !errors.Is(err, machine.ErrTransition) {
		t.Fatalf("abandoned -> working by an agent: %v", err)
	}
	// A nil Op changes nothing and returns the newest snapshot.
	calls := 0
	same(t, "after a nil op", s, update(t, s, id, func(sn *task.Snapshot) (*task.Op, error) {
		calls++
		sn.Task.Title = "changed but not committed"
		return nil, nil
	}), got)
	if calls != 1 || load(t, s, id).Task.Title != "task" {
		t.Fatalf("a nil op ran %d times and left the title %q", calls, load(t, s, id).Task.Title)
	}
}

// testFailedUpdateChangesNothing: an operation that fails, panics, is
// refused by the store or is cancelled leaves the record as it was, and
// the next operation goes through.
func testFailedUpdateChangesNothing(t *testing.T, h Harness) {
	s := open(t, h)
	id := parked(t, s, "steady")
	update(t, s, id, comment("first"))
	before := load(t, s, id)
	boom := errors.New("boom")
	if _, _, err := s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Status = machine.Pairing
		sn.AddComment(task.Comment{Actor: machine.Human, Text: "lost"})
		sn.SetGoal("lost")
		return nil, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("a failing operation: %v", err)
	}
	same(t, "after a failing operation", s, load(t, s, id), before)
	func() {
		defer func() {
			if r := recover(); r != "operation panicked" {
				t.Fatalf("the panic was %v", r)
			}
		}()
		_, _, _ = s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
			sn.Task.Status = machine.Pairing
			sn.AddTurn(task.Turn{Role: "user", Content: "lost"})
			panic("operation panicked")
		})
	}()
	same(t, "after a panicking operation", s, load(t, s, id), before)
	if _, _, err := s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.AddComment(task.Comment{Actor: machine.Human, Text: "lost"})
		return &task.Op{Name: "anon", Actor: "nobody"}, nil
	}); err == nil || !strings.Contains(err.Error(), "no valid actor") {
		t.Fatalf("an operation without an actor: %v", err)
	}
	same(t, "after an operation without an actor", s, load(t, s, id), before)
	huge := strings.Repeat("x", int(task.MaxTextRecord)+1)
	for what, fn := range map[string]task.UpdateFunc{
		"goal": func(sn *task.Snapshot) (*task.Op, error) {
			sn.SetGoal(huge)
			return &task.Op{Name: "edit", Actor: machine.Human}, nil
		},
		// A turn goes the way of a comment in both stores; one 33 MiB
		// encoding costs seconds under the race detector.
		"comment": comment(huge),
	} {
		if _, _, err := s.Update(context.Background(), id, fn); err == nil || !strings.Contains(err.Error(), "nothing was saved") {
			t.Fatalf("an oversize %s: %v", what, err)
		}
		same(t, "after an oversize "+what, s, load(t, s, id), before)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	if _, _, err := s.Update(ctx, id, func(sn *task.Snapshot) (*task.Op, error) {
		ran = true
		return toggle(sn)
	}); !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("a cancelled update: %v (ran: %v)", err, ran)
	}
	same(t, "after a cancelled update", s, load(t, s, id), before)
	if g, err := load(t, s, id).Goal(); err != nil || g != "goal of steady" {
		t.Fatalf("goal %q %v", g, err)
	}
	after := update(t, s, id, toggle)
	if after.Task.Clock != before.Task.Clock+1 || after.Task.Status != machine.Pairing {
		t.Fatalf("the next update: %+v", after.Task)
	}
}

func testTurnsAndComments(t *testing.T, h Harness) {
	s := open(t, h)
	id := create(t, s, "talk").Task.ID
	var added []task.Turn
	sn := update(t, s, id, func(sn *task.Snapshot) (*task.Op, error) {
		added = append(added[:0], sn.AddTurn(task.Turn{Role: "user", Kind: "start", Content: "one"}), sn.AddTurn(task.Turn{Role: "assistant", Content: "two"}))
		sn.AddComment(task.Comment{Actor: machine.Human, Text: "c1"})
		sn.SetGoal("a new goal")
		return &task.Op{Name: "talk", Actor: machine.Human}, nil
	})
	if added[0].Seq != 1 || added[1].Seq != 2 || sn.Task.Turns != 2 || sn.Task.Comments != 1 {
		t.Fatalf("added %+v, task %+v", added, sn.Task)
	}
	update(t, s, id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.AddTurn(task.Turn{Role: "user", Content: "three"})
		sn.AddComment(task.Comment{Actor: machine.Agent, Text: "c2"})
		return &task.Op{Name: "talk", Actor: machine.Human}, nil
	})
	// Editing a stored turn rewrites it in place; its number stays.
	sn = update(t, s, id, func(sn *task.Snapshot) (*task.Op, error) {
		err := sn.EditTurns(func(tr *task.Turn) bool {
			if tr.Seq != 2 {
				return false
			}
			tr.FeedbackDelivery = "delivered"
			return true
		})
		return &task.Op{Name: "deliver", Actor: machine.System}, err
	})
	for _, got := range []*task.Snapshot{sn, load(t, s, id)} {
		turns, err := s.Turns(got)
		if err != nil {
			t.Fatal(err)
		}
		var contents []string
		for i, tr := range turns {
			contents = append(contents, tr.Content)
			if tr.Seq != i+1 {
				t.Fatalf("turn %d has seq %d", i, tr.Seq)
			}
		}
		if strings.Join(contents, ",") != "one,two,three" || turns[1].FeedbackDelivery != "delivered" || turns[0].FeedbackDelivery != "" || turns[0].Kind != "start" {
			t.Fatalf("turns %+v", turns)
		}
		cs, err := s.Comments(got)
		if err != nil || len(cs) != 2 || cs[0].Text != "c1" || cs[1].Text != "c2" || cs[1].Actor != machine.Agent || cs[1].Seq != 2 {
			t.Fatalf("comments %+v %v", cs, err)
		}
		if g, err := got.Goal(); err != nil || g != "a new goal" {
			t.Fatalf("goal %q %v", g, err)
		}
	}
	// An older snapshot still reads its own version.
	first, err := s.Create(task.CreateSpec{Title: "versions", Goal: "v1", Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, first.Task.ID, func(sn *task.Snapshot) (*task.Op, error) {
		sn.SetGoal("v2")
		sn.AddTurn(task.Turn{Role: "user", Content: "later"})
		return &task.Op{Name: "edit", Actor: machine.Human}, nil
	})
	if g, err := first.Goal(); err != nil || g != "v1" {
		t.Fatalf("the first version's goal: %q %v", g, err)
	}
	if turns, err := s.Turns(first); err != nil || len(turns) != 0 {
		t.Fatalf("the first version's turns: %+v %v", turns, err)
	}
}

func testHistory(t *testing.T, h Harness) {
	clock := NewClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	s := h.Open(t, "host-a", clock.Now)
	id := create(t, s, "hist").Task.ID
	clock.Set(clock.Now().Add(time.Minute))
	update(t, s, id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Status = machine.Working
		return &task.Op{Name: "start", Actor: machine.Human}, nil
	})
	clock.Set(clock.Now().Add(time.Minute))
	update(t, s, id, comment("note"))
	sn := load(t, s, id)
	hist, err := s.History(sn)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		op       string
		from, to machine.Status
		clock    uint64
		subject  string
	}
	want := []row{
		{"create", "", machine.Backlog, 1, "create hist: backlog"},
		{"start", machine.Backlog, machine.Working, 2, "start hist: backlog -> working"},
		{"comment", machine.Working, machine.Working, 3, "comment hist: working"},
	}
	if len(hist) != len(want) {
		t.Fatalf("history %+v", hist)
	}
	start := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i, w := range want {
		c := hist[i]
		if c.Op != w.op || c.From != w.from || c.To != w.to || c.Clock != w.clock || c.Subject != w.subject || c.Host != "host-a" || c.Actor != machine.Human {
			t.Errorf("change %d: %+v, want %+v", i, c, w)
		}
		if !c.At.Equal(start.Add(time.Duration(i) * time.Minute)) {
			t.Errorf("change %d at %v", i, c.At)
		}
		if c.Commit.String() == "" || (i > 0 && c.Commit == hist[i-1].Commit) {
			t.Errorf("change %d has commit %q", i, c.Commit)
		}
	}
	if hist[2].Commit != task.Hex(sn.Commit) {
		t.Errorf("the newest change is %s, the snapshot %s", hist[2].Commit, sn.Commit)
	}
	// A snapshot of no stored version has no history.
	if none, err := s.History(&task.Snapshot{}); err != nil || len(none) != 0 {
		t.Errorf("a snapshot of no version has history %+v %v", none, err)
	}
}

func testList(t *testing.T, h Harness) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := NewClock(base)
	s := h.Open(t, "test-host", clock.Now)
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Fatalf("an empty store lists %+v %v", l, err)
	}
	// Created out of id order and at shuffled times: the listing is by
	// creation time, then id.
	specs := []struct {
		id  string
		sec int
	}{{"ffff000000000001", 30}, {"0000000000000002", 10}, {"aaaa000000000003", 10}, {"1111000000000004", 20}}
	for i, sp := range specs {
		clock.Set(base.Add(time.Duration(sp.sec)*time.Second + 300*time.Millisecond))
		if _, err := s.Create(task.CreateSpec{ID: sp.id, Title: fmt.Sprintf("task %d", i), Parent: "", Actor: machine.Human}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Set(base.Add(40 * time.Second))
	child, err := s.Create(task.CreateSpec{Title: "child", Parent: specs[0].id, Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range l {
		order = append(order, e.ID)
	}
	want := []string{"0000000000000002", "aaaa000000000003", "1111000000000004", "ffff000000000001", child.Task.ID}
	if !slices.Equal(order, want) {
		t.Fatalf("listed %v, want %v", order, want)
	}
	for _, e := range l {
		sn := load(t, s, e.ID)
		sum, err := e.Summary()
		if err != nil || e.Err != nil {
			t.Fatalf("entry %s: %v %v", e.ID, err, e.Err)
		}
		if e.Commit != sn.Commit || e.Status != machine.Backlog || sum.ID != e.ID || sum.Slug != sn.Task.Slug || sum.Title != sn.Task.Title || sum.Status != e.Status ||
			e.Created != sn.Task.CreatedAt.Unix() || e.Updated != sn.Task.UpdatedAt.UTC().Format(task.TimeLayout) || e.Parent != sn.Task.Parent || sum.Parent != e.Parent {
			t.Fatalf("entry %+v (summary %+v) of %+v", e, sum, sn.Task)
		}
		if !sn.Task.CreatedAt.Equal(sn.Task.CreatedAt.Truncate(time.Second)) {
			t.Fatalf("created at %v: records keep whole seconds", sn.Task.CreatedAt)
		}
	}
	if l[4].Parent != specs[0].id || l[4].TreeParent() != specs[0].id {
		t.Fatalf("the child's entry %+v", l[4])
	}
}

func testListFollowsUpdates(t *testing.T, h Harness) {
	s := open(t, h)
	a := create(t, s, "a")
	create(t, s, "b")
	l, err := s.List()
	if err != nil || len(l) != 2 {
		t.Fatalf("list %v %v", l, err)
	}
	update(t, s, a.Task.ID, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Status = machine.Abandoned
		return &task.Op{Name: "close", Actor: machine.Human}, nil
	})
	l, err = s.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l {
		if e.ID == a.Task.ID && e.Status != machine.Abandoned {
			t.Fatalf("cached list is stale: %+v", e)
		}
		sum, err := e.Summary()
		if err != nil || sum.ID != e.ID || sum.Status != e.Status {
			t.Fatalf("summary %+v %v", sum, err)
		}
	}
	// Another handle lists what this one wrote.
	l, err = h.Reopen(t, s).List()
	if err != nil || len(l) != 2 {
		t.Fatalf("reopened list %+v %v", l, err)
	}
	for _, e := range l {
		if (e.ID == a.Task.ID) != (e.Status == machine.Abandoned) {
			t.Fatalf("reopened list: %s is %s", e.ID, e.Status)
		}
	}
}

func testCorruptRecord(t *testing.T, h Harness) {
	if h.Corrupt == nil {
		t.Skip("the implementation cannot plant a corrupt record")
	}
	s := open(t, h)
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, create(t, s, fmt.Sprintf("t%d", i)).Task.ID)
	}
	if _, err := s.List(); err != nil { // so a cache, if any, holds the good record
		t.Fatal(err)
	}
	bad := ids[2]
	h.Corrupt(t, s, bad)
	for _, st := range []task.Store{s, h.Reopen(t, s)} {
		_, err := st.Load(bad)
		var ce *task.CorruptError
		if !errors.As(err, &ce) || ce.ID != bad || !strings.Contains(err.Error(), "corrupt") {
			t.Fatalf("load of the corrupt record: %v", err)
		}
		list, err := st.List()
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != len(ids) {
			t.Fatalf("%d entries for %d tasks", len(list), len(ids))
		}
		for _, e := range list {
			if e.ID == bad {
				if e.Err == nil || !strings.Contains(e.Err.Error(), "corrupt") {
					t.Fatalf("corrupt record listed as %+v", e)
				}
				if _, err := e.Summary(); err == nil {
					t.Fatal("a corrupt entry has a summary")
				}
				continue
			}
			if sum, err := e.Summary(); err != nil || sum.ID != e.ID || e.Status != machine.Backlog {
				t.Fatalf("entry %s: %+v %v", e.ID, sum, err)
			}
		}
		if _, _, err := st.Update(context.Background(), bad, toggle); !errors.As(err, &ce) {
			t.Fatalf("update of the corrupt record: %v", err)
		}
		if id, err := st.Resolve(ids[3][:8]); err != nil || id != ids[3] {
			t.Fatalf("resolve beside a corrupt record: %q %v", id, err)
		}
	}
}

// testWatch: the stamp holds while nothing is written and tells every
// write (within the store's time granularity, as the port says).
func testWatch(t *testing.T, h Harness) {
	s := open(t, h)
	w := s.Watch()
	defer func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	}()
	stamp := func() (string, time.Time) {
		t.Helper()
		st, newest, err := w.Stamp()
		if err != nil {
			t.Fatal(err)
		}
		return st, newest
	}
	s0, _ := stamp()
	if again, _ := stamp(); again != s0 {
		t.Fatalf("the stamp moved with nothing written: %q then %q", s0, again)
	}
	sn := create(t, s, "watched")
	moved := func(what, before string) string {
		t.Helper()
		after, newest := stamp()
		// An equal stamp is trusted only once newest is older than the
		// store's granularity: a change within the same tick may leave
		// it, and then newest says so.
		if after == before && time.Since(newest) > 2*time.Second {
			t.Fatalf("%s: the stamp %q did not move, and says its newest change was at %v", what, after, newest)
		}
		if again, _ := stamp(); again != after {
			t.Fatalf("%s: the stamp moved with nothing written: %q then %q", what, after, again)
		}
		return after
	}
	s1 := moved("a create", s0)
	s2 := moved("an update", func() string { update(t, s, sn.Task.ID, comment("x")); return s1 }())
	// A read, a refused update and a nil op write nothing.
	load(t, s, sn.Task.ID)
	if _, err := s.List(); err != nil {
		t.Fatal(err)
	}
	_, _, _ = s.Update(context.Background(), sn.Task.ID, func(*task.Snapshot) (*task.Op, error) { return nil, nil })
	if again, _ := stamp(); again != s2 {
		t.Fatalf("reads moved the stamp: %q then %q", s2, again)
	}
	// A second watch agrees, and a closed one still answers.
	w2 := s.Watch()
	if st, _, err := w2.Stamp(); err != nil || st != s2 {
		t.Fatalf("a second watch says %q %v, the first %q", st, err, s2)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w2.Stamp(); err != nil {
		t.Fatalf("a closed watch: %v", err)
	}
}

func testClockAndHost(t *testing.T, h Harness) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	s := h.Open(t, "host-b", func() time.Time { return at })
	if s.Host() != "host-b" {
		t.Fatalf("host %q", s.Host())
	}
	sn := create(t, s, "x")
	if !sn.Task.CreatedAt.Equal(at.Truncate(time.Second)) || !sn.Task.UpdatedAt.Equal(at.Truncate(time.Second)) {
		t.Fatalf("created at %v, updated at %v", sn.Task.CreatedAt, sn.Task.UpdatedAt)
	}
	hist, err := s.History(sn)
	if err != nil || len(hist) != 1 || hist[0].Host != "host-b" || !hist[0].At.Equal(at.Truncate(time.Second)) {
		t.Fatalf("history %+v %v", hist, err)
	}
}

func testReopen(t *testing.T, h Harness) {
	s := open(t, h)
	sn := create(t, s, "kept")
	up := update(t, s, sn.Task.ID, func(sn *task.Snapshot) (*task.Op, error) {
		sn.AddTurn(task.Turn{Role: "user", Content: "hello"})
		sn.AddComment(task.Comment{Actor: machine.Human, Text: "noted"})
		return &task.Op{Name: "talk", Actor: machine.Human}, nil
	})
	r := h.Reopen(t, s)
	got := load(t, r, sn.Task.ID)
	same(t, "reopened", r, got, up)
	if turns, err := r.Turns(got); err != nil || len(turns) != 1 || turns[0].Content != "hello" {
		t.Fatalf("reopened turns %+v %v", turns, err)
	}
	if id, err := r.Resolve("kept"); err != nil || id != sn.Task.ID {
		t.Fatalf("reopened resolve: %q %v", id, err)
	}
	// A write through the other handle is seen here.
	other := update(t, r, sn.Task.ID, comment("from the other handle"))
	same(t, "written through the other handle", s, load(t, s, sn.Task.ID), other)
}

// testConflictReapplies: another writer commits while an operation is
// under way; the operation's commit loses the race, and it is applied
// again to the newer snapshot, so neither change is lost and the stale
// snapshot is never written.
func testConflictReapplies(t *testing.T, h Harness) {
	s := open(t, h)
	id := parked(t, s, "raced")
	var seen []uint64
	var interloper *task.Snapshot
	got, st, err := s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		seen = append(seen, sn.Task.Clock)
		if interloper == nil {
			// Another writer gets there first, through another handle.
			interloper = update(t, h.Reopen(t, s), id, comment("the interloper"))
		}
		sn.AddComment(task.Comment{Actor: machine.Human, Text: fmt.Sprintf("mine, after %d comments", sn.Task.Comments)})
		return toggle(sn)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[1] != seen[0]+1 || st.Retries != 1 {
		t.Fatalf("the operation saw clocks %v with %d retries, want two calls, the second on the interloper's version", seen, st.Retries)
	}
	if got.Task.Clock != interloper.Task.Clock+1 || got.Task.Status != machine.Pairing || got.Task.Comments != 2 {
		t.Fatalf("committed %+v over the interloper's %+v", got.Task, interloper.Task)
	}
	cs, err := s.Comments(load(t, s, id))
	if err != nil || len(cs) != 2 || cs[0].Text != "the interloper" || cs[1].Text != "mine, after 1 comments" {
		t.Fatalf("comments %+v %v", cs, err)
	}
	hist, err := s.History(got)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(hist); n < 2 || hist[n-2].Op != "comment" || hist[n-1].Op != "toggle" || hist[n-1].From != machine.Blocked || hist[n-1].Clock != hist[n-2].Clock+1 {
		t.Fatalf("history ends %+v", hist[max(0, len(hist)-2):])
	}
}

// testConcurrentUpdates: goroutines updating one task through one
// handle and through others lose no update, and every operation is
// applied to the newest state: the state machine's alternation holds
// along the whole history.
func testConcurrentUpdates(t *testing.T, h Harness) {
	s := open(t, h)
	id := parked(t, s, "contended")
	before := load(t, s, id)
	var workers, each uint64 = 8, 10
	if testing.Short() {
		workers, each = 4, 8
	}
	handles := []task.Store{s, h.Reopen(t, s)}
	var mu sync.Mutex
	var calls, retries uint64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func(st task.Store) {
			defer wg.Done()
			for range each {
				_, stats, err := st.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
					mu.Lock()
					calls++
					mu.Unlock()
					return toggle(sn)
				})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				retries += uint64(stats.Retries) //nolint:gosec // a count, never negative
				mu.Unlock()
			}
		}(handles[w%uint64(len(handles))])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := workers * each
	after := load(t, s, id)
	if got := after.Task.Clock - before.Task.Clock; got != want {
		t.Fatalf("clock advanced %d, want %d: updates were lost", got, want)
	}
	if calls != want+retries {
		t.Fatalf("%d operations ran for %d updates and %d retries", calls, want, retries)
	}
	hist, err := s.History(after)
	if err != nil {
		t.Fatal(err)
	}
	var toggles uint64
	for i, c := range hist {
		if c.Op != "toggle" {
			continue
		}
		toggles++
		if c.From != hist[i-1].To || c.Clock != hist[i-1].Clock+1 {
			t.Fatalf("change %d moved from %s at clock %d, but its parent ended at %s at clock %d", i, c.From, c.Clock, hist[i-1].To, hist[i-1].Clock)
		}
	}
	if toggles != want {
		t.Fatalf("history holds %d toggles, want %d", toggles, want)
	}
	t.Logf("%d goroutines x %d updates: %d retries", workers, each, retries)
}

// testConcurrentCreates: goroutines creating tasks of one title at once
// get one slug each, and every slug names its task.
func testConcurrentCreates(t *testing.T, h Harness) {
	s := open(t, h)
	n := 12
	if testing.Short() {
		n = 6
	}
	made := make([]*task.Snapshot, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sn, err := s.Create(task.CreateSpec{Title: "same", Actor: machine.Human})
			if err != nil {
				errs <- err
				return
			}
			made[i] = sn
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slugs := map[string]string{}
	for _, sn := range made {
		if prev, dup := slugs[sn.Task.Slug]; dup {
			t.Fatalf("slug %s given to %s and %s", sn.Task.Slug, prev, sn.Task.ID)
		}
		slugs[sn.Task.Slug] = sn.Task.ID
	}
	for slug, id := range slugs {
		if got, err := s.Resolve(slug); err != nil || got != id {
			t.Fatalf("slug %s names %q (%v), want %s", slug, got, err, id)
		}
	}
	if _, ok := slugs["same"]; !ok {
		t.Fatalf("no task got the slug itself: %v", slugs)
	}
	if l, err := s.List(); err != nil || len(l) != n {
		t.Fatalf("listed %d %v for %d creates", len(l), err, n)
	}
}
