package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

func TestMarkdownShowsRawHTMLAsText(t *testing.T) {
	for in, want := range map[string]string{
		"a <b>comment</b> with markup":       "a &lt;b&gt;comment&lt;/b&gt; with markup",
		"<script>alert(1)</script>":          "&lt;script&gt;alert(1)&lt;/script&gt;",
		"[x](javascript:alert(1))":           `<a href="">x</a>`,
		"<javascript:alert(1)>":              `<a href="">javascript:alert(1)</a>`,
		"<JavaScript:alert(1)>":              `<a href="">JavaScript:alert(1)</a>`,
		"<vbscript:x> <file:///etc/passwd>":  `<a href="">vbscript:x</a> <a href="">file:///etc/passwd</a>`,
		"<data:text/html,x>":                 `<a href="">data:text/html,x</a>`,
		"<https://example.com/a?b&c>":        `<a href="https://example.com/a?b&amp;c">https://example.com/a?b&amp;c</a>`,
		"<someone@example.com>":              `<a href="mailto:someone@example.com">someone@example.com</a>`,
		"**bold** and `<i>`":                 "<strong>bold</strong> and <code>&lt;i&gt;</code>",
		"<img src=x onerror=alert(1)>":       "&lt;img src=x onerror=alert(1)&gt;",
		"<div onclick=\"x\">\nblock\n</div>": "<pre>&lt;div onclick=&quot;x&quot;&gt;",
	} {
		got := string(markdown(in))
		if !strings.Contains(got, want) {
			t.Errorf("markdown(%q) = %q, want it to contain %q", in, got, want)
		}
		if strings.Contains(got, "<script") || strings.Contains(got, "<img") || strings.Contains(got, "onclick=\"") ||
			strings.Contains(strings.ToLower(got), `href="javascript`) {
			t.Errorf("markdown(%q) = %q lets markup through", in, got)
		}
	}
}

func TestRenderLineReadsClaudeAndCodexStreams(t *testing.T) {
	for in, want := range map[string]LogEntry{
		`{"type":"assistant","message":{"content":[{"type":"text","text":"Looking at the tests"}]}}`:                   {"text", "Looking at the tests"},
		`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"go test"}}]}}`: {"tool", `Bash {"command":"go test"}`},
		`{"type":"result","subtype":"success","total_cost_usd":0.0123,"num_turns":3}`:                                  {"note", "result · 3 turns · cost $0.0123"},
		`{"type":"item.completed","item":{"type":"agent_message","text":"done"}}`:                                      {"text", "done"},
		"plain \x1b[31mred\x1b[0m output\x07":                                                                          {"out", "plain red output"},
	} {
		got := renderLine(in)
		if len(got) == 0 || got[0] != want {
			t.Errorf("renderLine(%q) = %v, want %v first", in, got, want)
		}
	}
}

func TestParseDiffBoundsAndClassifies(t *testing.T) {
	var b strings.Builder
	for f := 0; f < 3; f++ {
		b.WriteString("diff --git a/f" + string(rune('0'+f)) + " b/f" + string(rune('0'+f)) + "\nindex 1..2\n--- a/f\n+++ b/f\n@@ -1 +1,5 @@\n-old\n+new1\n+new2\n+new3\n context\n")
	}
	d := parseDiff(b.String(), 2, 3)
	if len(d.Files) != 2 || d.HiddenFiles != 1 || !d.Bounded {
		t.Fatalf("files %d hidden %d bounded %v", len(d.Files), d.HiddenFiles, d.Bounded)
	}
	f := d.Files[0]
	if f.Name != "f0" || f.Added != 3 || f.Removed != 1 || len(f.Lines) != 3 || f.Hidden != 3 {
		t.Fatalf("file %+v", f)
	}
	if f.Lines[0].Class != "hunk" || f.Lines[1].Class != "del" || f.Lines[2].Class != "add" {
		t.Fatalf("classes %+v", f.Lines)
	}
}

// TestWebEscapesBidiAndControls: a pulled record skips intake, so a goal or
// comment with U+202E or ESC must not reach the HTML raw (issue 29).
func TestWebEscapesBidiAndControls(t *testing.T) {
	evil := "invoice\u202egpj.exe \x1b[31mred"
	got := string(markdown(evil))
	if strings.ContainsRune(got, 0x202e) || strings.ContainsRune(got, 0x1b) {
		t.Fatalf("markdown passed spoofing runes raw: %q", got)
	}
	if !strings.Contains(got, `\u202e`) || !strings.Contains(got, `\u001b`) {
		t.Fatalf("markdown did not escape visibly: %q", got)
	}
}

