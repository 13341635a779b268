package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// shape reduces a JSON value to its keys and value kinds: the contract a
// script or an LLM relies on, without the values. An array's shape is
// the union of its elements' shapes; an empty array is [].
func shape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = shape(e)
		}
		return out
	case []any:
		if len(x) == 0 {
			return []any{}
		}
		var u any
		for _, e := range x {
			u = union(u, shape(e))
		}
		return []any{u}
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return "?"
}

// union merges two shapes: objects by key, anything else keeps the
// first (a key whose kind differs between elements shows its first kind).
func union(a, b any) any {
	if a == nil {
		return b
	}
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if !okA || !okB {
		if la, ok := a.([]any); ok && len(la) == 0 {
			return b
		}
		return a
	}
	out := map[string]any{}
	for k, v := range ma {
		out[k] = v
	}
	for k, v := range mb {
		out[k] = union(out[k], v)
	}
	return out
}

func shapeJSON(t *testing.T, raw string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	return shape(v)
}

// golden compares got with testdata/name; LAZY_UPDATE_GOLDEN=1 rewrites
// the file instead.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	path := filepath.Join("testdata", name)
	if os.Getenv("LAZY_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (LAZY_UPDATE_GOLDEN=1 writes it)", err)
	}
	if string(want) != string(b) {
		t.Fatalf("the JSON shape of %s changed (LAZY_UPDATE_GOLDEN=1 rewrites it if that is intended):\ngot  %s\nwant %s", name, b, want)
	}
}

func keys(m any) []string {
	var out []string
	if mm, ok := m.(map[string]any); ok {
		for k := range mm {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// TestShowAndListShapesAreGoldenAndShared pins the JSON shape of show
// and list, and proves the CLI's --json and the MCP tools share it:
// hashes are strings, lists are [] and never null.
func TestShowAndListShapesAreGoldenAndShared(t *testing.T) {
	r := newRepo(t)
	r = r.with(script(t, "write shape.txt shaped", "commit agent: shape", "print shaped"))
	tk := r.create("Shape task", "-m", "a goal")
	empty := r.create("Shape empty task")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	r.ok("comment", tk.Slug, "-m", "a comment")
	s, _ := mcpClient(t, r, nil, "mcp")
	call(t, s, "lazy_journal", map[string]any{"task": tk.Slug, "rationale": "why", "decisions": []string{"d"}, "deferrals": []string{}}, false)

	cliShow := shapeJSON(t, r.ok("show", "--json", tk.Slug))
	golden(t, "show.shape.json", cliShow)
	mcpShow := shapeJSON(t, call(t, s, "lazy_show", map[string]any{"task": tk.Slug}, false))
	if a, b := jsonText(t, cliShow), jsonText(t, mcpShow); a != b {
		t.Fatalf("lazy show --json and lazy_show differ:\ncli %s\nmcp %s", a, b)
	}
	// A task with nothing in it still has [] lists.
	bare := shapeJSON(t, r.ok("show", "--json", empty.Slug)).(map[string]any)
	for _, k := range []string{"turn_list", "comment_list", "journal", "pending_violations", "history"} {
		if _, ok := bare[k].([]any); !ok {
			t.Fatalf("show --json of a new task: %s is %v, want a list", k, bare[k])
		}
	}
	bareMCP := shapeJSON(t, call(t, s, "lazy_show", map[string]any{"task": empty.Slug}, false)).(map[string]any)
	if jsonText(t, bareMCP["comment_list"]) != "[]" || jsonText(t, bareMCP["turn_list"]) != "[]" {
		t.Fatalf("lazy_show of a new task: %v", bareMCP)
	}

	cliList := shapeJSON(t, r.ok("list", "--json"))
	golden(t, "list.shape.json", cliList)
	mcpList := shapeJSON(t, call(t, s, "lazy_list", nil, false)).(map[string]any)
	if got := keys(mcpList); len(got) != 2 || got[0] != "count" || got[1] != "tasks" {
		t.Fatalf("lazy_list keys %v, want count and tasks", got)
	}
	if a, b := jsonText(t, cliList), jsonText(t, mcpList["tasks"]); a != b {
		t.Fatalf("lazy list --json and lazy_list's tasks differ:\ncli %s\nmcp %s", a, b)
	}
}

func jsonText(t *testing.T, v any) string { t.Helper(); return string(mustJSON(t, v)) }
