package reconcile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/internal/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/ops"
	"github.com/lazyorch/lazy/proto"
)

// fixture is a repository of tasks for the pass benchmark and the
// load-count tests.
type fixture struct {
	dir   string
	repo  *gitstore.Repo
	store *gitstore.Store
	// backlog holds ids of tasks never started, which activate turns
	// into running turns.
	backlog []string
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	dir := testrepo.New(tb)
	repo, err := gitstore.Discover(dir)
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
		sn, err := f.store.Create(gitstore.CreateSpec{Title: fmt.Sprintf("task %d", i), Actor: machine.Human})
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
	return &Reconciler{Env: &ops.Env{Store: f.store, Actor: machine.System, RepoDir: f.dir}, StartGrace: time.Hour}
}

func (f *fixture) list(tb testing.TB) []gitstore.Entry {
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
		if _, _, err := s.Update(context.Background(), id, func(sn *gitstore.Snapshot) (*gitstore.Op, error) {
			if sn.Session == nil {
				sn.Task.Sessions++
				sn.Session = &gitstore.Session{ID: id, Host: s.Host(), Branch: "lazy/x" + id, StartedAt: time.Now()}
				turn := sn.AddTurn(gitstore.Turn{Role: gitstore.RoleHuman, Kind: "start", Content: "go"})
				sn.Session.Turn = turn.Seq
			}
			sn.Task.Status = st
			return &gitstore.Op{Name: "walk", Actor: machine.Human}, nil
		}); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkSweep is one full reconcile pass (every sweep) in the steady
// state of a daemon: running turns of this host, parked tasks, a tenth
// of them with sessions. It shows that a pass costs in proportion to the
// active tasks (large/10 against large/100) and not to the parked ones
// (1000/100 against large/100). LAZY_BENCH_TASKS replaces the large size
// (default 10000). The large repository is seeded once: its 10-active
// case runs first, then 90 more of its tasks start turns.
func BenchmarkSweep(b *testing.B) {
	large := 10000
	if v, err := strconv.Atoi(os.Getenv("LAZY_BENCH_TASKS")); err == nil && v > 0 {
		large = v
	}
	run := func(b *testing.B, f *fixture) {
		r := f.reconciler()
		entries := f.list(b)
		ctx := context.Background()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			actions, err := r.Sweep(ctx, entries)
			if err != nil || len(actions) != 0 {
				b.Fatalf("a steady-state pass acted: %v %v", actions, err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(r.loads.Load())/float64(b.N), "loads/pass")
	}
	b.Run("tasks=1000/active=100", func(b *testing.B) {
		f := newFixture(b)
		f.create(b, 1000)
		f.activate(b, 100)
		run(b, f)
	})
	// One repository for both large cases; a sub-benchmark's cleanups
	// would release the supervisor locks, so the parent holds them.
	f := newFixture(b)
	f.create(b, large)
	f.activate(b, 10)
	b.Run(fmt.Sprintf("tasks=%d/active=10", large), func(b *testing.B) { run(b, f) })
	f.activate(b, 90)
	b.Run(fmt.Sprintf("tasks=%d/active=100", large), func(b *testing.B) { run(b, f) })
}
