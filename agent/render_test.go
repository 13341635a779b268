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
