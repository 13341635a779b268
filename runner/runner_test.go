package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// TestATaskCreatedAfterAnotherWaitsForItsAccept: --after holds a start
// until the other task is complete and accepted, and says when it never
// will be.
func TestATaskCreatedAfterAnotherWaitsForItsAccept(t *testing.T) {
	ctx := context.Background()
	e := env(t)
	e.Launch = func(string) error { return nil }
	first, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "build the api"})
	if err != nil {
		t.Fatal(err)
	}
	then, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "use the api", After: []string{first.Task.Slug, first.Task.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(then.Task.After) != 1 || then.Task.After[0] != first.Task.ID {
		t.Fatalf("after: %v", then.Task.After)
	}
	var we *lifecycle.WaitingError
	if err := lifecycle.DepsDone(e.Store, then); !errors.As(err, &we) || !strings.Contains(err.Error(), "build-the-api (backlog)") {
		t.Fatalf("deps: %v", err)
	}
	if _, err := e.Lifecycle().Start(ctx, then.Task.Slug, session.StartInput{Agent: "exec", ExecCommand: []string{"true"}}); !errors.As(err, &we) {
		t.Fatalf("start of a waiting task: %v", err)
	}
	accepted(t, e, first.Task.ID)
	if err := lifecycle.DepsDone(e.Store, then); err != nil {
		t.Fatalf("after the accept: %v", err)
	}
	if _, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "x", After: []string{"no-such-task"}}); err == nil || !strings.Contains(err.Error(), "--after no-such-task") {
		t.Fatalf("an unknown --after: %v", err)
	}
}

// TestMarkForPoolChecksWhatItRecords.
func TestMarkForPoolChecksWhatItRecords(t *testing.T) {
	ctx := context.Background()
	e := env(t)
	sn, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "train it"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Runner().MarkForPool(ctx, sn.Task.Slug, PoolMark{Labels: []string{"GPU; rm -rf"}}); err == nil {
		t.Fatal("a bad label was recorded")
	}
	got, err := e.Runner().MarkForPool(ctx, sn.Task.Slug, PoolMark{Labels: []string{"gpu", "linux", "gpu"}, Priority: 3, Agent: "codex"})
	if err != nil {
		t.Fatal(err)
	}
	if p := got.Task.Pool; p == nil || strings.Join(p.Labels, ",") != "gpu,linux" || p.Priority != 3 || p.Agent != "codex" {
		t.Fatalf("pool mark: %+v", got.Task.Pool)
	}
	walk(t, e, sn.Task.ID, machine.Working)
	if _, err := e.Runner().MarkForPool(ctx, sn.Task.Slug, PoolMark{}); err == nil || !strings.Contains(err.Error(), "only a backlog task") {
		t.Fatalf("a working task was pooled: %v", err)
	}
}

// TestARunnerTakesOnlyWhatItsMachineAllows: labels the task asks for,
// the agent it asks for, and the tasks it waits for decide; the record
// never widens what the runner's configuration allows.
func TestARunnerTakesOnlyWhatItsMachineAllows(t *testing.T) {
	ctx := context.Background()
	e := env(t)
	r := &runner{s: e.Runner(), e: &e.Env, o: Options{Labels: []string{"gpu"}, Agents: []string{"exec"}}}
	mk := func(title string, m PoolMark, after ...string) *task.Snapshot {
		sn, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: title, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if sn, err = e.Runner().MarkForPool(ctx, sn.Task.Slug, m); err != nil {
			t.Fatal(err)
		}
		return sn
	}
	ok := mk("fits", PoolMark{Labels: []string{"gpu"}, Agent: "exec"})
	label := mk("wants arm", PoolMark{Labels: []string{"arm64"}})
	agent := mk("wants claude", PoolMark{Agent: "claude"})
	waits := mk("waits", PoolMark{}, label.Task.ID)
	for _, tc := range []struct {
		sn   *task.Snapshot
		want string
	}{
		{ok, ""}, {label, "label arm64"}, {agent, "agent claude"}, {waits, "waits for wants-arm"},
	} {
		if got := r.refuse(tc.sn); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: refuse = %q, want %q", tc.sn.Task.Slug, got, tc.want)
		}
	}
	if a := r.agentFor(waits); a != "exec" {
		t.Errorf("a task that names no agent runs %q, want the runner's first allowed", a)
	}
}

