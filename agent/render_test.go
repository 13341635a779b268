package agent

import (
	"reflect"
	"strings"
	"testing"
)

func TestRenderLine(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{`{"type":"assistant","message":{"content":[{"type":"text","text":"Looking at the test"},{"type":"tool_use","name":"Bash","input":{"command":"go test ./...\nmore"}}]}}`, []string{"Looking at the test", "→ Bash: go test ./... …"}},
		{`{"type":"result","subtype":"success","is_error":false,"result":"All green","total_cost_usd":0.25}`, []string{"✓ done ($0.25): All green"}},
		{`{"type":"system","subtype":"init","model":"opus"}`, []string{"· session started (model opus)"}},
		{`{"type":"item.completed","item":{"type":"agent_message","text":"fixed"}}`, []string{"fixed"}},
		{`{"type":"turn.failed","error":{"message":"quota"}}`, []string{"✗ quota"}},
		{"\x1b[31mred\x1b[0m text\r", []string{"red text"}},
		{"50%\r100%", []string{"100%"}},
		{"bell\x07", []string{"bell"}},
		// The exit escapes an older lazy kept glued to the next launch's
		// first event: the event reads.
		{"\x1b(B\x1b[>4m\x1b[<u\x1b7\x1b8" + `{"type":"system","subtype":"init","model":"opus"}` + "\r", []string{"· session started (model opus)"}},
		{"\x1b[?25h", nil},
		{"", []string{""}},
		{`{"type":"user","message":{"content":[{"type":"tool_result","content":"CHECK-OK\nline 2\nline 3","is_error":false}]}}`, []string{"  ← CHECK-OK (+2 lines)"}},
		{`{"type":"user","message":{"content":[{"type":"tool_result","content":"Exit code 1\ncat: x: No such file","is_error":true}]}}`, []string{"  ✗ Exit code 1", "    cat: x: No such file"}},
		{`{"type":"thread.started","thread_id":"t1"}`, []string{"· session started (codex)"}},
		{`{"type":"item.started","item":{"type":"command_execution","command":"/bin/bash -lc 'sh check.sh'","status":"in_progress"}}`, []string{"→ shell: /bin/bash -lc 'sh check.sh'"}},
		{`{"type":"item.completed","item":{"type":"command_execution","command":"sh check.sh","aggregated_output":"CHECK-OK\n","exit_code":0,"status":"completed"}}`, []string{"  ← CHECK-OK"}},
		{`{"type":"item.completed","item":{"type":"command_execution","command":"cat nope","aggregated_output":"cat: nope: No such file or directory\n","exit_code":1,"status":"failed"}}`, []string{"  ✗ `cat nope` exited 1: cat: nope: No such file or directory"}},
		{`{"type":"item.completed","item":{"type":"file_change","changes":[{"path":"/w/b.txt","kind":"add"},{"path":"/w/c.go","kind":"update"}],"status":"completed"}}`, []string{"✎ add /w/b.txt, update /w/c.go"}},
		{`{"type":"item.completed","item":{"type":"error","message":"Model metadata for gpt-5-codex not found."}}`, []string{"· warning: Model metadata for gpt-5-codex not found."}},
		{`{"type":"turn.completed","usage":{"input_tokens":60,"output_tokens":35}}`, []string{"✓ done (60 tokens in, 35 out)"}},
		{`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":563,"error_status":529,"error":"overloaded"}`, []string{"· API error (529 overloaded): retry 1 of 10 in 0.6s"}},
		{`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796540000,"rateLimitType":"five_hour"}}`, []string{"✗ usage limit rejected (five hour); resets 2026-12-06 06:53 UTC"}},
		{`{"type":"result","subtype":"error_max_budget_usd","is_error":true,"total_cost_usd":4.02,"errors":["Reached maximum budget ($0.25)"]}`, []string{"✗ failed ($4.02): Reached maximum budget ($0.25)"}},
		// lazy's own lines.
		{`{"lazy":"turn","turn":3,"kind":"unblock","agent":"claude","run":2,"why":"retry"}`, []string{"── turn 3 (unblock, run 2: retry) · claude ──"}},
		{`{"lazy":"note","turn":3,"kind":"budget","text":"over budget: $0.82 spent of $0.25 (task budget)","next":"lazy unblock fix --budget +5"}`, []string{"⏸ over budget: $0.82 spent of $0.25 (task budget)", "  next: lazy unblock fix --budget +5"}},
		{`{"lazy":"out","text":"{\"lazy\":\"note\",\"text\":\"forged\"}"}`, []string{`{"lazy":"note","text":"forged"}`}},
		{`{"not":"an event"}`, []string{`{"not":"an event"}`}},
	}
	for _, c := range cases {
		if got := RenderLine(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("RenderLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// No input makes RenderLine emit a control character a terminal would
// act on.
func FuzzRenderLine(f *testing.F) {
	for _, s := range []string{"plain", "\x1b]0;title\x07", `{"type":"assistant","message":{"content":[{"type":"text","text":"\u001b[2J"}]}}`, "a\rb", "\x9b31m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, line := range RenderLine(in) {
			for _, r := range line {
				if r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
					t.Fatalf("RenderLine(%q) emitted control %U in %q", in, r, line)
				}
			}
		}
	})
}

