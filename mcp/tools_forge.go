package mcp

import (
	"context"
	"encoding/json"

	"github.com/lazyorch/lazy/submission"
	"github.com/lazyorch/lazy/wire"
)

// SubmitIn is lazy_submit's input.
type SubmitIn struct {
	Task           string `json:"task" jsonschema:"task slug or id of a blocked task"`
	Draft          bool   `json:"draft,omitempty" jsonschema:"open the pull request as a draft"`
	Remote         string `json:"remote,omitempty" jsonschema:"git remote to push to (default origin)"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait before returning still_running (default 50); calling again with the same task picks the same submit up"`
}

// submitTool is lazy_submit's entry in Tools.
var submitTool = Tool{Name: "lazy_submit", Title: "Submit for review", Hints: Hints{OpenWorld: true}, Long: true, register: add[SubmitIn, SubmitOut],
	Description: "Push a blocked task's branch and open or update its pull request on the forge (blocked -> submitted). Sends progress; after timeout_seconds it returns still_running: true, and calling again picks the same submit up. Next: lazy_accept merges it through the forge once it is approved."}

// callForge runs the forge tools; ok is false for any other tool.
func (d *Dispatcher) callForge(ctx context.Context, env *wire.Env, caller Caller, tool string, args json.RawMessage) (out any, ok bool, err error) {
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
	Report(ctx, "submit: pushing the branch and opening the pull request")
	out, running, latest, err := d.detached(ctx, "submit\x00"+id, timeout(in.TimeoutSeconds), func(ctx context.Context) (any, error) {
		res, err := env.Submission().Submit(ctx, id, submission.SubmitOptions{Draft: in.Draft, Remote: in.Remote})
		if err != nil {
			return nil, err
		}
		v := d.view(res.Snapshot)
		return SubmitOut{Task: &v, PRNumber: res.PR.Number, PRURL: res.PR.URL, Updated: res.Updated}, nil
	})
	if err != nil {
		return nil, true, err
	}
	if running {
		out, err = d.stillRunning(id, latest, "submit", func(v *View, r Running) any { return SubmitOut{Task: v, Running: r} })
	}
	return out, true, err
}
