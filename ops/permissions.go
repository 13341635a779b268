package ops

import (
	"context"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/worktree"
)

// Permissions says what sn's agent may do here: for a session this
// machine started, from its record and today's config (the allow-list is
// read at every turn); for a task that has not started, what lazy start
// with in would give it. Nil for a session another machine runs: that
// machine decides.
func (e *Env) Permissions(ctx context.Context, sn *gitstore.Snapshot, in StartInput) *agent.TaskPermissions {
	g := agent.Grants{Allow: e.Policy.Allow}
	p := &agent.TaskPermissions{Uncommitted: e.Policy.Uncommitted}
	if p.Uncommitted == "" {
		p.Uncommitted = proto.UncommittedCommit
	}
	switch local, err := e.Owned(sn); {
	case err == nil:
		p.Agent = local.Agent
		g.Sandboxed, g.PermissionMode = local.Sandbox != nil, local.PermissionMode
		if p.Agent == "codex" && !g.Sandboxed {
			g.WritableRoots = worktree.CommitDirs(ctx, local.Worktree)
		}
	case sn.Session == nil:
		p.Agent = in.Agent
		g.Sandboxed, g.PermissionMode = sessionSandbox(in, sn) != nil, in.PermissionMode
		g.WritableRoots = []string{"<the git directories a commit in its worktree writes>"}
		p.Note = "what lazy start would give it with today's settings"
	default:
		return nil
	}
	p.Work = agent.TurnPermissions(p.Agent, false, g)
	p.Ask = agent.TurnPermissions(p.Agent, true, g)
	return p
}
