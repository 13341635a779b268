package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpClient connects the SDK's own client to a lazy MCP server command.
func mcpClient(t *testing.T, r *runner, extraEnv []string, args ...string) (*sdk.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(r.lazy(), args...)
	cmd.Dir = r.dir
	cmd.Env = append(r.environ(), extraEnv...)
	cmd.Stderr = os.Stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "lazy-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to lazy %v: %v", args, err)
	}
	t.Cleanup(func() { _ = session.Close() })
	return session, cmd
}

// call calls a tool; wantErr says whether it must fail. It returns the
// result text.
func call(t *testing.T, s *sdk.ClientSession, tool string, args map[string]any, wantErr bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError != wantErr {
		t.Fatalf("%s(%v): error=%v, want %v: %s", tool, args, res.IsError, wantErr, text.String())
	}
	if wantErr {
		return text.String()
	}
	// A result is an object (MCP requires it), and its text content
	// carries the same JSON after a readable headline.
	b, err := json.Marshal(res.StructuredContent)
	if err != nil || len(b) == 0 || b[0] != '{' {
		t.Fatalf("%s: structuredContent %s is not an object (%v)", tool, b, err)
	}
	if !strings.Contains(text.String(), "{") {
		t.Fatalf("%s: the text content lacks the JSON: %q", tool, text.String())
	}
	return string(b)
}

func decodeInto(t *testing.T, text string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(text), v); err != nil {
		t.Fatalf("decode %q: %v", text, err)
	}
}

func toolNames(t *testing.T, s *sdk.ClientSession) map[string]bool {
	t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range res.Tools {
		names[tl.Name] = true
		if tl.Description == "" || tl.InputSchema == nil {
			t.Fatalf("tool %s lacks a description or schema", tl.Name)
		}
	}
	return names
}

func TestBuilderDrivesEveryToolOverMCP(t *testing.T) {
	r := newRepo(t)
	counter := filepath.Join(t.TempDir(), "runs")
	r = r.with(script(t, "attempt "+counter, "when 1 write feature.txt built over mcp", "when 1 commit agent: feature", "print turn done"))
	s, _ := mcpClient(t, r, nil, "mcp")
	names := toolNames(t, s)
	for _, want := range []string{"lazy_create", "lazy_start", "lazy_unblock", "lazy_ask", "lazy_wait", "lazy_accept", "lazy_reject", "lazy_close", "lazy_show", "lazy_list", "lazy_comment"} {
		if !names[want] {
			t.Fatalf("builder server lacks %s: %v", want, names)
		}
	}
	if names["lazy_update_progress"] {
		t.Fatal("the builder got the agent-only progress tool")
	}

	var created struct {
		Task struct {
			ID, Slug, Status string
			AllowedPaths     []string `json:"allowed_paths"`
		} `json:"task"`
	}
	decodeInto(t, call(t, s, "lazy_create", map[string]any{"title": "Over MCP", "goal": "goal with a \x00 NUL", "allowed_paths": []string{"feature.txt", "a\x01b"}}, false), &created)
	tk := created.Task
	if tk.Status != "backlog" || len(tk.AllowedPaths) != 2 || tk.AllowedPaths[1] != `a\u0001b` {
		t.Fatalf("created %+v (array elements are escaped without a note)", tk)
	}
	full := r.showFull(tk.Slug)
	if !strings.Contains(full.Goal, `goal with a \u0000 NUL`) || !strings.Contains(full.Goal, "control character") {
		t.Fatalf("goal not sanitized with its note: %q", full.Goal)
	}
	call(t, s, "lazy_start", map[string]any{"task": tk.Slug, "command": fakeAgentBin}, false)
	var waited struct {
		Task     struct{ Status string }  `json:"task"`
		LastTurn struct{ Content string } `json:"last_turn"`
	}
	decodeInto(t, call(t, s, "lazy_wait", map[string]any{"task": tk.Slug}, false), &waited)
	if waited.Task.Status != "blocked" || !strings.Contains(waited.LastTurn.Content, "turn done") {
		t.Fatalf("wait: %+v", waited)
	}
	var asked struct{ Answer, Status string }
	decodeInto(t, call(t, s, "lazy_ask", map[string]any{"task": tk.Slug, "question": "what did you do?"}, false), &asked)
	if asked.Status != "blocked" || !strings.Contains(asked.Answer, "turn done") {
		t.Fatalf("ask: %+v", asked)
	}
	call(t, s, "lazy_unblock", map[string]any{"task": tk.Slug, "feedback": "one more pass"}, false)
	call(t, s, "lazy_wait", map[string]any{"task": tk.Slug}, false)
	call(t, s, "lazy_comment", map[string]any{"task": tk.Slug, "text": "looks good"}, false)
	var shown struct {
		Comments int                     `json:"comments"`
		Turns    []struct{ Kind string } `json:"turn_list"`
	}
	decodeInto(t, call(t, s, "lazy_show", map[string]any{"task": tk.Slug}, false), &shown)
	if shown.Comments != 1 || len(shown.Turns) < 6 {
		t.Fatalf("show: %+v", shown)
	}
	var listed struct {
		Tasks []struct{ Slug, Status string } `json:"tasks"`
	}
	decodeInto(t, call(t, s, "lazy_list", map[string]any{"status": []string{"blocked"}}, false), &listed)
	if len(listed.Tasks) != 1 || listed.Tasks[0].Slug != tk.Slug {
		t.Fatalf("list: %+v", listed)
	}
	call(t, s, "lazy_accept", map[string]any{"task": tk.Slug}, false)
	if got := r.git("show", "main:feature.txt"); got != "built over mcp" {
		t.Fatalf("accept over MCP: main:feature.txt = %q", got)
	}
	var closed struct {
		Task struct{ Status string } `json:"task"`
	}
	decodeInto(t, call(t, s, "lazy_create", map[string]any{"title": "Never mind"}, false), &created)
	decodeInto(t, call(t, s, "lazy_close", map[string]any{"task": created.Task.Slug, "reason": "duplicate"}, false), &closed)
	if closed.Task.Status != "abandoned" {
		t.Fatalf("close: %+v", closed)
	}
	call(t, s, "lazy_reject", map[string]any{"task": created.Task.Slug}, true) // already abandoned
	call(t, s, "lazy_show", map[string]any{"task": "../../etc/passwd"}, true)

	// The channel is the actor: every transition over MCP is builder.
	for _, h := range r.showFull("over-mcp").History {
		if h.Op != "reconcile" && h.Actor != "builder" {
			t.Fatalf("history entry %+v not by builder", h)
		}
	}
}

