package supervise

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/proto"
)

// TestExitCode: a normal exit gives its code, a signal 128+signal, and an
// agent that could not be waited for at all is an error, not a code.
func TestExitCode(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		script string
		want   int
	}{{"exit 0", 0}, {"exit 3", 3}, {"kill -TERM $$", 128 + 15}, {"kill -KILL $$", 128 + 9}} {
		code, err := exitCode(exec.CommandContext(ctx, "sh", "-c", c.script).Run())
		if err != nil || code != c.want {
			t.Errorf("%q: got (%d, %v), want %d", c.script, code, err, c.want)
		}
	}
	if _, err := exitCode(errors.New("wait: no child")); err == nil {
		t.Error("a wait that failed outright gave an exit code")
	}
}

// retryStream is an agent stream whose activity the test sets.
type retryStream struct {
	agent.Stream
	activity agent.Activity
}

func (s *retryStream) Activity() agent.Activity { return s.activity }
func (s *retryStream) Progress() string         { return "" }

// TestTurnWatchRetry: the agent's own retrying reaches the status file
// while it lasts and is cleared when it stops; an unreachable API is
// given up on only after UnreachableTimeout, counted from the first
// unreachable turn of the run.
func TestTurnWatchRetry(t *testing.T) {
	ctx := context.Background()
	dir := proto.ForTask(t.TempDir(), "t1")
	stream := &retryStream{}
	st := &proto.Status{}
	w := &turnWatch{dir: dir, st: st, stream: stream, prog: &progress{stream: stream},
		disk: &diskWork{dir: t.TempDir(), every: time.Hour}, timing: proto.Timing{UnreachableTimeout: time.Hour}}
	read := func() proto.Status {
		var got proto.Status
		if err := dir.Read(proto.StatusFile, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	stream.activity = agent.Activity{Retry: &agent.Failure{Class: agent.TransientUnreachable, Reason: "no route"}, RetryAttempt: 2}
	if wd := w.tick(ctx); wd != nil {
		t.Fatalf("gave up at the first retry notice: %+v", wd)
	}
	if got := read(); !got.AgentRetrying || got.Attempt != 2 || got.RetryFailureReason != "no route" {
		t.Fatalf("retrying not published: %+v", got)
	}

	w.unreachableSince = time.Now().Add(-2 * time.Hour) // an earlier turn of this run
	wd := w.tick(ctx)
	if wd == nil || wd.Guard != unreachableGuard || !wd.Since.Equal(w.unreachableSince) {
		t.Fatalf("unreachable for longer than the timeout: got %+v", wd)
	}

	stream.activity = agent.Activity{Work: 1}
	if wd := w.tick(ctx); wd != nil {
		t.Fatalf("gave up on an agent that works again: %+v", wd)
	}
	if got := read(); got.AgentRetrying || got.Attempt != 0 || got.RetryFailureReason != "" {
		t.Fatalf("retrying not cleared: %+v", got)
	}

	// An agent that exits while retrying leaves no retry notice behind.
	stream.activity.Retry = &agent.Failure{Class: agent.TransientUnreachable}
	w.tick(ctx)
	w.endRetry()
	if got := read(); got.AgentRetrying {
		t.Fatalf("retry notice left after the agent exited: %+v", got)
	}
}
