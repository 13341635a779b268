package review

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// The tests in this file run review on its seams alone: the task store
// in memory, git's side of branches faked (fakeGit, fakeRefs), and PATH
// emptied so that any git process a read would start fails the test.

// fakeGit is the Worktree of a repository whose branches and ranges it
// names; it records what it was asked.
type fakeGit struct {
	mu       sync.Mutex
	branches map[string]string   // branch -> tip
	ranges   map[string][]string // "base..tip" -> files
	patch    string
	calls    []string
}

func (g *fakeGit) called(what string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, what)
}

func (g *fakeGit) BranchCommit(_ context.Context, _, branch string) (string, error) {
	g.called("BranchCommit " + branch)
	tip, ok := g.branches[branch]
	if !ok {
		return "", fmt.Errorf("no branch %s", branch)
	}
	return tip, nil
}

func (g *fakeGit) MergeBase(_ context.Context, _, into, sha string) (string, error) {
	g.called("MergeBase " + into + " " + sha)
	if _, ok := g.branches[into]; !ok {
		return "", fmt.Errorf("no branch %s", into)
	}
	return "base" + into, nil
}

func (g *fakeGit) DefaultBranch(context.Context, string) (string, error) {
	g.called("DefaultBranch")
	return "main", nil
}

func (g *fakeGit) Stat(_ context.Context, _, from, to string, _ bool) (string, error) {
	return fmt.Sprintf(" %s\x1b[31m | 1 +\n", strings.Join(g.ranges[from+".."+to], ", ")), nil
}

func (g *fakeGit) DiffNames(_ context.Context, _, from, to string) ([]string, error) {
	g.called("DiffNames " + from + ".." + to)
	return g.ranges[from+".."+to], nil
}

func (g *fakeGit) Patch(context.Context, string, string, string) ([]byte, error) {
	return []byte(g.patch), nil
}

func (g *fakeGit) Uncommitted(_ context.Context, dir string) ([]string, error) {
	g.called("Uncommitted " + dir)
	return []string{"wip\x07.txt"}, nil
}

func (g *fakeGit) RangeFiles(_ context.Context, _, base, tip string) ([]string, bool, error) {
	g.called("RangeFiles " + base + ".." + tip)
	return g.ranges[base+".."+tip], false, nil
}

// fakeRefs reads the fake's branches as refs.
type fakeRefs struct{ g *fakeGit }

func (r fakeRefs) ReadRef(name string) (gitrepo.OID, bool, error) {
	tip, ok := r.g.branches[strings.TrimPrefix(name, "refs/heads/")]
	if !ok {
		return gitrepo.OID{}, false, nil
	}
	oid, err := gitrepo.ParseOID(tip)
	return oid, err == nil, err
}

// seamEnv is review over a store in memory and a lazy directory of its
// own, with git faked and no git on PATH.
func seamEnv(t *testing.T) (*session.Env, *Service, *fakeGit) {
	t.Helper()
	t.Setenv("PATH", t.TempDir()) // no git: nothing may need one
	e := &session.Env{
		Store: memstore.New(memstore.WithHost("ops-test")),
		Repo:  &gitrepo.Location{CommonDir: t.TempDir()},
		Actor: machine.Human,
	}
	g := &fakeGit{branches: map[string]string{}, ranges: map[string][]string{}}
	return e, &Service{Env: e, Worktrees: g, Refs: fakeRefs{g}}, g
}