// TestTaskPageEscapesAStoredRecord renders the real task and list pages for
// a record written straight to the store, as a pulled one arrives: intake
// never saw its title, goal or comment, so the pages must escape them.
func TestTaskPageEscapesAStoredRecord(t *testing.T) {
	s, st, _ := newServer(t)
	evil := "invoice\u202egpj.exe \x1b[31mred\u2066"
	sn, err := st.Create(task.CreateSpec{Title: "title " + evil, Goal: "goal " + evil, Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	id := sn.Task.ID
	if _, _, err := st.Update(context.Background(), id, func(x *task.Snapshot) (*task.Op, error) {
		x.AddComment(task.Comment{Actor: machine.Human, At: time.Now().UTC(), Text: "comment " + evil})
		return &task.Op{Name: "comment", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	for _, path := range []string{"/task/" + id, "/", "/?view=board"} {
		body := page(t, h, path)
		if strings.ContainsRune(body, 0x202e) || strings.ContainsRune(body, 0x2066) || strings.ContainsRune(body, 0x1b) {
			t.Errorf("GET %s passed spoofing runes raw", path)
		}
		if !strings.Contains(body, `\u202e`) {
			t.Errorf("GET %s does not show the escaped title", path)
		}
	}
	task := page(t, h, "/task/"+id)
	for _, want := range []string{"goal invoice", "comment invoice", `\u001b`, `\u2066`} {
		if !strings.Contains(task, want) {
			t.Errorf("task page lacks %q", want)
		}
	}
}

// TestTaskPageDrawsOneLinePerDiffLine: each diff line is one block with
// its newline inside it and nothing between the blocks (a newline there
// drew an empty line after every hunk header), and a text's newlines are
// line breaks (a turn of several lines was run into one).
func TestTaskPageDrawsOneLinePerDiffLine(t *testing.T) {
	s, st, dir := newServer(t)
	sn := startedAs(t, st, dir, task.CreateSpec{Title: "two lines", Goal: "First line.\nSecond line.", Actor: machine.Human}, "f.txt")
	html := page(t, s.Handler(), "/task/"+sn.Task.ID)
	i := strings.Index(html, `<details class="diff"`)
	if i < 0 {
		t.Fatalf("no diff on the page:\n%s", html)
	}
	pre := html[i:]
	pre = pre[strings.Index(pre, "<pre>")+5 : strings.Index(pre, "</pre>")]
	want := "<span class=\"ln meta\">new file mode 100644\n</span><span class=\"ln hunk\">@@ -0,0 &#43;1 @@\n</span><span class=\"ln add\">&#43;two lines\n</span>"
	if pre != want {
		t.Fatalf("the diff's lines:\n%q\nwant\n%q", pre, want)
	}
	if got := string(markdown("First line.\nSecond line.")); got != "<p>First line.<br>\nSecond line.</p>\n" {
		t.Fatalf("a text's newline: %q", got)
	}
	if !strings.Contains(html, "First line.<br>\nSecond line.") {
		t.Fatalf("the goal's lines run together on the page:\n%s", html)
	}
}

// TestTaskPageFlagsATurnWhoseToolCallsAllFailed: the turn's line says
// so, in the error colour; a turn with some failures counts them.
func TestTaskPageFlagsATurnWhoseToolCallsAllFailed(t *testing.T) {
	s, st, dir := newServer(t)
	sn := startedHere(t, st, dir, "worked blind", "f.txt")
	zero := 0
	if _, _, err := st.Update(context.Background(), sn.Task.ID, func(x *task.Snapshot) (*task.Op, error) {
		x.AddTurn(task.Turn{Role: task.RoleAgent, Kind: "agent", Content: "All done.", At: time.Now().UTC(), ExitCode: &zero, Tools: &task.Tools{Calls: 5, Failed: 5}})
		x.AddTurn(task.Turn{Role: task.RoleAgent, Kind: "agent", Content: "Fixed.", At: time.Now().UTC(), ExitCode: &zero, Tools: &task.Tools{Calls: 3, Failed: 1}})
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	html := page(t, s.Handler(), "/task/"+sn.Task.ID)
	for _, want := range []string{` · <strong class="tools-failed">all 5 tool calls failed</strong>`, ` · 3 tool calls (1 failed)`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q:\n%s", want, html)
		}
	}
}
