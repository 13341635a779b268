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
		{"bell\x07", []string{`bell\u0007`}},
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
			[]Entry{{KindResult, "ok\n2 passed"}, {KindError, "no such file"}}},
		{`{"type":"result","subtype":"success","total_cost_usd":0.0123,"num_turns":3}`, []Entry{{KindNote, "result · 3 turns · cost $0.0123"}}},
		{`{"type":"result","is_error":true,"result":"quota","duration_ms":1500}`, []Entry{{KindNote, "result (error) · 1.5s"}, {KindError, "quota"}}},
		{`{"type":"system","subtype":"init","model":"opus"}`, []Entry{{KindNote, "session started opus"}}},
		{`{"type":"item.completed","item":{"type":"agent_message","text":"done"}}`, []Entry{{KindText, "done"}}},
		{`{"type":"item.completed","item":{"type":"command_execution","command":"ls","aggregated_output":"a.go\n"}}`, []Entry{{KindTool, "$ ls"}, {KindResult, "a.go"}}},
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
