package mockapi

import "testing"

func TestCwdOf(t *testing.T) {
	for body, want := range map[string]string{
		`{"system":[{"text":"Primary working directory: /tmp/a b\n - Is a git repo"}]}`: "/tmp/a b",
		`{"input":[{"text":"<environment_context>\n  <cwd>/w/x\"y</cwd>\n"}]}`:          `/w/x"y`,
		`{"system":"nothing"}`: "",
	} {
		if got := cwdOf([]byte(body)); got != want {
			t.Errorf("cwdOf(%s) = %q, want %q", body, got, want)
		}
	}
	c, id, ok := nextCall("anthropic", Reply{Tools: []Call{{Name: "Write", Input: `{"file_path":"` + Cwd + `/f"}`}}}, []byte(`{"system":"Primary working directory: /r/w\n"}`), "toolu_mock")
	if !ok || c.Input != `{"file_path":"/r/w/f"}` || id != "toolu_mock1" {
		t.Fatalf("call %+v", c)
	}
}

func TestToolResults(t *testing.T) {
	a := toolResults("anthropic", []byte(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Write","input":{"file_path":"/x"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"denied"}],"is_error":true}]}]}`))
	if len(a) != 1 || a[0].Name != "Write" || a[0].Output != "denied" || !a[0].IsError || a[0].Input != `{"file_path":"/x"}` {
		t.Fatalf("anthropic %+v", a)
	}
	o := toolResults("openai", []byte(`{"input":[{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},{"type":"function_call_output","call_id":"c1","output":"ok"}]}`))
	if len(o) != 1 || o[0].Name != "exec_command" || o[0].Output != "ok" || o[0].Input != `{"cmd":"ls"}` {
		t.Fatalf("openai %+v", o)
	}
}
