package session

import (
	"context"
	"strings"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/sandbox"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// Permissions says what sn's agent may do here: for a session this
// machine started, from its record and today's config (the allow-list is
// read at every turn); for a task that has not started, what lazy start
// with in would give it. Nil for a session another machine runs: that
// machine decides.
func (e *Env) Permissions(ctx context.Context, sn *task.Snapshot, in StartInput) *agent.TaskPermissions {
	g := agent.Grants{Allow: e.Policy.Allow}
	p := &agent.TaskPermissions{Uncommitted: e.Policy.Uncommitted}
	if p.Uncommitted == "" {
		p.Uncommitted = proto.UncommittedCommit
	}
	switch local, err := e.Owned(sn); {
	case err == nil:
		p.Agent = local.Agent
		g.Sandboxed, g.PermissionMode = local.Sandbox != nil, local.PermissionMode
		p.Network = networkOf(local.Sandbox)
		if p.Agent == "codex" && !g.Sandboxed {
			g.WritableRoots = worktree.CommitDirs(ctx, local.Worktree)
		}
	case sn.Session == nil:
		p.Agent = in.Agent
		if decided, err := e.StartConfinement(sn, in); err == nil {
			in = decided
		}
		g.Sandboxed, g.PermissionMode = in.Sandbox != nil, in.PermissionMode
		p.Network = networkOf(in.Sandbox)
		g.WritableRoots = []string{"<the git directories a commit in its worktree writes>"}
		p.Note = "what lazy start would give it with today's settings"
	default:
		return nil
	}
	p.Work = agent.TurnPermissions(p.Agent, false, g)
	p.Ask = agent.TurnPermissions(p.Agent, true, g)
	return p
}

// networkOf says what network a sandboxed session reaches, as lazy show
// prints it: "on", "off" or "only a.com,*.b.com" ("" without a sandbox).
func networkOf(sb *proto.Sandbox) string {
	switch {
	case sb == nil:
		return ""
	case sb.Network == sandbox.NetworkAllow:
		return "only " + strings.Join(sb.Allow, ",")
	case sb.Network == "":
		return sandbox.NetworkOn
	}
	return sb.Network
}
