package mcp

import (
	"context"
	"encoding/json"

	"github.com/lazyorch/lazy/ops"
)

// SubmitIn is lazy_submit's input.
type SubmitIn struct {
	Task   string `json:"task" jsonschema:"task slug or id"`
	Draft  bool   `json:"draft,omitempty" jsonschema:"open the pull request as a draft"`
	Remote string `json:"remote,omitempty" jsonschema:"git remote to push to (default origin)"`
}

// submitTool is lazy_submit's entry in Tools.
var submitTool = Tool{Name: "lazy_submit", Description: "Push a blocked task's branch and open or update its pull request on the forge (blocked -> submitted); lazy_accept then merges it there.", register: add[SubmitIn]}

// callForge runs the forge tools; ok is false for any other tool.
func (d *Dispatcher) callForge(ctx context.Context, env *ops.Env, caller Caller, tool string, args json.RawMessage) (out any, ok bool, err error) {
	if tool != submitTool.Name {
		return nil, false, nil
	}
	in, err := decode[SubmitIn](args)
	if err != nil {
		return nil, true, err
	}
	id, err := d.scope(caller, in.Task, scopeChild)
	if err != nil {
		return nil, true, err
	}
	res, err := env.Submit(ctx, id, ops.SubmitOptions{Draft: in.Draft, Remote: in.Remote})
	if err != nil {
		return nil, true, err
	}
	return map[string]any{"task": d.view(res.Snapshot), "pr_number": res.PR.Number, "pr_url": res.PR.URL, "updated": res.Updated}, true, nil
}
