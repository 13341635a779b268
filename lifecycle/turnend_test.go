package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
)

// working creates a task working on turn 0 of session s1.
func working(t *testing.T, e *testEnv) string {
	t.Helper()
	sn, err := e.Lifecycle().Create(context.Background(), CreateInput{Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	walk(t, e, sn.Task.ID, machine.Working)
	return sn.Task.ID
}

// lastChange is the last operation recorded on task id, and its last turn.
func lastChange(t *testing.T, e *testEnv, id string) (task.Change, task.Turn) {
	t.Helper()
	sn, err := e.Store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Store.History(sn)
	if err != nil || len(h) == 0 {
		t.Fatal(h, err)
	}
	turns, err := e.Store.Turns(sn)
	if err != nil || len(turns) == 0 {
		t.Fatal(turns, err)
	}
	return h[len(h)-1], turns[len(turns)-1]
}

// A response of the current turn is recorded as the agent's turn, once,
// as one operation of the system: a completed one parks the task, a
// failed one interrupts it with the reason and counts the interruption;
// a response of another turn, or of a task no longer working, writes
// nothing.
func TestRecordResponse(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no git: nothing may need one
	ctx := context.Background()
	now := time.Date(2026, 12, 7, 1, 2, 3, 0, time.UTC)
	e := env(t)

	done := working(t, e)
	resp := &proto.Response{Status: proto.Completed, Result: "done", Commits: []string{"c1", "c2"}}
	resp.Session, resp.Seq = "s1", 0
	stale := *resp
	stale.Seq = 1
	n := history(t, e, done)
	if step, err := e.Lifecycle().RecordResponse(ctx, done, &stale, now); err != nil || step != nil {
		t.Fatalf("a stale response: %+v %v", step, err)
	}
	if history(t, e, done) != n {
		t.Fatal("a stale response wrote")
	}
	step, err := e.Lifecycle().RecordResponse(ctx, done, resp, now)
	if err != nil || step == nil || step.From != machine.Working || step.To != machine.Blocked || step.Why != "agent turn completed (2 commits)" || step.Neutral {
		t.Fatalf("completed: %+v %v", step, err)
	}
	op, turn := lastChange(t, e, done)
	if op.Actor != machine.System || op.Op != "reconcile" || op.To != machine.Blocked || history(t, e, done) != n+1 {
		t.Fatalf("recorded as %+v", op)
	}
	if turn.Role != task.RoleAgent || turn.Content != "done" || len(turn.Commits) != 2 || turn.ExitCode == nil || *turn.ExitCode != 0 || !turn.At.Equal(now) {
		t.Fatalf("the turn: %+v", turn)
	}
	if step, err := e.Lifecycle().RecordResponse(ctx, done, resp, now); err != nil || step != nil || history(t, e, done) != n+1 {
		t.Fatalf("recorded twice: %+v %v", step, err)
	}

	failed := working(t, e)
	bad := &proto.Response{Status: proto.Errored, ExitCode: 137, StderrTail: "oom"}
	bad.Session, bad.Seq = "s1", 0
	step, err = e.Lifecycle().RecordResponse(ctx, failed, bad, now)
	if err != nil || step == nil || step.To != machine.Interrupted || step.Why != "agent turn failed: OOM killed or SIGKILL (exit code 137)" {
		t.Fatalf("failed: %+v %v", step, err)
	}
	sn, _ := e.Store.Load(failed)
	if s := sn.Session; s.ConsecutiveInterruptions != 1 || s.InterruptLogs != "oom" || s.InterruptExitCode == nil || *s.InterruptExitCode != 137 {
		t.Fatalf("the interrupt: %+v", s)
	}
}

// A turn whose supervisor died is recorded as a system turn saying what
// was found and interrupts the task, once; the variant for a caller
// holding the task lock does not take it again (it would wait for
// ever), and a task no longer on that turn is left alone.
func TestInterruptDead(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ctx := context.Background()
	now := time.Date(2026, 12, 7, 1, 2, 3, 0, time.UTC)
	e := env(t)
	id := working(t, e)
	d := DeadTurn{Session: "s1", Seq: 0, Now: now, ExitCode: 143, Killed: "pid 41", Unlocked: true, Logs: "tail",
		Status: proto.Status{Phase: "agent"}, Diffed: true, Commits: []string{"c1"}, ChangedFiles: []string{"a.go"}}
	if step, err := e.Lifecycle().InterruptDead(ctx, id, DeadTurn{Session: "s2", Now: now, ExitCode: -1}); err != nil || step != nil {
		t.Fatalf("another session's turn: %+v %v", step, err)
	}
	n := history(t, e, id)

	unlock, err := e.LockTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	held, cancel := context.WithTimeout(ctx, 20*time.Second)
	step, err := e.Lifecycle().InterruptDeadLocked(held, id, d)
	cancel()
	unlock()
	want := "terminated by SIGTERM (exit code 143): the supervisor exited without writing a response" +
		" (agent processes of the turn, pid 41, were still running and were killed)" +
		"; the index.lock a killed git left in its worktree was removed"
	if err != nil || step == nil || step.From != machine.Working || step.To != machine.Interrupted || step.Why != want {
		t.Fatalf("interrupt: %+v %v", step, err)
	}
	op, turn := lastChange(t, e, id)
	if op.Actor != machine.System || op.Op != "reconcile" || history(t, e, id) != n+1 {
		t.Fatalf("recorded as %+v", op)
	}
	if turn.Content != "[system] "+want || turn.Error != want || len(turn.Commits) != 1 || len(turn.ChangedFiles) != 1 || *turn.ExitCode != 143 {
		t.Fatalf("the turn: %+v", turn)
	}
	sn, _ := e.Store.Load(id)
	if s := sn.Session; s.InterruptReason != want || s.InterruptLogs != "tail" || s.InterruptPhase != "agent" || s.ConsecutiveInterruptions != 1 || !s.InterruptAt.Equal(now) {
		t.Fatalf("the interrupt: %+v", s)
	}
	if step, err := e.Lifecycle().InterruptDead(ctx, id, d); err != nil || step != nil || history(t, e, id) != n+1 {
		t.Fatalf("interrupted twice: %+v %v", step, err)
	}
}

// fakeSpending prices every turn at one dollar.
type fakeSpending struct{ unpriced }

func (f fakeSpending) TurnUsage(s *task.Snapshot, u *proto.Usage) (task.Usage, string, string) {
	use, model, _ := f.unpriced.TurnUsage(s, u)
	use.CostUSD = 1
	return use, model, "table"
}

// A response's usage is priced through Spending and added to the task's
// total, and the turn counts once in this machine's day ledger.
func TestRecordResponseUsage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ctx := context.Background()
	now := time.Date(2026, 12, 7, 1, 2, 3, 0, time.UTC)
	e := env(t)
	id := working(t, e)
	l := e.Lifecycle()
	l.Spending = fakeSpending{unpriced{e.Store}}
	resp := &proto.Response{Status: proto.Completed, Usage: &proto.Usage{InputTokens: 10, Model: "m"}}
	resp.Session, resp.Seq = "s1", 0
	if step, err := l.RecordResponse(ctx, id, resp, now); err != nil || step == nil {
		t.Fatalf("%+v %v", step, err)
	}
	_, turn := lastChange(t, e, id)
	sn, _ := e.Store.Load(id)
	if turn.Usage == nil || turn.Usage.CostUSD != 1 || turn.Model != "m" || turn.PricedBy != "table" || sn.Task.Usage == nil || sn.Task.Usage.CostUSD != 1 {
		t.Fatalf("the turn %+v, the total %+v", turn, sn.Task.Usage)
	}
	if day, err := e.Budgets().Ledger().Day(now); err != nil || day != 1 {
		t.Fatalf("the ledger: %v %v", day, err)
	}
}

// A response that says how the turn met the agent's session records it
// on the agent's turn, bounded, and on the fix round whose feedback the
// turn answered, so show can say whether the agent kept its context.
func TestRecordResponseResume(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ctx := context.Background()
	e := env(t)
	id := working(t, e)
	if _, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Gate = &task.GateRecord{FixRounds: 1}
		s.Task.Gate.NoteFix(task.GateFix{Round: 1, Max: 3, Turn: s.Session.Turn})
		return &task.Op{Name: "gate-fix", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	long := "No conversation found with session ID: " + strings.Repeat("x", 1000)
	resp := &proto.Response{Status: proto.Completed, Result: "fixed", Resume: &proto.Resume{NewSession: "s-new", Reason: long}}
	resp.Session, resp.Seq = "s1", 0
	if _, err := e.Lifecycle().RecordResponse(ctx, id, resp, time.Now()); err != nil {
		t.Fatal(err)
	}
	_, turn := lastChange(t, e, id)
	if r := turn.Resume; r == nil || r.NewSession != "s-new" || r.Resumed != "" || len(r.Reason) > 310 {
		t.Fatalf("the turn's resume: %+v", turn.Resume)
	}
	sn, _ := e.Store.Load(id)
	if f := sn.Task.Gate.Fixes; len(f) != 1 || f[0].Resume == nil || f[0].Resume.NewSession != "s-new" {
		t.Fatalf("the fix round: %+v", f)
	}
}
