package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/internal/confine"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/sandbox"
	"github.com/lazyorch/lazy/task"
)

// Confinement is inherited, never lowered by an agent. Every session's
// confinement (its sandbox, network, hidden and exposed paths, and
// permission posture) is decided when it starts and kept in this
// machine's session record (internal/owned), which no fetch writes. Work
// started by anyone but a human (an agent through its MCP token, a
// builder over lazy mcp, the daemon) runs at least as confined as:
//
//   - what local config gives it (lazy.sandbox.*, lazy.claude.permissionMode,
//     and a task created with --sandbox);
//   - the session of its parent task, when this machine runs it;
//   - the session of the agent that asks (Env.CallerTask, proven by its
//     token).
//
// Such a caller may ask for more (StartInput.Request), never for less;
// a human decides either way on the command line (start --sandbox off).
// A human's start still inherits the parent's sandbox unless told
// otherwise.

// StartConfinement decides how a new session of sn, started with in by
// e's actor, is confined: in comes back with its Sandbox and
// PermissionMode set to the decision.
func (e *Env) StartConfinement(sn *task.Snapshot, in StartInput) (StartInput, error) {
	human := e.Actor == machine.Human
	floor := confine.Confinement{Sandbox: sessionSandbox(in, sn, human), PermissionMode: in.PermissionMode, AnyCommand: true}
	if parent, ok := e.parentSession(sn); ok {
		if human {
			if !in.SandboxExplicit {
				floor.Sandbox = confine.TightestSandbox(floor.Sandbox, parent.Sandbox)
			}
		} else {
			floor = confine.Tightest(floor, parent.Confinement())
		}
	}
	if human {
		in.Sandbox, in.PermissionMode = floor.Sandbox, floor.PermissionMode
		return in, nil
	}
	caller, ok, err := e.CallerSession()
	if err != nil {
		return in, err
	}
	if ok {
		floor = confine.Tightest(floor, caller.Confinement())
	}
	eff, err := Held(floor, in.Agent, in.Request, in.SandboxIfAsked)
	if err != nil {
		return in, err
	}
	in.Sandbox, in.PermissionMode = eff.Sandbox, eff.PermissionMode
	return in, nil
}

// Held is floor made tighter by req, for a session of agentName: what a
// caller that is not a human gets. Anything looser than floor, asked for
// or implied by the agent (the exec agent outside the sandbox, where the
// floor holds the agent to its CLI's permissions), is a
// *confine.LooserError.
func Held(floor confine.Confinement, agentName string, req confine.Request, ifAsked *proto.Sandbox) (confine.Confinement, error) {
	eff, err := confine.Effective(floor, req, ifAsked)
	if err != nil {
		return eff, err
	}
	if why := confine.Looser(floor, confine.Of(agentName, eff.PermissionMode, eff.Sandbox)); len(why) > 0 {
		return eff, &confine.LooserError{Why: why}
	}
	return eff, nil
}

// parentSession is the session of sn's parent task, when this machine
// runs it.
func (e *Env) parentSession(sn *task.Snapshot) (owned.Session, bool) {
	if sn.Task.Parent == "" {
		return owned.Session{}, false
	}
	p, err := e.Store.Load(sn.Task.Parent)
	if err != nil {
		return owned.Session{}, false
	}
	local, err := e.Owned(p)
	return local, err == nil
}

// CallerSession is the session of the agent that asks (CallerTask, from
// its MCP token); ok is false for a caller that is no agent of a task.
// An agent whose session this machine has no record of cannot say how
// confined it is, and gets nothing started.
func (e *Env) CallerSession() (s owned.Session, ok bool, err error) {
	if e.CallerTask == "" {
		return owned.Session{}, false, nil
	}
	s, err = e.Sessions().Load(e.CallerTask)
	if err != nil {
		return s, false, fmt.Errorf("how confined the asking agent's own session runs is unknown here (%w), so nothing it asks for runs", err)
	}
	return s, true, nil
}

// ConfinementRefusal words a refusal of verb on slug for confinement.
func ConfinementRefusal(verb, slug string, err error) error {
	var looser *confine.LooserError
	if errors.As(err, &looser) {
		human := "lazy start " + slug + " --sandbox off"
		if verb == "hand off" {
			human = "lazy handoff " + slug
		}
		return fmt.Errorf("%s %s: %w; work an agent or a builder starts runs at least as confined as the session that asks and as this machine's config, and only a human loosens that, on the command line (%s, or git config lazy.sandbox.* and lazy.claude.permissionMode); nothing was started", verb, slug, err, human)
	}
	return fmt.Errorf("%s %s: %w; nothing was started", verb, slug, err)
}

// CallerMayDrive refuses a turn an agent asks for (unblock, resume, sync,
// ask, handoff) on a session less confined than the agent's own: a human
// started that session so, and only a human drives it.
func (e *Env) CallerMayDrive(verb, slug string, local owned.Session) error {
	caller, ok, err := e.CallerSession()
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, slug, err)
	}
	if !ok {
		return nil
	}
	if why := confine.Looser(caller.Confinement(), local.Confinement()); len(why) > 0 {
		return fmt.Errorf("%s %s: its session runs less confined than the asking agent's own (%s), so an agent cannot give it a turn; a human can, on the command line (lazy unblock %s)", verb, slug, strings.Join(why, "; "), slug)
	}
	return nil
}

// GateSandbox is the sandbox a gate run on sn's tree gets: the one the
// gate is configured with (lazy.sandbox), made at least as confined as
// the session of the task, when this machine runs it sandboxed (the tree
// is its agent's work: a sandboxed task never runs anything unconfined,
// its tests included), and as the session of the agent that asks for
// the accept.
func (e *Env) GateSandbox(ctx context.Context, sn *task.Snapshot, configured *proto.Sandbox) (*proto.Sandbox, error) {
	sb := configured
	if local, err := e.Owned(sn); err == nil {
		sb = confine.TightestSandbox(sb, local.Sandbox)
	}
	caller, ok, err := e.CallerSession()
	if err != nil {
		return nil, err
	}
	if ok {
		sb = confine.TightestSandbox(sb, caller.Sandbox)
	}
	if sb == nil {
		return nil, nil
	}
	if err := sandbox.Check(ctx); err != nil {
		return nil, fmt.Errorf("the gate of %s runs sandboxed (lazy.sandbox, or as the task's session runs), but %w", sn.Task.Slug, err)
	}
	return sb, nil
}
