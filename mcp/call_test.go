package mcp

import (
	"context"
	"encoding/json"
	"testing"
)

// TestEveryToolHasOneHandler: every tool the dispatcher offers is run by
// exactly one tool group (lazy_submit by callForge), so none answers
// "unknown tool" to a caller it is offered to, and none is run twice.
// Undecodable arguments stop each call before it reaches an operation.
func TestEveryToolHasOneHandler(t *testing.T) {
	ctx := context.Background()
	bad := json.RawMessage("not json")
	for _, tool := range Tools {
		c := &toolCall{d: &Dispatcher{}, tool: tool.Name, args: bad}
		n := 0
		for _, group := range c.groups() {
			if _, ok, err := group(ctx); ok {
				n++
				if err == nil {
					t.Errorf("%s ran with undecodable arguments", tool.Name)
				}
			}
		}
		if tool.Name == submitTool.Name {
			n++ // callForge runs it
		}
		if n != 1 {
			t.Errorf("%s is run by %d tool groups, want 1", tool.Name, n)
		}
	}
	c := &toolCall{d: &Dispatcher{}, tool: "lazy_nope", args: bad}
	for _, group := range c.groups() {
		if _, ok, _ := group(ctx); ok {
			t.Error("a tool no group knows was run")
		}
	}
}