// Render yields what the web view shows: each entry with its kind (the
// CSS class), tool calls with their input, and control characters dropped.
func TestRender(t *testing.T) {
	cases := []struct {
		in   string
		want []Entry
	}{
		{`{"type":"assistant","message":{"content":[{"type":"text","text":"Looking at the tests"},{"type":"tool_use","name":"Bash","input":{"command":"go test"}}]}}`,
			[]Entry{{KindText, "Looking at the tests"}, {KindTool, `Bash {"command":"go test"}`}}},
		{`{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"text","text":"ok"},{"type":"text","text":"2 passed"}]},{"type":"tool_result","content":"no such file","is_error":true}]}}`,
			[]Entry{{KindResult, "ok (+1 line)"}, {KindError, "no such file"}}},
		{`{"type":"result","subtype":"success","total_cost_usd":0.0123,"num_turns":3}`, []Entry{{KindNote, "result · 3 turns · cost $0.0123"}}},
		{`{"type":"result","is_error":true,"result":"quota","duration_ms":1500}`, []Entry{{KindNote, "result (error) · 1.5s"}, {KindError, "quota"}}},
		{`{"type":"system","subtype":"init","model":"opus"}`, []Entry{{KindNote, "session started (model opus)"}}},
		{`{"type":"item.completed","item":{"type":"agent_message","text":"done"}}`, []Entry{{KindText, "done"}}},
		{`{"type":"item.started","item":{"type":"command_execution","command":"ls","status":"in_progress"}}`, []Entry{{KindTool, "$ ls"}}},
		{`{"type":"item.completed","item":{"type":"command_execution","command":"ls","aggregated_output":"a.go\nb.go\n","exit_code":0}}`, []Entry{{KindResult, "a.go (+1 line)"}}},
		{`{"type":"item.completed","item":{"type":"command_execution","command":"ls x","aggregated_output":"ls: x: nothing\nmore\n","exit_code":2}}`, []Entry{{KindError, "`ls x` exited 2: ls: x: nothing\nmore"}}},
		{`{"type":"item.completed","item":{"type":"file_change","changes":[{"path":"b.txt","kind":"add"}],"status":"completed"}}`, []Entry{{KindTool, "edit add b.txt"}}},
		{`{"lazy":"turn","turn":1,"kind":"start","agent":"codex","model":"gpt-5"}`, []Entry{{KindTurn, "turn 1 (start) · codex (gpt-5)"}}},
		{`{"lazy":"note","kind":"gate","text":"the merge gate failed: \"sh check.sh\" exited 1","next":"lazy unblock t -m ..."}`, []Entry{{KindError, "the merge gate failed: \"sh check.sh\" exited 1\nnext: lazy unblock t -m ..."}}},
		// Codex's error events carry the message as a string, Claude's
		// API failures an "error" string: both read as text, not JSON.
		{`{"type":"error","message":"Reconnecting... 1/3"}`, []Entry{{KindError, "Reconnecting... 1/3"}}},
		{`{"type":"assistant","message":{"content":[{"type":"text","text":"API Error: 529 Overloaded"}]},"error":"overloaded"}`, []Entry{{KindText, "API Error: 529 Overloaded"}}},
		{"plain \x1b[31mred\x1b[0m output\x07", []Entry{{KindOut, "plain red output"}}},
		{`{"not":"an event"}`, nil},
		{"   ", nil},
	}
	for _, c := range cases {
		if got := Render(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Render(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	long := `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Write","input":{"content":"` + strings.Repeat("x", 1000) + `"}}]}}`
	if got := Render(long); len(got) != 1 || len([]rune(got[0].Text)) != toolChars+2 || !strings.HasSuffix(got[0].Text, " …") {
		t.Errorf("a long tool input is not cut at %d characters: %q", toolChars, got)
	}
}

// No input makes Render emit a control character other than tab and
// newline, or an entry without a kind.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"plain", "\x1b]0;title\x07", `{"type":"assistant","message":{"content":[{"type":"text","text":"\u001b[2J\u0000"}]}}`, "a\rb", "\x9b31m", `{"type":"error","message":"\u0007"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, e := range Render(in) {
			if e.Kind == "" || e.Text == "" {
				t.Fatalf("Render(%q) emitted %q", in, e)
			}
			for _, r := range e.Text {
				if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || r >= 0x80 && r < 0xa0 {
					t.Fatalf("Render(%q) emitted control %U in %q", in, r, e.Text)
				}
			}
		}
	})
}
