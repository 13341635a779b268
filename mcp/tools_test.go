package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/lazyorch/lazy/attempts"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeBackend answers every call with a fixed result, reporting the
// given progress lines first.
type fakeBackend struct {
	result   string
	progress []string
	pause    time.Duration
}

func (f fakeBackend) Call(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
	for _, p := range f.progress {
		Report(ctx, p)
		time.Sleep(f.pause)
	}
	if f.result == "" {
		return nil, errors.New("no result")
	}
	return json.RawMessage(f.result), nil
}

func connect(t *testing.T, b Backend, agent bool, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	clientIn, clientOut, served := servePipes(t, ctx, b, agent)
	t.Cleanup(func() {
		_ = clientOut.Close() // the server reads EOF and ends
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		cancel()
	})
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, opts).Connect(ctx, &sdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestEveryToolDeclaresAnObjectSchemaHintsAndAnActionableDescription(t *testing.T) {
	for _, agent := range []bool{false, true} {
		cs := connect(t, fakeBackend{}, agent, nil)
		if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "lazy_wait") || agent != strings.Contains(ins, "lazy_journal: before you finish") {
			t.Fatalf("instructions: %q", cs.InitializeResult().Instructions)
		}
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, tl := range res.Tools {
			names[tl.Name] = true
			out, _ := json.Marshal(tl.OutputSchema)
			var o struct{ Type string }
			if json.Unmarshal(out, &o) != nil || o.Type != "object" {
				t.Errorf("%s: output schema %s is not an object", tl.Name, out)
			}
			a := tl.Annotations
			if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil || tl.Title == "" {
				t.Errorf("%s: annotations %+v, title %q", tl.Name, a, tl.Title)
			}
			if a != nil && a.ReadOnlyHint && *a.DestructiveHint {
				t.Errorf("%s is both read-only and destructive", tl.Name)
			}
			if len(tl.Description) < 60 {
				t.Errorf("%s: description %q is too thin to act on", tl.Name, tl.Description)
			}
			if tl.Name == "lazy_show" {
				for _, field := range []string{`"goal"`, `"gate_record"`, `"overlaps"`, `"landed_overlap"`, `"turn_list"`} {
					if !strings.Contains(string(out), field) {
						t.Errorf("lazy_show's output schema lacks %s: %s", field, out)
					}
				}
			}
			if tl.Name == "lazy_queue" && (agent || !strings.Contains(string(out), `"queues"`)) {
				t.Errorf("agent=%v: lazy_queue offered, or its schema lacks queues: %s", agent, out)
			}
			if tl.Name == "lazy_list" {
				in, _ := json.Marshal(tl.InputSchema)
				if !strings.Contains(string(in), `"enum":["backlog","working","blocked"`) {
					t.Errorf("lazy_list's status has no enum: %s", in)
				}
			}
		}
		if names["lazy_update_progress"] != agent || names["lazy_reparent"] == agent || names["lazy_queue"] == agent {
			t.Errorf("agent=%v: tools %v", agent, names)
		}
	}
}

func TestResultsAreObjectsWithAHeadlineAndTheJSON(t *testing.T) {
	cs := connect(t, fakeBackend{result: `{"tasks":[],"count":0}`}, false, nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "lazy_list", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if string(b) != `{"count":0,"tasks":[]}` {
		t.Fatalf("structuredContent %s", b)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if !strings.HasPrefix(text, "No tasks.\n\n{") {
		t.Fatalf("text %q", text)
	}
	// A result that does not match the schema is refused, never passed on.
	cs = connect(t, fakeBackend{result: `{"tasks":null,"count":0}`}, false, nil)
	if res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "lazy_list", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Fatalf("a null list passed: %+v", res)
	}
	// An unknown status is refused by the input schema.
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "lazy_list", Arguments: map[string]any{"status": []string{"done"}}})
	if err == nil && !res.IsError {
		t.Fatal("status done was accepted")
	}
}

