package wire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// TestNoLauncherRefusesBeforeRecording: an Env built without a Launcher
// refuses every operation that launches a turn with ErrNoLauncher (not a
// nil-function panic), and records nothing: the task stays as it was.
func TestNoLauncherRefusesBeforeRecording(t *testing.T) {
	t.Parallel()
	e := env(t)
	ctx := context.Background()
	backlog, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "never started"})
	if err != nil {
		t.Fatal(err)
	}
	parked, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "parked"})
	if err != nil {
		t.Fatal(err)
	}
	walk(t, e, parked.Task.ID, machine.Working, machine.Blocked)
	interrupted, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "interrupted"})
	if err != nil {
		t.Fatal(err)
	}
	walk(t, e, interrupted.Task.ID, machine.Working, machine.Interrupted)

	calls := map[string]func() (*task.Snapshot, error){
		"start": func() (*task.Snapshot, error) {
			return e.Lifecycle().Start(ctx, backlog.Task.ID, session.StartInput{Agent: "exec"})
		},
		"unblock": func() (*task.Snapshot, error) {
			return e.Lifecycle().Unblock(ctx, parked.Task.ID, "go on", lifecycle.Decisions{})
		},
		"ask":         func() (*task.Snapshot, error) { return e.Conversation().Ask(ctx, parked.Task.ID, "why?") },
		"sync":        func() (*task.Snapshot, error) { return e.Conversation().Sync(ctx, parked.Task.ID) },
		"resume":      func() (*task.Snapshot, error) { return e.Lifecycle().Resume(ctx, interrupted.Task.ID) },
		"auto-resume": func() (*task.Snapshot, error) { return e.Lifecycle().AutoResume(ctx, interrupted.Task.ID) },
	}
	ids := []string{backlog.Task.ID, parked.Task.ID, interrupted.Task.ID}
	commits := func() string {
		var all []string
		for _, id := range ids {
			sn, err := e.Store.Load(id)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, fmt.Sprint(sn.Commit))
		}
		return strings.Join(all, " ")
	}
	for name, call := range calls {
		before := commits()
		sn, err := call()
		if !errors.Is(err, session.ErrNoLauncher) || sn != nil {
			t.Errorf("%s without a Launcher: got (%v, %v), want ErrNoLauncher", name, sn, err)
		}
		if after := commits(); after != before {
			t.Errorf("%s without a Launcher recorded something (%s -> %s)", name, before, after)
		}
	}
	if err := e.Turns().Spawn("any"); !errors.Is(err, session.ErrNoLauncher) {
		t.Errorf("launch without a Launcher: %v, want ErrNoLauncher", err)
	}
}