// parked is a task parked blocked with a session whose record names
// recordBranch; this machine's own record of the session names
// localBranch and a worktree (localBranch "": the session runs on
// another machine).
func parked(t *testing.T, e *session.Env, title, target, recordBranch, localBranch string) *task.Snapshot {
	t.Helper()
	ctx := context.Background()
	sn, err := e.Store.Create(task.CreateSpec{Title: title, TargetBranch: target, Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	sid, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	if localBranch != "" {
		if err := e.Sessions().Save(owned.Session{TaskID: sn.Task.ID, SessionID: sid, Worktree: t.TempDir(), Branch: localBranch}); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range []machine.Status{machine.Working, machine.Blocked} {
		sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			s.Session = &task.Session{ID: sid, Number: 1, Host: "ops-test", Branch: recordBranch, Worktree: "/elsewhere"}
			s.Task.Sessions, s.Task.Status = 1, st
			return &task.Op{Name: "walk", Actor: machine.System}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return sn
}

const (
	tipA = "1111111111111111111111111111111111111111"
	tipB = "2222222222222222222222222222222222222222"
	tipM = "3333333333333333333333333333333333333333"
)

// lazy diff measures the branch this machine made, never the one a
// record names (a record may come from a remote): git is asked about the
// local branch only, and what git prints reaches the reader escaped and
// bounded.
func TestDiffMeasuresTheBranchThisMachineMade(t *testing.T) {
	e, rv, g := seamEnv(t)
	ctx := context.Background()
	sn := parked(t, e, "feature", "release", "--upload-pack=evil", "lazy/feature-here")
	g.branches["lazy/feature-here"], g.branches["release"] = tipA, tipM
	g.ranges["baserelease.."+tipA] = []string{"a\x1b[2J.go", "b.go"}
	g.patch = strings.Repeat("+x\n", 100)

	r, err := rv.ReviewRange(ctx, sn.Task.Slug)
	if err != nil {
		t.Fatal(err)
	}
	local, err := e.Sessions().Load(sn.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := Review{Slug: sn.Task.Slug, Branch: "lazy/feature-here", Into: "release", MergeBase: "baserelease", BranchSHA: tipA, Worktree: local.Worktree}
	if *r != want {
		t.Fatalf("range %+v, want %+v", *r, want)
	}
	for _, c := range g.calls {
		if strings.Contains(c, "evil") {
			t.Fatalf("git was asked about the record's branch: %v", g.calls)
		}
	}
	d, err := rv.Diff(ctx, sn.Task.Slug, true, 10)
	if err != nil {
		t.Fatal(err)
	}
	if d.Branch != r.Branch || d.Base != "release" || d.MergeBase != "baserelease" || !d.Truncated || len(d.Patch) != 10 {
		t.Fatalf("diff %+v: the patch is cut at 10 bytes over the same range", d)
	}
	if !slices.Equal(d.Files, []string{`a\u001b[2J.go`, "b.go"}) || !slices.Equal(d.Uncommitted, []string{`wip\u0007.txt`}) || strings.ContainsAny(d.Stat, "\x1b") {
		t.Fatalf("diff %+v: git's output must reach the reader escaped", d)
	}
	if !slices.Contains(g.calls, "Uncommitted "+local.Worktree) {
		t.Fatalf("the uncommitted files were read from %v, want this machine's worktree %s", g.calls, local.Worktree)
	}

	// A task whose session runs elsewhere is measured on the branch its
	// slug derives, not the record's; one whose branch is not here says
	// what to do.
	away := parked(t, e, "away", "release", "--upload-pack=evil", "")
	if _, err := rv.Diff(ctx, away.Task.Slug, false, 0); err == nil || !strings.Contains(err.Error(), "its branch lazy/away does not exist on this machine; lazy pull") {
		t.Fatalf("diff of a task running elsewhere: %v", err)
	}
	backlog, err := e.Store.Create(task.CreateSpec{Title: "later", Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rv.Diff(ctx, backlog.Task.Slug, false, 0); err == nil || err.Error() != "later has not started, so it has no branch to diff; lazy start later first" {
		t.Fatalf("diff of a backlog task: %v", err)
	}
}

// The overlap check compares the tasks started here that merge into one
// branch, reading their tips from the refs and one file list per task,
// with no git process: attempts of one task are not compared with each
// other, and a task with a branch name git would misread is left out.
func TestOverlapsOnTheSeams(t *testing.T) {
	e, rv, g := seamEnv(t)
	ctx := context.Background()
	a := parked(t, e, "a", "", "x", "lazy/a")
	b := parked(t, e, "b", "", "x", "lazy/b")
	bad := parked(t, e, "bad", "", "x", "-bad")
	g.branches["lazy/a"], g.branches["lazy/b"], g.branches["-bad"], g.branches["main"] = tipA, tipB, tipB, tipM
	g.ranges[tipM+".."+tipA] = []string{"shared.go", "a.go"}
	g.ranges[tipM+".."+tipB] = []string{"shared.go"}
	g.ranges[tipA+".."+tipM] = []string{"a.go"} // landed on main since a forked

	got, err := rv.Overlaps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]TaskOverlaps{
		a.Task.ID: {With: map[string][]string{"b": {"shared.go"}}, Landed: []string{"a.go"}, Into: "main"},
		b.Task.ID: {With: map[string][]string{"a": {"shared.go"}}, Into: "main"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("overlaps %+v, want %+v", got, want)
	}
	if _, ok := got[bad.Task.ID]; ok || slices.ContainsFunc(g.calls, func(c string) bool { return strings.Contains(c, "-bad") }) {
		t.Fatalf("a branch named like an option reached git: %v", g.calls)
	}
	if n := len(slices.DeleteFunc(slices.Clone(g.calls), func(c string) bool { return c != "DefaultBranch" })); n != 1 {
		t.Fatalf("the default branch was asked %d times, want once for all tasks", n)
	}

	for _, sn := range []*task.Snapshot{a, b} {
		if _, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			s.Task.AttemptOf = "0123456789abcdef"
			return &task.Op{Name: "test", Actor: machine.System}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	got, err = rv.Overlaps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o := got[a.Task.ID]; len(o.With) != 0 || !slices.Equal(o.Landed, []string{"a.go"}) || len(got) != 1 {
		t.Fatalf("attempts of one task compared with each other: %+v", got)
	}
}

// lazy_logs gives another agent the end of the log, bounded, escaped and
// without the secrets the agent printed; a task with no log here has an
// empty tail, not an error.
func TestLogsAreTheBoundedEscapedEnd(t *testing.T) {
	e, rv, _ := seamEnv(t)
	ctx := context.Background()
	sn := parked(t, e, "logged", "", "x", "lazy/logged")
	tail, err := rv.Logs(ctx, sn.Task.Slug, 0)
	if err != nil || len(tail.Lines) != 0 || tail.Truncated {
		t.Fatalf("no log yet: %+v %v", tail, err)
	}
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, "line %d\x1b]0;title\x07\r\n", i)
	}
	p := proto.ForTask(e.Repo.LazyDir(), sn.Task.ID).Path(proto.LogFile)
	if err := os.MkdirAll(strings.TrimSuffix(p, "/"+proto.LogFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tail, err = rv.Logs(ctx, sn.Task.Slug, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !tail.Truncated || len(tail.Lines) != 3 || !strings.HasPrefix(tail.Lines[0], "line 7") || strings.ContainsAny(strings.Join(tail.Lines, ""), "\x1b\x07\r") {
		t.Fatalf("the last 3 lines, escaped: %+v", tail)
	}
}
