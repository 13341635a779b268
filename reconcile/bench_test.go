package reconcile

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// fixture is a repository of tasks for the pass benchmark and the
// load-count tests.
type fixture struct {
	dir   string
	repo  *gitrepo.Location
	store *gitstore.Store
	// backlog holds ids of tasks never started, which activate turns
	// into running turns.
	backlog []string
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	dir := testrepo.New(tb)
	repo, err := gitrepo.Discover(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return &fixture{dir: dir, repo: repo, store: gitstore.Open(repo, gitstore.WithHost("bench"))}
}

// create adds n tasks: every tenth parked in blocked with a session
// (what the merged-branch sweep looks at), the rest in backlog.
func (f *fixture) create(tb testing.TB, n int) {
	tb.Helper()
	for i := 0; i < n; i++ {
		sn, err := f.store.Create(task.CreateSpec{Title: fmt.Sprintf("task %d", i), Actor: machine.Human})
		if err != nil {
			tb.Fatal(err)
		}
		if i%10 == 0 {
			walk(tb, f.store, sn.Task.ID, machine.Working, machine.Blocked)
		} else {
			f.backlog = append(f.backlog, sn.Task.ID)
		}
	}
}

// activate turns n backlog tasks into running turns of this host: each
// working, with a local session record and its supervisor lock held (by
// this process, as a supervisor holds it) for the rest of the test.
func (f *fixture) activate(tb testing.TB, n int) []string {
	tb.Helper()
	if n > len(f.backlog) {
		tb.Fatalf("only %d backlog tasks to activate, not %d", len(f.backlog), n)
	}
	ids := f.backlog[:n]
	f.backlog = f.backlog[n:]
	for _, id := range ids {
		walk(tb, f.store, id, machine.Working)
		f.own(tb, id)
		l, err := flock.TryLock(proto.SupervisorLock(f.repo.LazyDir(), id))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = l.Release() })
	}
	return ids
}

// own writes the local session record that makes id's session this
// machine's.
func (f *fixture) own(tb testing.TB, id string) {
	tb.Helper()
	sn, err := f.store.Load(id)
	if err != nil {
		tb.Fatal(err)
	}
	s := owned.Session{TaskID: id, SessionID: sn.Session.ID, Agent: "exec", Worktree: filepath.Join(f.dir, ".wt", id), Branch: sn.Session.Branch, StartedAt: time.Now()}
	if err := owned.For(f.repo.LazyDir()).Save(s); err != nil {
		tb.Fatal(err)
	}
}

func (f *fixture) reconciler() *Reconciler {
	return &Reconciler{Env: wire.New(f.store, session.Env{Actor: machine.System, RepoDir: f.dir}), StartGrace: time.Hour}
}

func (f *fixture) list(tb testing.TB) []task.Entry {
	tb.Helper()
	entries, err := f.store.List()
	if err != nil {
		tb.Fatal(err)
	}
	return entries
}

// walk gives a task a session of this host and moves it through statuses.
// The session id is the task id: both are 16 hex digits, which is all a
// local session record asks of it.
func walk(tb testing.TB, s *gitstore.Store, id string, to ...machine.Status) {
	tb.Helper()
	for _, st := range to {
		if _, _, err := s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
			if sn.Session == nil {
				sn.Task.Sessions++
				sn.Session = &task.Session{ID: id, Host: s.Host(), Branch: "lazy/x" + id, StartedAt: time.Now()}
				turn := sn.AddTurn(task.Turn{Role: task.RoleHuman, Kind: "start", Content: "go"})
				sn.Session.Turn = turn.Seq
			}
			sn.Task.Status = st
			return &task.Op{Name: "walk", Actor: machine.Human}, nil
		}); err != nil {
			tb.Fatal(err)
		}
	}
}

// copyFixture copies f's repository, tasks and all, to a new directory:
// a second repository of the same tasks without seeding them again. Call
// it before activate, whose locks and session records are per directory.
func copyFixture(tb testing.TB, f *fixture) *fixture {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", f.dir, dir).CombinedOutput(); err != nil {
		tb.Fatalf("copy %s: %v %s", f.dir, err, out)
	}
	repo, err := gitrepo.Discover(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return &fixture{dir: dir, repo: repo, store: gitstore.Open(repo, gitstore.WithHost("bench")), backlog: slices.Clone(f.backlog)}
}

