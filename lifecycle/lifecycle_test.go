package lifecycle

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

func TestCreateTitleRules(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	sn, err := e.Lifecycle().Create(ctx, CreateInput{Title: "first line\nsecond line", Goal: "body"})
	if err != nil {
		t.Fatal(err)
	}
	goal, _ := sn.Goal()
	if sn.Task.Title != "first line" || goal != "second line\n\nbody" {
		t.Fatalf("title %q goal %q: text after the title's line break must move to the goal", sn.Task.Title, goal)
	}
	long := strings.Repeat("w", session.MaxTitle+50)
	sn, err = e.Lifecycle().Create(ctx, CreateInput{Goal: long})
	if err != nil {
		t.Fatal(err)
	}
	goal, _ = sn.Goal()
	if !strings.HasSuffix(sn.Task.Title, "...") || goal != long {
		t.Fatalf("a long one-line description must keep its full text in the goal (title %d runes, goal %d bytes)", len(sn.Task.Title), len(goal))
	}
	if _, err := e.Lifecycle().Create(ctx, CreateInput{Title: "   "}); err == nil {
		t.Fatal("blank title accepted")
	}
	sn, err = e.Lifecycle().Create(ctx, CreateInput{Title: "x", AllowedPaths: []string{"src/\x00*.go"}})
	if err != nil || sn.Task.AllowedPaths[0] != `src/\u0000*.go` || strings.Contains(sn.Task.AllowedPaths[0], sanitize.Note) {
		t.Fatalf("allowed paths are escaped without the note: %q %v", sn.Task.AllowedPaths, err)
	}
	parent, _ := e.Lifecycle().Create(ctx, CreateInput{Title: "parent"})
	if _, err := e.Lifecycle().Close(ctx, parent.Task.Slug, "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Lifecycle().Create(ctx, CreateInput{Title: "child", Parent: parent.Task.Slug}); err == nil || !strings.Contains(err.Error(), "reopen it") {
		t.Fatalf("subtask of an abandoned parent: %v", err)
	}
}

func TestReopenWithAgentWorkGoesToBlocked(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	sn, _ := e.Lifecycle().Create(ctx, CreateInput{Title: "worked on"})
	walk(t, e, sn.Task.ID, machine.Working, machine.Blocked)
	got, err := e.Lifecycle().Reject(ctx, sn.Task.Slug, "wrong approach")
	if err != nil {
		t.Fatal(err)
	}
	if got.Task.Outcome != task.OutcomeRejected || got.Session.EndedAt == nil {
		t.Fatalf("after reject: %+v session %+v", got.Task, got.Session)
	}
	got, err = e.Lifecycle().Reopen(ctx, sn.Task.Slug, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.Task.Status != machine.Blocked || got.Session.EndedAt != nil {
		t.Fatalf("reopen of rejected work: %s, session %+v", got.Task.Status, got.Session)
	}
}

func TestReopenAcceptedNeedsReason(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	sn, _ := e.Lifecycle().Create(ctx, CreateInput{Title: "accepted"})
	walk(t, e, sn.Task.ID, machine.Working, machine.Blocked, machine.Merging, machine.Complete)
	if _, err := e.Lifecycle().Reopen(ctx, sn.Task.Slug, ""); err == nil || !strings.Contains(err.Error(), "--reason") {
		t.Fatalf("reopen without reason: %v", err)
	}
	got, err := e.Lifecycle().Reopen(ctx, sn.Task.Slug, "regressed in prod")
	if err != nil || got.Task.Status != machine.Blocked || got.Task.Reason != "regressed in prod" {
		t.Fatalf("reopen with reason: %+v %v", got, err)
	}
	// Closing a working task is refused by the state machine.
	walk(t, e, sn.Task.ID, machine.Working)
	if _, err := e.Lifecycle().Close(ctx, sn.Task.Slug, ""); !errors.Is(err, machine.ErrTransition) || !strings.Contains(err.Error(), "lazy stop") {
		t.Fatalf("close while working: %v", err)
	}
}

func TestTaskLockSerializesOperations(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	sn, _ := e.Lifecycle().Create(ctx, CreateInput{Title: "locked"})
	unlock, err := e.LockTask(ctx, sn.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50_000_000) // 50 ms
	defer cancel()
	if _, _, err := e.Lifecycle().Comment(short, sn.Task.Slug, "x"); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("comment while the task lock is held: %v", err)
	}
	unlock()
	if _, _, err := e.Lifecycle().Comment(ctx, sn.Task.Slug, "x"); err != nil {
		t.Fatal(err)
	}
}