func TestProgressReachesAClientThatAskedForIt(t *testing.T) {
	var mu sync.Mutex
	var got []string
	opts := &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, r.Params.Message)
		mu.Unlock()
	}}
	b := fakeBackend{result: `{"task":{"id":"x","slug":"x","title":"x","status":"blocked","category":"blocked","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","sessions":1,"turns":2,"comments":0},"still_running":false}`,
		progress: []string{"x: working (agent: tests)", "x: working (agent: commit)"}, pause: 50 * time.Millisecond}
	cs := connect(t, b, false, opts)
	p := &sdk.CallToolParams{Name: "lazy_wait", Arguments: map[string]any{"task": "x"}}
	p.SetProgressToken("tok")
	if res, err := cs.CallTool(context.Background(), p); err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		all := strings.Join(got, "|")
		mu.Unlock()
		if strings.Contains(all, "agent: tests") || strings.Contains(all, "agent: commit") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress %q", all)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestADetachedRunIsJoinedNotRepeated(t *testing.T) {
	d := &Dispatcher{}
	release := make(chan struct{})
	runs := 0
	op := func(ctx context.Context) (any, error) {
		runs++
		Report(ctx, "step 1")
		<-release
		return "done", nil
	}
	ctx := context.Background()
	_, running, latest, err := d.detached(ctx, "k", 20*time.Millisecond, op)
	if err != nil || !running {
		t.Fatalf("first call: running=%v err=%v", running, err)
	}
	for latest == "" { // the op reports from its goroutine
		_, _, latest, _ = d.detached(ctx, "k", time.Millisecond, op)
	}
	close(release)
	out, running, _, err := d.detached(ctx, "k", 10*time.Second, op)
	if err != nil || running || out != "done" || runs != 1 || latest != "step 1" {
		t.Fatalf("joined: out=%v running=%v runs=%d latest=%q err=%v", out, running, runs, latest, err)
	}
	if len(d.flights) != 0 {
		t.Fatal("a finished run stays registered")
	}
}

// TestShowResultsPassTheirOwnSchema: a lazy_show result with every
// field set (a cut text, overlaps, a gate record) passes the output
// schema the SDK infers and validates; an embedded field two structs
// share would vanish from that schema and fail this.
func TestShowResultsPassTheirOwnSchema(t *testing.T) {
	out := ShowOut{
		Detail: task.Detail{
			Summary:           task.Summary{ID: "0123456789abcdef", Slug: "a", Title: "A", Status: "blocked", Category: "blocked", CreatedAt: "2026-12-06T04:00:00Z", UpdatedAt: "2026-12-06T04:00:00Z"},
			Truncated:         []string{"its goal was cut"},
			PendingViolations: []string{}, TurnList: []task.Turn{}, CommentList: []task.Comment{}, Journal: []task.Comment{}, History: []task.Change{},
			GateRecord: &task.GateRecord{Runs: []task.GateRun{{ID: "r1", Commands: []task.GateCommand{{Cmd: "make", Exit: 2}}}}},
		},
		Overlaps: map[string][]string{"b": {"x.go"}}, LandedOverlap: []string{"y.go"}, OverlapsTruncated: true,
		Attempts: []attempts.Attempt{{K: 1, ID: "0123456789abcdef", Slug: "a-a1", Agent: "codex", Model: "gpt-5-codex", Status: "blocked",
			Usage: &task.Usage{InputTokens: 5}, Gate: &task.GateSummary{State: "passed"}, Diff: &worktree.DiffStat{Files: 1, Additions: 2}}},
		AttemptsUsage: &task.Usage{InputTokens: 5}, AttemptChosen: 1,
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, fakeBackend{result: string(b)}, false, nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "lazy_show", Arguments: map[string]any{"task": "a"}})
	if err != nil || res.IsError {
		t.Fatalf("lazy_show: %v %+v", err, res)
	}
}

// approved_files is the spec's name and approve_files its alias: either
// alone is the list, both must name the same files (in any order, any
// repeats), and both naming different files is refused.
func TestUnblockApprovedFilesAlias(t *testing.T) {
	for _, c := range []struct {
		in   UnblockIn
		want []string
		err  bool
	}{
		{in: UnblockIn{}, want: nil},
		{in: UnblockIn{ApprovedFiles: []string{"a"}}, want: []string{"a"}},
		{in: UnblockIn{ApproveFiles: []string{"b"}}, want: []string{"b"}},
		{in: UnblockIn{ApprovedFiles: []string{"a", "b"}, ApproveFiles: []string{"b", "a", "a"}}, want: []string{"a", "b"}},
		{in: UnblockIn{ApprovedFiles: []string{"a"}, ApproveFiles: []string{"b"}}, err: true},
		{in: UnblockIn{ApprovedFiles: []string{"a"}, ApproveFiles: []string{"a", "b"}}, err: true},
	} {
		got, err := c.in.approved()
		if c.err != (err != nil) || !slices.Equal(got, c.want) {
			t.Errorf("%+v: got %q, %v", c.in, got, err)
		}
	}
}
