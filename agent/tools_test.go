package agent

import (
	"strings"
	"testing"
)

// TestToolCounterTalliesCallsAndFailures counts what tools returned in
// both CLIs' output, in any chunking, and says when every call failed.
func TestToolCounterTalliesCallsAndFailures(t *testing.T) {
	claude := strings.Join([]string{
		`{"type":"system","subtype":"init","session_id":"s","model":"claude-x"}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"1","name":"Bash","input":{"command":"make"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"1","is_error":true,"content":"permission denied"}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"2","name":"Read","input":{"file_path":"x"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"2","is_error":true,"content":[{"type":"text","text":"no such file"}]}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"All done!"}]}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"All done!"}`,
	}, "\r\n") // as a pty delivers it
	codex := strings.Join([]string{
		`{"type":"thread.started","thread_id":"t"}`,
		`{"type":"item.started","item":{"id":"i1","type":"command_execution","command":"go test ./...","status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"go test ./...","aggregated_output":"ok","exit_code":0,"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"i2","type":"command_execution","command":"rm -rf /","aggregated_output":"","exit_code":null,"status":"declined"}}`,
		`{"type":"item.completed","item":{"id":"i3","type":"file_change","changes":[{"path":"a.go","kind":"update"}],"status":"failed"}}`,
		`{"type":"item.completed","item":{"id":"i4","type":"mcp_tool_call","server":"lazy","tool":"lazy_comment","arguments":{},"result":{"content":[{"type":"text","text":"ok"}]},"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"i5","type":"agent_message","text":"Done."}}`,
		`{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}`,
	}, "\n") + "\n"
	for _, c := range []struct {
		name, out string
		want      ToolTally
		all       bool
	}{
		{"claude", claude, ToolTally{Calls: 2, Failed: 2}, true},
		{"codex", codex, ToolTally{Calls: 4, Failed: 2}, false},
		{"plain output", "make: *** [all] Error 1\nsome text\n", ToolTally{}, false},
	} {
		for _, chunk := range []int{1, 7, len(c.out)} {
			var tc ToolCounter
			for i := 0; i < len(c.out); i += chunk {
				_, _ = tc.Write([]byte(c.out[i:min(i+chunk, len(c.out))]))
			}
			got := tc.Tally()
			if got != c.want || got.AllFailed() != c.all {
				t.Errorf("%s in chunks of %d: %+v (all failed %v), want %+v (%v)", c.name, chunk, got, got.AllFailed(), c.want, c.all)
			}
		}
	}
}
