package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// TestLazyCostIsTheBuildersReadOnlyReport: lazy_cost answers what lazy
// cost --json does, for the builder only, and bad input gets a sentence
// that says what to give.
func TestLazyCostIsTheBuildersReadOnlyReport(t *testing.T) {
	dir := testrepo.New(t)
	d, store := repoDispatcher(t, dir)
	ctx := context.Background()
	var ids []string
	for i, u := range []task.Usage{{CostUSD: 2, InputTokens: 100, OutputTokens: 10}, {CostUSD: 0.5, InputTokens: 40, CachedInputTokens: 4, OutputTokens: 4}} {
		parent := ""
		if i > 0 {
			parent = ids[0]
		}
		sn, err := store.Create(task.CreateSpec{Title: []string{"parent", "child"}[i], Parent: parent, Actor: machine.Human})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sn.Task.ID)
		if _, _, err := store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			s.AddTurn(task.Turn{Role: task.RoleAgent, At: time.Now().UTC(), Agent: "codex", Usage: &u})
			s.Task.Usage = &u
			return &task.Op{Name: "test", Actor: machine.System}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	builder := Caller{Actor: machine.Builder}
	out, err := d.Call(ctx, builder, "lazy_cost", json.RawMessage(`{"by":"agent","since":"today","task":"parent"}`))
	if err != nil {
		t.Fatal(err)
	}
	var rep CostOut
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.By != "agent" || rep.Task != "parent" || len(rep.Rows) != 1 || rep.Rows[0].Key != "codex" || rep.Total.CostUSD != 2.5 || rep.Total.Tasks != 2 || rep.Total.Turns == nil || *rep.Total.Turns != 2 {
		t.Fatalf("lazy_cost: %s", out)
	}
	if h := headline("lazy_cost", rep); !strings.HasPrefix(h, "Agent turns cost $2.5000 (140 in, 4 cached, 14 out tokens) over 2 tasks since ") || !strings.Contains(h, "\n- codex: $2.5000") {
		t.Fatalf("headline %q", h)
	}
	out, err = d.Call(ctx, builder, "lazy_cost", json.RawMessage(`{}`))
	if err != nil || !strings.Contains(string(out), `"with_subtasks":{"cost_usd":2.5`) {
		t.Fatalf("by task: %s, %v", out, err)
	}
	// What it answers holds to the output schema the server declares.
	cs := connect(t, fakeBackend{result: string(out)}, false, nil)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "lazy_cost", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.HasPrefix(res.Content[0].(*sdk.TextContent).Text, "Agent turns cost $2.5000") {
		t.Fatalf("through the SDK: %v %+v", err, res)
	}
	for args, want := range map[string]string{
		`{"by":"colour"}`:    `by "colour" is not a breakdown; give one of task, agent, model, day, outcome`,
		`{"since":"sunday"}`: `since "sunday" is not a day; give one such as 2026-05-01`,
	} {
		if _, err := d.Call(ctx, builder, "lazy_cost", json.RawMessage(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("lazy_cost %s: %v", args, err)
		}
	}
	if _, err := d.Call(ctx, Caller{Actor: machine.Agent, Task: ids[0]}, "lazy_cost", json.RawMessage(`{}`)); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("an agent called lazy_cost: %v", err)
	}
}
