package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
)

// lazy_create and lazy_edit share one rule for a target branch: an agent
// (or anyone) cannot create a subtask with a target branch that an edit
// would refuse, nor a task targeting a branch that does not exist.
func TestCreateAndEditShareTheTargetBranchRule(t *testing.T) {
	dir := testrepo.New(t)
	testrepo.Git(t, dir, "branch", "release")
	d, store := repoDispatcher(t, dir)
	human := Caller{Actor: machine.Builder}
	call := func(c Caller, tool, args string) (map[string]any, error) {
		t.Helper()
		out, err := d.Call(context.Background(), c, tool, json.RawMessage(args))
		if err != nil {
			return nil, err
		}
		var m struct {
			Task map[string]any `json:"task"`
		}
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("%s answered %s: %v", tool, out, err)
		}
		return m.Task, nil
	}
	const rule = "a subtask merges into its parent's branch and has no target branch of its own"
	parent, err := call(human, "lazy_create", `{"title":"parent","target_branch":"release"}`)
	if err != nil || parent["target_branch"] != "release" {
		t.Fatalf("a top-level task with a target branch: %v, %v", parent, err)
	}
	pid := parent["id"].(string)
	agent := Caller{Actor: machine.Agent, Task: pid}

	// The agent's subtask, and a human's, with a target branch: refused.
	if _, err := call(agent, "lazy_create", `{"title":"sub","target_branch":"release"}`); err == nil || !strings.Contains(err.Error(), rule) {
		t.Fatalf("an agent's subtask with a target branch: %v", err)
	}
	if _, err := call(human, "lazy_create", `{"title":"sub","parent":"`+pid+`","target_branch":"release"}`); err == nil || !strings.Contains(err.Error(), rule) {
		t.Fatalf("a subtask with a target branch: %v", err)
	}
	// The same rule on edit.
	sub, err := call(agent, "lazy_create", `{"title":"sub"}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call(human, "lazy_edit", `{"task":"`+sub["id"].(string)+`","target_branch":"release"}`); err == nil || !strings.Contains(err.Error(), rule) {
		t.Fatalf("edit of a subtask's target branch: %v", err)
	}
	// A branch that does not exist is refused on both.
	for _, c := range []struct{ tool, args string }{
		{"lazy_create", `{"title":"top","target_branch":"no-such-branch"}`},
		{"lazy_edit", `{"task":"` + pid + `","target_branch":"no-such-branch"}`},
	} {
		if _, err := call(human, c.tool, c.args); err == nil || !strings.Contains(err.Error(), `target branch "no-such-branch" does not exist`) {
			t.Fatalf("%s to a missing branch: %v", c.tool, err)
		}
	}
	if entries, _ := store.List(); len(entries) != 2 {
		t.Fatalf("%d tasks, want the parent and its one subtask", len(entries))
	}
}