// agentWithToken starts a task whose fake agent saves its MCP token and
// then hangs, and returns the task and the token.
func agentWithToken(t *testing.T, r *runner, title string, extra ...string) (task, string) {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	rr := r.with(script(t, "getenv LAZY_MCP_TOKEN "+tokenFile, "print holding the token", "hang"))
	tk := rr.create(append([]string{title}, extra...)...)
	rr.ok("start", tk.Slug, "--command", fakeAgentBin)
	// The agent hangs holding its token: the test's end stops it, or it
	// would outlive the test (whatever state the test left the task in).
	t.Cleanup(func() { rr.run(nil, "stop", tk.Slug) })
	waitFile(t, tokenFile)
	b, err := os.ReadFile(tokenFile)
	if err != nil || !strings.HasPrefix(string(b), "lazy_") {
		t.Fatalf("token %q: %v", b, err)
	}
	return tk, string(b)
}

func TestAgentToolsAreScopedByToken(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	grand := workedTask(t, r, "grandparent", "g.txt g")
	a, token := agentWithToken(t, r, "agent a", "--parent", grand.Slug)
	other := r.create("unrelated")
	s, _ := mcpClient(t, r, []string{"LAZY_MCP_TOKEN=" + token}, "mcp-proxy")
	if !toolNames(t, s)["lazy_update_progress"] {
		t.Fatal("the agent lacks lazy_update_progress")
	}
	// Its own task: readable; not drivable, not acceptable.
	call(t, s, "lazy_show", map[string]any{"task": a.Slug}, false)
	// Also as a resource; a task that does not exist is MCP's
	// resource-not-found, though the answer crossed the daemon as text
	// (invalid params with the uri since SEP-2164, as the SDK answers it).
	if res, err := s.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "lazy://task/" + a.Slug}); err != nil || !strings.Contains(res.Contents[0].Text, a.ID) {
		t.Fatalf("the agent reads its own task as a resource: %v", err)
	}
	var we *jsonrpc.Error
	if _, err := s.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "lazy://task/no-such-task"}); !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(string(we.Data), "no-such-task") {
		t.Fatalf("reading a task that does not exist through the proxy: %v, want resource-not-found (-32602 with its uri, SEP-2164)", err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"lazy_accept", map[string]any{"task": a.Slug}},
		// Deliberately stricter than the spec's own-task-or-child gate
		// (docs/spec-deviations.md): its own task runs this very turn.
		{"lazy_start", map[string]any{"task": a.Slug}},
		{"lazy_unblock", map[string]any{"task": a.Slug, "feedback": "go on"}},
		{"lazy_ask", map[string]any{"task": a.Slug, "question": "why?"}},
		{"lazy_wait", map[string]any{"task": a.Slug}},
		{"lazy_reject", map[string]any{"task": a.Slug}},
		{"lazy_close", map[string]any{"task": a.Slug}},
		{"lazy_show", map[string]any{"task": other.Slug}},
		{"lazy_comment", map[string]any{"task": other.Slug, "text": "hi"}},
		{"lazy_show", map[string]any{"task": grand.Slug}},
		{"lazy_close", map[string]any{"task": grand.Slug}},
		{"lazy_create", map[string]any{"title": "elsewhere", "parent": other.Slug}},
	} {
		if msg := call(t, s, c.tool, c.args, true); !strings.Contains(msg, "scope") {
			t.Fatalf("%s %v: %s", c.tool, c.args, msg)
		}
	}
	var listed struct {
		Tasks []struct{ ID string } `json:"tasks"`
	}
	decodeInto(t, call(t, s, "lazy_list", nil, false), &listed)
	if len(listed.Tasks) != 1 || listed.Tasks[0].ID != a.ID {
		t.Fatalf("an agent's list shows more than its own subtree: %+v", listed)
	}

	// A subtask, driven and accepted by its parent's agent.
	childScript := filepath.Join(t.TempDir(), "child-script")
	childRuns := filepath.Join(t.TempDir(), "child-runs")
	if err := os.WriteFile(childScript, []byte("attempt "+childRuns+"\nwhen 1 write child.txt from the child\nwhen 1 commit agent: child\nsleep 1500ms\nprint child finished\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var created struct {
		Task struct{ ID, Slug, Parent string } `json:"task"`
	}
	decodeInto(t, call(t, s, "lazy_create", map[string]any{"title": "sub of a"}, false), &created)
	child := created.Task
	if child.Parent != a.ID {
		t.Fatalf("the subtask's parent is %q, want %s", child.Parent, a.ID)
	}
	call(t, s, "lazy_start", map[string]any{"task": child.Slug, "command": "env FAKE_AGENT_SCRIPT=" + childScript + " " + fakeAgentBin}, false)

	res := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "lazy_wait", Arguments: map[string]any{"task": child.Slug}})
		if err != nil || out.IsError {
			res <- "error"
			return
		}
		res <- out.Content[0].(*sdk.TextContent).Text
	}()
	// While it waits, every surface says so.
	live := r.waitUntil(a.Slug, "showed the wait", func(s showFull) bool { return strings.Contains(s.Live, "waiting on "+child.Slug+" (") })
	if !strings.Contains(r.ok("list"), "working (waiting on "+child.Slug) {
		t.Fatalf("list does not show the wait (show said %q)", live.Live)
	}
	if got := <-res; !strings.Contains(got, `"status":"blocked"`) {
		t.Fatalf("wait result %s", got)
	}
	if s := r.showFull(a.Slug); strings.Contains(s.Live, "waiting") {
		t.Fatalf("the wait marker outlived the wait: %q", s.Live)
	}
	ivs := readIntervals(t, r)
	if len(ivs) != 1 || ivs[0].On != child.ID || ivs[0].Outcome == nil || *ivs[0].Outcome != "completed" {
		t.Fatalf("intervals %+v", ivs)
	}

	// Progress: collapsed, capped, latest wins.
	var p struct {
		Recorded  string
		Truncated bool
		Note      string
	}
	decodeInto(t, call(t, s, "lazy_update_progress", map[string]any{"message": "  running\n migration   3/7 "}, false), &p)
	if p.Recorded != "running migration 3/7" || p.Truncated {
		t.Fatalf("progress %+v", p)
	}
	if got := r.showFull(a.Slug).Live; got != "agent: running migration 3/7" {
		t.Fatalf("substate %q", got)
	}
	decodeInto(t, call(t, s, "lazy_update_progress", map[string]any{"message": strings.Repeat("x", 300)}, false), &p)
	if !p.Truncated || len([]rune(p.Recorded)) != 120 || !strings.Contains(p.Note, "truncated") {
		t.Fatalf("long progress %+v", p)
	}

	// The next command clears the line: a new turn starts with none.
	progress := filepath.Join(r.dir, ".git", "lazy", "proto", child.ID, "progress.json")
	if err := os.WriteFile(progress, []byte(`{"pid":1,"message":"stale"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	call(t, s, "lazy_unblock", map[string]any{"task": child.Slug, "feedback": "one more"}, false)
	if _, err := os.Stat(progress); !os.IsNotExist(err) {
		t.Fatalf("the next command kept the old progress line: %v", err)
	}
	call(t, s, "lazy_wait", map[string]any{"task": child.Slug}, false)

	call(t, s, "lazy_accept", map[string]any{"task": child.Slug}, false)
	if got := r.git("show", "lazy/"+a.Slug+":child.txt"); got != "from the child" {
		t.Fatalf("the child's work is not on its parent's branch: %q", got)
	}
	cs := r.showFull(child.Slug)
	if last := cs.History[len(cs.History)-1]; cs.Status != "complete" || last.Actor != "agent" {
		t.Fatalf("child %s by %+v", cs.Status, last)
	}

	// A bad token gets nothing; the real one dies with its turn.
	bad, _ := mcpClient(t, r, []string{"LAZY_MCP_TOKEN=lazy_" + strings.Repeat("0", 64)}, "mcp-proxy")
	if msg := call(t, bad, "lazy_show", map[string]any{"task": a.Slug}, true); !strings.Contains(msg, "token") {
		t.Fatalf("bad token: %s", msg)
	}
	r.ok("stop", a.Slug)
	if msg := call(t, s, "lazy_show", map[string]any{"task": a.Slug}, true); !strings.Contains(msg, "token") {
		t.Fatalf("a stopped turn's token still works: %s", msg)
	}
}

type interval struct {
	Task, On string
	EndedAt  *time.Time `json:"ended_at"`
	Outcome  *string    `json:"outcome"`
}

func readIntervals(t *testing.T, r *runner) []interval {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, ".git", "lazy", "waits", "intervals.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*interval{}
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l struct {
			Event, ID, Task, On, Outcome string
			At                           time.Time
		}
		decodeInto(t, line, &l)
		switch l.Event {
		case "start":
			byID[l.ID] = &interval{Task: l.Task, On: l.On}
			order = append(order, l.ID)
		case "end":
			at, oc := l.At, l.Outcome
			byID[l.ID].EndedAt, byID[l.ID].Outcome = &at, &oc
		}
	}
	var out []interval
	for _, id := range order {
		out = append(out, *byID[id])
	}
	return out
}

func TestWaitOutlivesItsClientAndDiesWithTheDaemon(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	a, token := agentWithToken(t, r, "waiter")
	childScript := filepath.Join(t.TempDir(), "child-script")
	if err := os.WriteFile(childScript, []byte("print child working\nsleep 2s\nprint child done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, proxy := mcpClient(t, r, []string{"LAZY_MCP_TOKEN=" + token}, "mcp-proxy")
	var created struct {
		Task struct{ Slug string } `json:"task"`
	}
	decodeInto(t, call(t, s, "lazy_create", map[string]any{"title": "slow child"}, false), &created)
	child := created.Task
	call(t, s, "lazy_start", map[string]any{"task": child.Slug, "command": "env FAKE_AGENT_SCRIPT=" + childScript + " " + fakeAgentBin}, false)
	go func() {
		_, _ = s.CallTool(context.Background(), &sdk.CallToolParams{Name: "lazy_wait", Arguments: map[string]any{"task": child.Slug}})
	}()
	r.waitUntil(a.Slug, "showed the wait", func(s showFull) bool { return strings.Contains(s.Live, "waiting on "+child.Slug) })
	// The client goes away mid-wait: the daemon finishes the wait anyway
	// and settles its marker when the child's turn ends.
	_ = proxy.Process.Kill()
	r.waitStatus(child.Slug, "blocked")
	r.waitUntil(a.Slug, "cleared the wait", func(s showFull) bool { return !strings.Contains(s.Live, "waiting") })
	deadline := time.Now().Add(20 * time.Second)
	for {
		ivs := readIntervals(t, r)
		if len(ivs) == 1 && ivs[0].Outcome != nil && *ivs[0].Outcome == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the abandoned wait was never settled: %+v", ivs)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A SIGKILLed daemon leaves a marker nobody believes.
	s2, _ := mcpClient(t, r, []string{"LAZY_MCP_TOKEN=" + token}, "mcp-proxy")
	call(t, s2, "lazy_unblock", map[string]any{"task": child.Slug, "feedback": "again"}, false)
	go func() {
		_, _ = s2.CallTool(context.Background(), &sdk.CallToolParams{Name: "lazy_wait", Arguments: map[string]any{"task": child.Slug}})
	}()
	r.waitUntil(a.Slug, "showed the second wait", func(s showFull) bool { return strings.Contains(s.Live, "waiting on "+child.Slug) })
	info := r.daemonInfo()
	if err := syscall.Kill(info.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, info.PID)
	if _, err := os.Stat(filepath.Join(r.dir, ".git", "lazy", "proto", a.ID, "waiting.json")); err != nil {
		t.Fatalf("the marker should still be on disk (the daemon died holding it): %v", err)
	}
	if live := r.showFull(a.Slug).Live; strings.Contains(live, "waiting") {
		t.Fatalf("a dead daemon's wait is still shown: %q", live)
	}
	if ivs := readIntervals(t, r); len(ivs) != 2 || ivs[1].EndedAt != nil {
		t.Fatalf("the interrupted wait should read back open: %+v", ivs)
	}

	// A clean daemon stop clears what it owns.
	r.waitStatus(child.Slug, "blocked")
	r.ok("daemon", "--ensure")
	s3, _ := mcpClient(t, r, []string{"LAZY_MCP_TOKEN=" + token}, "mcp-proxy")
	call(t, s3, "lazy_update_progress", map[string]any{"message": "about to be stopped"}, false)
	progress := filepath.Join(r.dir, ".git", "lazy", "proto", a.ID, "progress.json")
	waitFile(t, progress)
	r.ok("daemon", "--stop")
	deadline = time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(progress); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a clean daemon stop left its progress marker")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.ok("stop", a.Slug)
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not die", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A client that sends a call and goes away at once (stdin closed): lazy
// mcp finishes the call rather than cut it between its steps, and a
// create repeated with its request_id makes no second task.
func TestLazyMcpFinishesACallWhoseClientLeft(t *testing.T) {
	r := newRepo(t)
	tk := r.create("started by a client that left")
	t.Cleanup(func() { killTurns(r) })
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lazy_create","arguments":{"title":"once only","request_id":"req-42"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lazy_start","arguments":{"task":"` + tk.Slug + `","agent":"exec","command":"` + fakeAgentBin + `"}}}`,
	}
	for i := 0; i < 2; i++ {
		res := r.with(script(t, "print started")).run([]byte(strings.Join(lines, "\n")+"\n"), "mcp")
		if res.Code != 0 || strings.Contains(res.Stderr, "detached") {
			t.Fatalf("lazy mcp: %s", res)
		}
		lines = lines[:3] // the second client only repeats the create
	}
	if st := r.waitStatus(tk.Slug, "blocked").Status; st != "blocked" {
		t.Fatalf("the start the client left behind: %s", st)
	}
	n := 0
	for _, x := range r.list() {
		if x.Title == "once only" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d tasks from one request_id", n)
	}
}