func TestResumePromptRedeliversEveryPendingMessageVerbatim(t *testing.T) {
	turns := []task.Turn{
		{Seq: 1, Content: "first", FeedbackDelivery: task.FeedbackConsumed},
		{Seq: 2, Kind: "unblock", Content: "older pending", FeedbackDelivery: task.FeedbackPending},
		{Seq: 3, Content: "agent reply"},
		{Seq: 4, Kind: "unblock", Content: "newest\n  pending, exactly", FeedbackDelivery: task.FeedbackPending},
		{Seq: 5, Kind: "ask", Content: "a question", FeedbackDelivery: task.FeedbackPending},
		{Seq: 6, Content: "[system] resumed"},
	}
	pending := session.PendingBefore(turns, 7, "resume")
	if len(pending) != 3 {
		t.Fatalf("a work turn delivers every pending message, questions too: %+v", pending)
	}
	p := ResumePrompt(false, "t", pending[:2])
	if !strings.HasPrefix(p, ResumeClean) || !strings.Contains(p, "verbatim:\n\nnewest\n  pending, exactly\n\n---") || !strings.Contains(p, "[turn 2: feedback from human]\nolder pending") {
		t.Fatalf("prompt %q", p)
	}
	if p := ResumePrompt(true, "t", nil); p != ResumeDirty {
		t.Fatalf("nothing pending: %q", p)
	}
	if asks := session.PendingBefore(turns, 7, "ask"); len(asks) != 1 || asks[0].Seq != 5 {
		t.Fatalf("an ask delivers the pending questions only: %+v", asks)
	}
	if none := session.PendingBefore(turns, 7, "sync"); len(none) != 0 {
		t.Fatalf("a sync delivers nothing: %+v", none)
	}
	if session.PendingBefore(turns, 4, "unblock")[0].Seq != 2 || len(session.PendingBefore(turns, 4, "unblock")) != 1 {
		t.Fatalf("a turn delivers only what was pending before it")
	}
}

// A create with a request id is idempotent per caller: a repeat (a
// retried MCP call) gets the first call's task, concurrent repeats make
// one task, and another caller's same id is another create.
func TestCreateWithARequestIDIsIdempotentPerCaller(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	in := CreateInput{Title: "made once", RequestID: "3f6c-retry"}
	var wg sync.WaitGroup
	ids := make([]string, 4)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sn, err := e.Lifecycle().Create(ctx, in)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = sn.Task.ID
		}()
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("one request id made several tasks: %v", ids)
		}
	}
	if entries, _ := e.Store.List(); len(entries) != 1 {
		t.Fatalf("%d tasks after four creates with one request id", len(entries))
	}
	other := &testEnv{session.Env{Store: e.Store, Repo: e.Repo, Actor: machine.Agent, CallerTask: ids[0]}}
	sn, err := other.Lifecycle().Create(ctx, in)
	if err != nil || sn.Task.ID == ids[0] {
		t.Fatalf("another caller's create with the same request id: %v, %v", sn, err)
	}
	if sn, err := e.Lifecycle().Create(ctx, CreateInput{Title: "no id"}); err != nil || sn.Task.ID == ids[0] {
		t.Fatalf("a create without a request id: %v", err)
	}
	if _, err := e.Lifecycle().Create(ctx, CreateInput{Title: "bad id", RequestID: "a\x00b"}); err == nil {
		t.Fatal("a request id with a NUL was taken")
	}
}
