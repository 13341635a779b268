package reconcile

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/ops"
	"github.com/lazyorch/lazy/proto"
)

// seeded builds a repository of total tasks: active of them working, each
// with a live process that passes for its supervisor, and a tenth of the
// rest parked with a session (what the merged-branch sweep looks at).
func seeded(b *testing.B, total, active int) (*Reconciler, []gitstore.Entry) {
	b.Helper()
	dir := testrepo.New(b)
	repo, err := gitstore.Discover(dir)
	if err != nil {
		b.Fatal(err)
	}
	store := gitstore.Open(repo, gitstore.WithHost("bench"))
	for i := 0; i < total; i++ {
		sn, err := store.Create(gitstore.CreateSpec{Title: fmt.Sprintf("task %d", i), Actor: machine.Human})
		if err != nil {
			b.Fatal(err)
		}
		id := sn.Task.ID
		switch {
		case i < active:
			walk(b, store, id, machine.Working)
			// A stand-in supervisor: its cmdline carries "supervise <id>".
			cmd := exec.Command("/bin/sh", "-c", "sleep 600; :", "supervise", id)
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			sn, _ := store.Load(id)
			pd := proto.ForTask(repo.LazyDir(), id)
			if err := pd.Write(proto.StatusFile, proto.Status{Turn: proto.Turn{TaskID: id, Session: sn.Session.ID, Seq: sn.Session.Turn}, PID: cmd.Process.Pid, Phase: "agent"}); err != nil {
				b.Fatal(err)
			}
		case i%10 == 0:
			walk(b, store, id, machine.Working, machine.Blocked)
		}
	}
	entries, err := store.List()
	if err != nil {
		b.Fatal(err)
	}
	return &Reconciler{Env: &ops.Env{Store: store, Actor: machine.System, RepoDir: dir}, StartGrace: time.Hour}, entries
}

// walk gives a task a session of this host and moves it through statuses.
func walk(b *testing.B, s *gitstore.Store, id string, to ...machine.Status) {
	b.Helper()
	for _, st := range to {
		if _, _, err := s.Update(context.Background(), id, func(sn *gitstore.Snapshot) (*gitstore.Op, error) {
			if sn.Session == nil {
				sn.Task.Sessions++
				sn.Session = &gitstore.Session{ID: "s-" + id, Host: s.Host(), Branch: "lazy/x" + id, StartedAt: time.Now()}
				turn := sn.AddTurn(gitstore.Turn{Role: gitstore.RoleHuman, Kind: "start", Content: "go"})
				sn.Session.Turn = turn.Seq
			}
			sn.Task.Status = st
			return &gitstore.Op{Name: "walk", Actor: machine.Human}, nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSweep is one full reconcile pass (every sweep) over repositories
// of different sizes with the same 100 active tasks. LAZY_BENCH_TASKS
// replaces the large size (default 10000).
func BenchmarkSweep(b *testing.B) {
	large := 10000
	if v, err := strconv.Atoi(os.Getenv("LAZY_BENCH_TASKS")); err == nil && v > 0 {
		large = v
	}
	for _, size := range []struct{ total, active int }{{1000, 100}, {large, 100}, {large, 10}} {
		b.Run(fmt.Sprintf("tasks=%d/active=%d", size.total, size.active), func(b *testing.B) {
			r, entries := seeded(b, size.total, size.active)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				actions, err := r.Sweep(ctx, entries)
				if err != nil || len(actions) != 0 {
					b.Fatalf("a steady-state pass acted: %v %v", actions, err)
				}
			}
		})
	}
}
