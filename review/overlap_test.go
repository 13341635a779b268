package review

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// startedTask creates a task that this machine started, parked blocked,
// whose branch (off target, "" for the default branch) commits files,
// each holding the title.
func startedTask(t *testing.T, e *testEnv, title, target string, files ...string) *task.Snapshot {
	t.Helper()
	content := map[string]string{}
	for _, f := range files {
		content[f] = title + "\n"
	}
	return startedWith(t, e, title, target, content)
}

// TestOverlapsFlagSharedFilesAndWhatLanded runs the check on a real
// repository: two tasks touching the same file flag each other, a task
// whose file then changed on main sees it landed, a task merging into
// another branch is not compared, and a task running elsewhere or
// finished is left out.
func TestOverlapsFlagSharedFilesAndWhatLanded(t *testing.T) {
	ctx := context.Background()
	e := env(t)
	dir := filepath.Dir(e.Repo.CommonDir)
	e.RepoDir = dir

	if got, err := e.Review().Overlaps(ctx); err != nil || got != nil {
		t.Fatalf("no tasks: %v %v", got, err)
	}
	backlog, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "not started"})
	if err != nil {
		t.Fatal(err)
	}
	if ids := e.Review().localActive([]task.Entry{{ID: backlog.Task.ID, Status: machine.Backlog}}); ids != nil {
		t.Fatalf("a task never started here is a candidate: %v", ids)
	}

	a := startedTask(t, e, "task a", "", "shared.txt", "a.txt")
	b := startedTask(t, e, "task b", "", "shared.txt", "b.txt")
	c := startedTask(t, e, "task c", "", "c.txt")
	testrepo.Git(t, dir, "branch", "release", "main")
	d := startedTask(t, e, "task d", "release", "shared.txt")
	commitFile(t, dir, "main", "c.txt") // lands on main after c forked

	cache := &OverlapCache{}
	for _, run := range []string{"first", "cached"} {
		got, err := e.Review().OverlapsOf(ctx, list(t, e), cache)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]TaskOverlaps{
			a.Task.ID: {With: map[string][]string{b.Task.Slug: {"shared.txt"}}, Into: "main"},
			b.Task.ID: {With: map[string][]string{a.Task.Slug: {"shared.txt"}}, Into: "main"},
			c.Task.ID: {Landed: []string{"c.txt"}, Into: "main"},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: overlaps %+v, want %+v (d: %s)", run, got, want, d.Task.ID)
		}
		if brief := got[a.Task.ID].Brief(); brief != "task-b (1 file)" {
			t.Fatalf("brief %q", brief)
		}
		if brief := got[c.Task.ID].Brief(); brief != "landed (1)" {
			t.Fatalf("brief %q", brief)
		}
	}

	// b finishes: a no longer overlaps it. c syncs main in: nothing is
	// left that landed since its fork.
	walk(t, e, b.Task.ID, machine.Abandoned)
	cs, err := e.Owned(c)
	if err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, cs.Worktree, "merge", "-q", "-X", "theirs", "--no-edit", "main")
	got, err := e.Review().OverlapsOf(ctx, list(t, e), cache)
	if err != nil || len(got) != 0 {
		t.Fatalf("after b closed and c synced: %+v %v", got, err)
	}
	// Two checks later, the cache holds only the ranges still in use: a's
	// and d's two each, c's one (it changes nothing now, so nothing is
	// compared with what landed).
	if _, err := e.Review().OverlapsOf(ctx, list(t, e), cache); err != nil {
		t.Fatal(err)
	}
	if len(cache.ranges) != 5 {
		t.Fatalf("the cache holds %d ranges, want the 5 in use", len(cache.ranges))
	}
}

func list(t *testing.T, e *testEnv) []task.Entry {
	t.Helper()
	entries, err := e.Store.List()
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestOverlapsBrief pins the column's wording.
func TestOverlapsBrief(t *testing.T) {
	o := TaskOverlaps{With: map[string][]string{"zed": {"x"}, "bee": {"x", "y"}}, Landed: []string{"x"}, Truncated: true}
	if got := o.Brief(); got != "bee (2 files), zed (1 file), landed (1), partial" {
		t.Fatalf("brief %q", got)
	}
	if (TaskOverlaps{Truncated: true}).Brief() != "" || !(TaskOverlaps{}).Empty() {
		t.Fatal("an empty overlap shows something")
	}
	for _, c := range []struct {
		o    TaskOverlaps
		want string
	}{
		{o, "2+ files with 2 tasks, 1 landed"},
		{TaskOverlaps{With: map[string][]string{"b": {"x"}}}, "1 file with 1 task"},
		{TaskOverlaps{Landed: []string{"x", "y"}}, "2 files landed"},
		{TaskOverlaps{Landed: []string{"x"}, Truncated: true}, "1+ file landed"},
		{TaskOverlaps{Truncated: true}, ""},
	} {
		if got := c.o.Short(); got != c.want {
			t.Errorf("Short of %+v = %q, want %q", c.o, got, c.want)
		}
	}
}

// TestAttemptsOfOneTaskDoNotOverlapEachOther: attempts are alternatives
// (one lands, the others close), so two attempts of a group that edit the
// same file are not flagged against each other; another task that edits
// it is flagged against both.
func TestAttemptsOfOneTaskDoNotOverlapEachOther(t *testing.T) {
	ctx := context.Background()
	e := env(t)
	e.RepoDir = filepath.Dir(e.Repo.CommonDir)
	a1 := startedTask(t, e, "fix a1", "", "shared.txt")
	a2 := startedTask(t, e, "fix a2", "", "shared.txt")
	other := startedTask(t, e, "other", "", "shared.txt")
	for _, sn := range []*task.Snapshot{a1, a2} {
		if _, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			s.Task.AttemptOf = "0123456789abcdef"
			return &task.Op{Name: "test", Actor: machine.System}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.Review().Overlaps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]TaskOverlaps{
		a1.Task.ID:    {With: map[string][]string{other.Task.Slug: {"shared.txt"}}, Into: "main"},
		a2.Task.ID:    {With: map[string][]string{other.Task.Slug: {"shared.txt"}}, Into: "main"},
		other.Task.ID: {With: map[string][]string{a1.Task.Slug: {"shared.txt"}, a2.Task.Slug: {"shared.txt"}}, Into: "main"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("overlaps %+v, want %+v", got, want)
	}
}