// TestMCPIntakeEscapesSpoofingRunes sends bidi overrides and terminal
// escapes through the official Go SDK client: what an agent or a builder
// writes over MCP must come back, over MCP and on the terminal, with each
// of them visibly escaped (issue 29).
func TestMCPIntakeEscapesSpoofingRunes(t *testing.T) {
	r := newRepo(t)
	s, _ := mcpClient(t, r, nil, "mcp")
	evil := "invoice\u202egpj.exe \x1b]8;;http://evil\x07link\u2066"
	var created struct {
		Task struct{ Slug, Title string } `json:"task"`
	}
	decodeInto(t, call(t, s, "lazy_create", map[string]any{"title": "Spoof " + evil, "goal": "goal " + evil}, false), &created)
	call(t, s, "lazy_comment", map[string]any{"task": created.Task.Slug, "text": "comment " + evil}, false)
	outputs := map[string]string{
		"lazy_show":        call(t, s, "lazy_show", map[string]any{"task": created.Task.Slug}, false),
		"lazy_list":        call(t, s, "lazy_list", map[string]any{}, false),
		"lazy show":        r.ok("show", created.Task.Slug),
		"lazy show --json": r.ok("show", "--json", created.Task.Slug),
	}
	for where, out := range outputs {
		for _, bad := range []rune{0x202e, 0x2066, 0x1b, 0x07} {
			if strings.ContainsRune(out, bad) {
				t.Errorf("%s returned U+%04X raw", where, bad)
			}
		}
		if !strings.Contains(out, `\u202e`) {
			t.Errorf("%s does not show the override escaped:\n%s", where, out)
		}
	}
	if !strings.Contains(outputs["lazy_show"], "comment invoice") || !strings.Contains(outputs["lazy_show"], "goal invoice") {
		t.Errorf("lazy_show lacks the goal or the comment:\n%s", outputs["lazy_show"])
	}
}