// TestFeedbackForARunnersTaskIsLeftForIt: an unblock on a clone that
// does not run the pooled task's session records the feedback pending,
// changes nothing else and starts nothing; the runner then sees it as
// work.
func TestFeedbackForARunnersTaskIsLeftForIt(t *testing.T) {
	ctx := context.Background()
	e := env(t)
	launched := 0
	e.Launch = func(string) error { launched++; return nil }
	sn, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "remote work"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Runner().MarkForPool(ctx, sn.Task.Slug, PoolMark{}); err != nil {
		t.Fatal(err)
	}
	walk(t, e, sn.Task.ID, machine.Working, machine.Blocked) // a session this machine never started
	if e.Runner().PoolWork(e.mustLoad(t, sn.Task.ID)) {
		t.Fatal("a task parked for review is work for a runner")
	}
	got, err := e.Lifecycle().Unblock(ctx, sn.Task.Slug, "more tests please", lifecycle.Decisions{})
	var left *lifecycle.ErrLeftForRunner
	if !errors.As(err, &left) || got == nil {
		t.Fatalf("unblock: %v", err)
	}
	if got.Task.Status != machine.Blocked || launched != 0 {
		t.Fatalf("status %s, launched %d", got.Task.Status, launched)
	}
	fb, ok, err := e.Runner().newFeedback(got)
	if err != nil || !ok || fb.Content != "more tests please" || fb.FeedbackDelivery != task.FeedbackPending {
		t.Fatalf("feedback left: %+v %v %v", fb, ok, err)
	}
	if !e.Runner().PoolWork(got) {
		t.Fatal("feedback left for the runner is not work for it")
	}
}

// TestADeferredStartRunsOnceItsWaitIsOver: lazy start of a task that
// waits is kept here, and started with the agent and command given once
// the other task is accepted; one that started meanwhile is dropped.
func TestADeferredStartRunsOnceItsWaitIsOver(t *testing.T) {
	ctx := context.Background()
	e := env(t)
	first, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "first"})
	if err != nil {
		t.Fatal(err)
	}
	then, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "then", After: []string{first.Task.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Runner().DeferStart(then.Task.Slug, session.StartInput{Agent: "exec", ExecCommand: []string{"make", "it"}, Sandbox: &proto.Sandbox{Network: "off"}, SandboxExplicit: true}); err != nil {
		t.Fatal(err)
	}
	var started []string
	start := func(_ context.Context, d DeferredStart) error {
		// start --sandbox travels with the deferred start: the session
		// starts as confined as the user said.
		if !d.SandboxExplicit || d.Sandbox == nil || d.Sandbox.Network != "off" {
			t.Errorf("the deferred start lost its sandbox: %+v", d)
		}
		started = append(started, d.Task+" "+d.Agent+" "+strings.Join(d.Command, " "))
		return nil
	}
	if got := e.Runner().StartDeferred(ctx, start); len(got) != 0 || len(started) != 0 {
		t.Fatalf("started while it waits: %v", started)
	}
	accepted(t, e, first.Task.ID)
	if got := e.Runner().StartDeferred(ctx, start); len(got) != 1 || started[0] != then.Task.ID+" exec make it" {
		t.Fatalf("started %v (%v)", started, got)
	}
	if got := e.Runner().StartDeferred(ctx, start); len(got) != 0 {
		t.Fatalf("started twice: %v", got)
	}
}

// TestARunnerIsIdleWithOnlyTasksItCouldNotRun: a task this runner let go
// because it could not run it here is left to others, so a --once runner
// stops instead of claiming it again every lease.
func TestARunnerIsIdleWithOnlyTasksItCouldNotRun(t *testing.T) {
	ctx := context.Background()
	e := env(t)
	r := &runner{s: e.Runner(), e: &e.Env, o: Options{Agents: []string{"exec"}, Now: time.Now}, backoff: map[string]time.Time{}}
	sn, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "cannot run here"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Runner().MarkForPool(ctx, sn.Task.Slug, PoolMark{}); err != nil {
		t.Fatal(err)
	}
	if r.idle() {
		t.Fatal("a runner with a task it may claim is idle")
	}
	r.backoff[sn.Task.ID] = time.Now().Add(-time.Second) // it failed here once, and the backoff ran out
	if !r.idle() {
		t.Fatal("a task this runner could not run keeps it from being idle")
	}
}