// BenchmarkSweep is one full reconcile pass (every sweep) in the steady
// state of a daemon: running turns of this host and parked tasks, a tenth
// of them blocked with sessions. Three repositories:
//
//	1000/100   1,000 tasks, 100 running turns
//	large/100  LAZY_BENCH_TASKS (default 10,000) tasks, 100 running turns
//	large/10   a copy of the same tasks with 10 running turns
//
// each passed two ways: "sweep" is Sweep over the repository's list,
// which walks every entry (the pass before Pass); "pass" is Pass, which
// keeps its listing while no task ref moves. The six cases take turns,
// pass after pass, so machine noise lands on all alike, and each reports
// its median. large/100 over large/10 is what active tasks cost;
// large/100 over 1000/100 is what the parked ones add. loads/pass counts
// full snapshot loads over all cases, lists/pass the listings Pass made.
func BenchmarkSweep(b *testing.B) {
	large := 10000
	if v, err := strconv.Atoi(os.Getenv("LAZY_BENCH_TASKS")); err == nil && v > 0 {
		large = v
	}
	small := newFixture(b)
	small.create(b, 1000)
	small.activate(b, 100)
	big := newFixture(b)
	big.create(b, large)
	big10 := copyFixture(b, big)
	big.activate(b, 100)
	big10.activate(b, 10)
	// Settled: a ref stamp younger than the racy window is not trusted,
	// and a daemon's steady state is long after the last ref moved.
	time.Sleep(racyWindow + 100*time.Millisecond)
	type pass struct {
		name    string
		r       *Reconciler
		entries []task.Entry // nil: Pass
		took    []time.Duration
	}
	var cases []*pass
	for _, f := range []struct {
		name string
		fx   *fixture
	}{{"1000/100", small}, {fmt.Sprintf("%d/100", large), big}, {fmt.Sprintf("%d/10", large), big10}} {
		cases = append(cases,
			&pass{name: "sweep-" + f.name, r: f.fx.reconciler(), entries: f.fx.list(b)},
			&pass{name: "pass-" + f.name, r: f.fx.reconciler()})
	}
	ctx := context.Background()
	run := func(c *pass) ([]Action, error) {
		if c.entries == nil {
			return c.r.Pass(ctx)
		}
		return c.r.Sweep(ctx, c.entries)
	}
	for _, c := range cases {
		// The first pass lists and asks git; the steady state is after.
		if _, err := run(c); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, c := range cases {
			t := time.Now()
			actions, err := run(c)
			c.took = append(c.took, time.Since(t))
			if err != nil || len(actions) != 0 {
				b.Fatalf("%s: a steady-state pass acted: %v %v", c.name, actions, err)
			}
		}
	}
	b.StopTimer()
	med := map[string]float64{}
	loads, lists := int64(0), int64(0)
	for _, c := range cases {
		sort.Slice(c.took, func(i, j int) bool { return c.took[i] < c.took[j] })
		med[c.name] = float64(c.took[len(c.took)/2].Nanoseconds()) / 1e6
		b.ReportMetric(med[c.name], "ms/pass("+c.name+")")
		loads += c.r.loads.Load()
		if c.entries == nil {
			lists += c.r.lists.Load() - 1 // the warm-up's
		}
	}
	// cases holds sweep then pass for 1000/100, large/100, large/10.
	for way := 0; way < 2; way++ {
		name := [...]string{"sweep", "pass"}[way]
		b.ReportMetric(med[cases[2+way].name]/med[cases[4+way].name], "x("+name+"-active-100/10)")
		b.ReportMetric(med[cases[2+way].name]/med[cases[way].name], "x("+name+"-tasks-large/1000)")
	}
	b.ReportMetric(float64(loads)/float64(b.N*len(cases)), "loads/pass")
	b.ReportMetric(float64(lists)/float64(b.N*len(cases)/2), "lists/pass")
}
