package agent

import (
	"reflect"
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
