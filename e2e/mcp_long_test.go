package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressLog collects a client's progress notifications.
type progressLog struct {
	mu   sync.Mutex
	msgs []string
}

func (p *progressLog) add(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, req.Params.Message)
}

func (p *progressLog) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.msgs...)
}

// progressClient connects the Go SDK client to lazy mcp, recording the
// progress notifications it receives.
func progressClient(t *testing.T, r *runner) (*sdk.ClientSession, *progressLog) {
	t.Helper()
	log := &progressLog{}
	cmd := exec.Command(lazyBin, "mcp")
	cmd.Dir = r.dir
	cmd.Env = r.environ()
	cmd.Stderr = os.Stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "lazy-e2e-progress", Version: "1"}, &sdk.ClientOptions{ProgressNotificationHandler: log.add})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, log
}

// callWithProgress calls a tool with a progress token and returns its
// structured result.
func callWithProgress(t *testing.T, s *sdk.ClientSession, tool string, args map[string]any, token string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := &sdk.CallToolParams{Name: tool, Arguments: args}
	p.SetProgressToken(token)
	res, err := s.CallTool(ctx, p)
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", tool, err, res)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLongCallsSendProgressAndReturnStillRunning(t *testing.T) {
	r := newRepo(t)
	counter := filepath.Join(t.TempDir(), "runs")
	r = r.with(script(t, "attempt "+counter,
		"when 1 write long.txt long", "when 1 commit agent: long", "when 1 sleep 8s",
		"when 2 sleep 5s", "print ok"))
	r.ok("init")
	s, log := progressClient(t, r)
	var created struct {
		Task struct{ Slug string } `json:"task"`
	}
	decodeInto(t, call(t, s, "lazy_create", map[string]any{"title": "long one"}, false), &created)
	slug := created.Task.Slug
	call(t, s, "lazy_start", map[string]any{"task": slug, "command": fakeAgentBin}, false)

	// Without progress support: a 1 s bound on an 8 s turn answers still_running with
	// what it waits on, and calling again completes.
	var w struct {
		Task         struct{ Status string } `json:"task"`
		StillRunning bool                    `json:"still_running"`
		WaitingOn    string                  `json:"waiting_on"`
		Next         string                  `json:"next"`
	}
	decodeInto(t, call(t, s, "lazy_wait", map[string]any{"task": slug, "timeout_seconds": 1}, false), &w)
	if !w.StillRunning || w.Task.Status != "working" || !strings.Contains(w.WaitingOn, slug) || !strings.Contains(w.Next, "lazy_wait") {
		t.Fatalf("a 1 s wait on an 8 s turn: %+v", w)
	}
	// With a progress token: notifications while it waits, with the status.
	out := callWithProgress(t, s, "lazy_wait", map[string]any{"task": slug, "timeout_seconds": 60}, "wait-1")
	if out["still_running"] != false || out["task"].(map[string]any)["status"] != "blocked" {
		t.Fatalf("wait with progress: %v", out)
	}
	msgs := log.all()
	if len(msgs) < 2 || !strings.Contains(strings.Join(msgs, "|"), slug+": working") {
		t.Fatalf("progress during the wait: %q", msgs)
	}

	// An accept with a slow pre-accept turn: still_running, then the same
	// accept is picked up by the next call and its narration is progress.
	r.git("config", "lazy.accept.preTurn", "Check it.")
	var a struct {
		StillRunning bool   `json:"still_running"`
		WaitingOn    string `json:"waiting_on"`
		Warnings     []string
	}
	decodeInto(t, call(t, s, "lazy_accept", map[string]any{"task": slug, "timeout_seconds": 1}, false), &a)
	if !a.StillRunning || !strings.Contains(a.WaitingOn, "accept of "+slug) || a.Warnings == nil {
		t.Fatalf("a 1 s accept with a 5 s pre-accept turn: %+v", a)
	}
	done := callWithProgress(t, s, "lazy_accept", map[string]any{"task": slug, "timeout_seconds": 60}, "accept-1")
	if done["still_running"] != false || done["task"].(map[string]any)["status"] != "complete" || len(done["commit"].(string)) != 40 {
		t.Fatalf("the accept picked up again: %v", done)
	}
	if got := r.git("show", "main:long.txt"); got != "long" {
		t.Fatalf("main:long.txt = %q", got)
	}
	if all := strings.Join(log.all(), "|"); !strings.Contains(all, "accept step") {
		t.Fatalf("no accept narration in the progress: %q", all)
	}
	if n := len(r.showFull(slug).History); n == 0 {
		t.Fatal("no history")
	}
}

