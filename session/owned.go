package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/sandbox"
	"github.com/lazyorch/lazy/task"
)

// Sessions is this machine's record of the sessions it started: the only
// source of what a turn runs and where (see package owned).
func (e *Env) Sessions() owned.Dir { return owned.For(e.Repo.LazyDir()) }

// Owned returns the local session behind sn's current session. The
// record's own copy of the session (host, agent, command, worktree,
// branch) came from refs that a remote may have written, so it never
// decides what runs, where, or what is deleted: this does.
func (e *Env) Owned(sn *task.Snapshot) (owned.Session, error) {
	if sn.Session == nil {
		return owned.Session{}, fmt.Errorf("%s has no session; use lazy start", sn.Task.Slug)
	}
	s, err := e.Sessions().Match(sn.Task.ID, sn.Session.ID)
	if errors.Is(err, owned.ErrNotOwned) {
		return owned.Session{}, &NotOwnedError{Slug: sn.Task.Slug, Host: sn.Session.Host, OurHost: e.Store.Host()}
	}
	return s, err
}

// Owns reports whether sn's current session was started on this machine.
func (e *Env) Owns(sn *task.Snapshot) bool {
	_, err := e.Owned(sn)
	return err == nil
}

// NotOwnedError refuses to act on a session this machine did not start.
type NotOwnedError struct {
	Slug, Host, OurHost string
}

func (e *NotOwnedError) Error() string {
	if e.Host != "" && e.Host != e.OurHost {
		return fmt.Sprintf("%s: its session runs on host %s, not here; run this there, or take it over with lazy start --take-over %s", e.Slug, e.Host, e.Slug)
	}
	// A record that names this host but that this machine never started
	// is either crafted by someone else or left from lost local state.
	return fmt.Sprintf("%s: its session was not started on this machine (the record claims host %s, but no local session matches); nothing is run, stopped or deleted for it; take it over with lazy start --take-over %s", e.Slug, e.Host, e.Slug)
}

// Foreign reports whether sn claims a session of this host that this
// machine never started: what pull, show and doctor report as hostile
// or orphaned.
func (e *Env) Foreign(sn *task.Snapshot) bool {
	return sn.Session != nil && sn.Session.Host == e.Store.Host() && !e.Owns(sn)
}

// validAgentSessionID is what an agent CLI's session id may look like
// before it goes into argv (--resume=<id>, codex resume <id>): 1 to 128
// of [A-Za-z0-9._:-], starting with a letter or digit, so no leading
// dash and nothing a shell or a flag parser would read. (A regexp with a
// {0,127} repeat cost a third of a millisecond to compile at the start
// of every lazy process.)
func validAgentSessionID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != ':' && c != '-') {
			return false
		}
	}
	return true
}

// ResumeID is the agent session a new turn resumes: the one this
// machine's supervisor reported, or the record's when it has the shape
// of an id (a session paired or chatted before the local record kept
// it).
func ResumeID(local owned.Session, sn *task.Snapshot) string {
	if local.AgentSessionID != "" {
		return local.AgentSessionID
	}
	if sn.Session != nil && validAgentSessionID(sn.Session.AgentSessionID) {
		return sn.Session.AgentSessionID
	}
	return ""
}

// Bind replaces the execution fields of sn's session, in memory, with the
// local session's, so code that reads sn.Session.Worktree and friends
// acts on what this machine decided. It fails for a session this machine
// did not start.
func (e *Env) Bind(sn *task.Snapshot) (owned.Session, error) {
	local, err := e.Owned(sn)
	if err != nil {
		return local, err
	}
	s := sn.Session
	s.Agent, s.ExecCommand, s.PermissionMode, s.Model = local.Agent, local.Exec, local.PermissionMode, local.Model
	s.Worktree, s.Branch = local.Worktree, local.Branch
	s.AgentSessionID = ResumeID(local, sn)
	return local, nil
}

// MetaSandbox is the task metadata key of create --sandbox.
const MetaSandbox = "sandbox"

// sessionSandbox is the sandbox local config gives a new session: the
// local decision, made stricter (never looser) by a task created with
// --sandbox. The record's wish is data from anywhere, so it can only add
// confinement, and the hide and expose lists and network policy come
// from local config; an explicit start --sandbox off by the local user
// (human) still wins.
func sessionSandbox(in StartInput, sn *task.Snapshot, human bool) *proto.Sandbox {
	if sn.Task.Metadata[MetaSandbox] != "on" || human && in.SandboxExplicit {
		return in.Sandbox
	}
	switch {
	case in.Sandbox != nil:
		return in.Sandbox
	case in.SandboxIfAsked != nil:
		return in.SandboxIfAsked
	}
	return &proto.Sandbox{Network: sandbox.NetworkOn}
}

// SandboxReady refuses a sandboxed turn where the sandbox cannot run:
// lazy never runs a confined task unconfined.
func SandboxReady(ctx context.Context, sb *proto.Sandbox) error {
	if sb == nil {
		return nil
	}
	if err := sandbox.Check(ctx); err != nil {
		return fmt.Errorf("the task runs sandboxed (lazy.sandbox, start or create --sandbox, or as the session that started it does), but %w", err)
	}
	return nil
}