// lazy_unblock takes the spec's approved_files and keeps approve_files
// as its alias, through the official Go SDK client: each name keeps the
// file it names and reverts the other pending ones, and both names at
// once must agree, or nothing is decided.
func TestUnblockTakesApprovedFilesAndItsAlias(t *testing.T) {
	r := newRepo(t)
	counter := filepath.Join(t.TempDir(), "runs")
	r = r.with(script(t, "attempt "+counter,
		"when 1 write src/ok.go package ok",
		"when 1 write keep.txt keep me",
		"when 1 write drop.txt drop me",
		"when 1 commit agent: edits inside and outside src",
		"print turn done"))
	s, _ := mcpClient(t, r, nil, "mcp")
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name != "lazy_unblock" {
			continue
		}
		schema, _ := json.Marshal(tl.InputSchema)
		for _, want := range []string{`"approved_files"`, `"approve_files"`, "alias"} {
			if !strings.Contains(string(schema)+tl.Description, want) {
				t.Fatalf("lazy_unblock's schema and description lack %s:\n%s\n%s", want, schema, tl.Description)
			}
		}
	}
	for _, name := range []string{"approved_files", "approve_files"} {
		tk := r.create("fenced by "+name, "--allow", "src/**")
		if err := os.Remove(counter); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		call(t, s, "lazy_start", map[string]any{"task": tk.Slug, "command": fakeAgentBin}, false)
		r.waitStatus(tk.Slug, "conflict")
		// Both names naming different files: refused, nothing decided.
		msg := call(t, s, "lazy_unblock", map[string]any{"task": tk.Slug, "feedback": "go on", "approved_files": []string{"keep.txt"}, "approve_files": []string{"drop.txt"}}, true)
		if !strings.Contains(msg, "approved_files and approve_files") {
			t.Fatalf("both names, different files: %s", msg)
		}
		if v := r.violations(tk.Slug); v.Status != "conflict" || len(v.Violations.Pending) != 2 {
			t.Fatalf("a refused unblock decided something: %+v", v)
		}
		call(t, s, "lazy_unblock", map[string]any{"task": tk.Slug, "feedback": "keep keep.txt only", name: []string{"keep.txt"}}, false)
		sn := r.waitStatus(tk.Slug, "blocked")
		if got := r.violations(tk.Slug).Violations.Decided; got["keep.txt"] != "approved" || got["drop.txt"] != "reverted" {
			t.Fatalf("%s decided %v", name, got)
		}
		if _, err := os.Stat(filepath.Join(sn.Session.Worktree, "drop.txt")); !os.IsNotExist(err) {
			t.Fatalf("%s: drop.txt was not reverted: %v", name, err)
		}
		if b, err := os.ReadFile(filepath.Join(sn.Session.Worktree, "keep.txt")); err != nil || string(b) != "keep me\n" {
			t.Fatalf("%s: keep.txt = %q, %v", name, b, err)
		}
	}
}