func TestEditJournalDiffAndLogsOverMCPAndTheCLI(t *testing.T) {
	r := newRepo(t)
	r = r.with(script(t, "write notes.txt a note", "commit agent: notes", "print wrote the notes"))
	r.git("branch", "release")
	s, _ := mcpClient(t, r, nil, "mcp")
	var created struct {
		Task struct{ Slug, ID string } `json:"task"`
	}
	decodeInto(t, call(t, s, "lazy_create", map[string]any{"title": "edit me", "goal": "old goal"}, false), &created)
	slug := created.Task.Slug
	if msg := call(t, s, "lazy_edit", map[string]any{"task": slug, "target_branch": "no-such-branch"}, true); !strings.Contains(msg, "does not exist") {
		t.Fatalf("edit to a missing branch: %s", msg)
	}
	call(t, s, "lazy_edit", map[string]any{"task": slug, "title": "edited", "goal": "new goal", "target_branch": "release"}, false)
	full := r.showFull(slug)
	if full.Title != "edited" || full.Goal != "new goal" {
		t.Fatalf("after edit: %+v", full.task)
	}
	if h := full.History[len(full.History)-1]; h.Op != "edit" || h.Actor != "builder" {
		t.Fatalf("the edit is not in the history: %+v", h)
	}
	if res := r.run(nil, "edit", slug, "--title", "a\nb"); res.Code == 0 || !strings.Contains(res.Stderr, "one line") {
		t.Fatalf("a two-line title: %s", res)
	}
	r.ok("edit", slug, "--title", "edited on the CLI")
	if got := r.show(slug).Title; got != "edited on the CLI" {
		t.Fatalf("CLI edit: %q", got)
	}

	r.ok("start", slug, "--command", fakeAgentBin)
	r.waitStatus(slug, "blocked")
	if msg := call(t, s, "lazy_edit", map[string]any{"task": slug, "target_branch": "main"}, true); !strings.Contains(msg, "before the task starts") {
		t.Fatalf("target branch of a started task: %s", msg)
	}
	var diff struct {
		Base, Branch, Patch string
		Files               []string
		Truncated           bool
	}
	decodeInto(t, call(t, s, "lazy_diff", map[string]any{"task": slug, "patch": true, "max_bytes": 40}, false), &diff)
	if diff.Base != "release" || len(diff.Files) != 1 || diff.Files[0] != "notes.txt" || !diff.Truncated || len(diff.Patch) > 40 {
		t.Fatalf("diff: %+v", diff)
	}
	var logs struct{ Lines []string }
	decodeInto(t, call(t, s, "lazy_logs", map[string]any{"task": slug, "lines": 10}, false), &logs)
	if !strings.Contains(strings.Join(logs.Lines, "\n"), "wrote the notes") {
		t.Fatalf("logs: %q", logs.Lines)
	}
	call(t, s, "lazy_journal", map[string]any{"task": slug, "rationale": "kept notes short", "decisions": []string{"plain text"}, "deferrals": []string{"formatting"}}, false)
	if msg := call(t, s, "lazy_journal", map[string]any{"task": slug, "rationale": "  "}, true); !strings.Contains(msg, "rationale") {
		t.Fatalf("an empty journal entry: %s", msg)
	}
	out := r.ok("show", slug)
	if !strings.Contains(out, "Journal (1)") || !strings.Contains(out, "kept notes short") || !strings.Contains(out, "deferred: formatting") {
		t.Fatalf("lazy show lacks the journal:\n%s", out)
	}
}

func TestAgentsGetTheNewToolsWithinTheirScope(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	a, token := agentWithToken(t, r, "scoped agent")
	other := r.create("someone else's")
	s, _ := mcpClient(t, r, []string{"LAZY_MCP_TOKEN=" + token}, "mcp-proxy")
	names := toolNames(t, s)
	for _, want := range []string{"lazy_journal", "lazy_diff", "lazy_logs", "lazy_stop", "lazy_resume", "lazy_sync", "lazy_edit", "lazy_reopen"} {
		if !names[want] {
			t.Fatalf("the agent lacks %s", want)
		}
	}
	if names["lazy_reparent"] {
		t.Fatal("an agent got lazy_reparent, which can only move a task out of its scope")
	}
	// Its own journal, with the task left out.
	var j struct {
		Entry struct {
			Actor   string
			Journal struct{ Turn int }
		}
	}
	decodeInto(t, call(t, s, "lazy_journal", map[string]any{"rationale": "chose the small fix"}, false), &j)
	if j.Entry.Actor != "agent" || j.Entry.Journal.Turn == 0 {
		t.Fatalf("journal entry %+v", j.Entry)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"lazy_journal", map[string]any{"task": other.Slug, "rationale": "not mine"}},
		{"lazy_edit", map[string]any{"task": other.Slug, "title": "hijacked"}},
		{"lazy_stop", map[string]any{"task": a.Slug}},
		{"lazy_diff", map[string]any{"task": other.Slug}},
		{"lazy_logs", map[string]any{"task": other.Slug}},
	} {
		if msg := call(t, s, c.tool, c.args, true); !strings.Contains(msg, "scope") {
			t.Fatalf("%s %v: %s", c.tool, c.args, msg)
		}
	}
	var shown struct {
		Journal []struct{ Text string } `json:"journal"`
	}
	decodeInto(t, call(t, s, "lazy_show", map[string]any{"task": a.Slug}, false), &shown)
	if len(shown.Journal) != 1 || shown.Journal[0].Text != "chose the small fix" {
		t.Fatalf("lazy_show journal: %+v", shown)
	}
}
