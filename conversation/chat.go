package conversation

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lazyorch/lazy/sandbox"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// Chat is an open read-only conversation with a task's agent.
type Chat struct {
	Snapshot *task.Snapshot
	Argv     []string
	Dir      string // where the agent runs
	Env      []string
	Started  time.Time
	release  func()
	// Sandboxed says the chat runs under bubblewrap with the worktree
	// read-only; without it, only the agent CLI's own read-only mode (or,
	// for an exec agent's shell, nothing) keeps it from writing.
	Sandboxed bool
	// stopEgress ends the chat's network allowlist proxy, if it has one.
	stopEgress func()
}

// BeginChat opens a status-neutral, read-only conversation with the
// task's agent, holding the worktree lock until EndChat. A finished task's
// worktree is gone: the conversation is resumed in the project root, after
// copying Claude's session log to where Claude looks for it there.
func (cv *Service) BeginChat(ctx context.Context, name string) (*Chat, error) {
	e := cv.Env
	id, err := e.Store.Resolve(name)
	if err != nil {
		return nil, err
	}
	release, err := e.LockWorktree(id)
	if err != nil {
		return nil, fmt.Errorf("chat: %w", err)
	}
	c, err := cv.beginChat(ctx, id)
	if err != nil {
		release()
		return nil, err
	}
	c.release = release
	return c, nil
}

func (cv *Service) beginChat(ctx context.Context, id string) (*Chat, error) {
	e := cv.Env
	sn, err := e.Store.Load(id)
	if err != nil {
		return nil, err
	}
	s, slug := sn.Session, sn.Task.Slug
	switch {
	case s == nil:
		return nil, fmt.Errorf("chat %s: the task never ran, so there is no agent to talk to", slug)
	case sn.Task.Status.IsActive():
		return nil, fmt.Errorf("chat %s: the task is %s; its agent is busy (lazy ask queues nothing either: wait for it to park)", slug, sn.Task.Status)
	}
	local, err := e.Bind(sn)
	if err != nil {
		return nil, fmt.Errorf("chat %w", err)
	}
	c := &Chat{Snapshot: sn, Dir: s.Worktree, Started: time.Now().UTC()}
	if _, err := os.Stat(s.Worktree); err != nil {
		if !sn.Task.Status.IsTerminal() {
			return nil, fmt.Errorf("chat %s: its worktree %s is missing", slug, s.Worktree)
		}
		c.Dir = e.Dir()
		if s.Agent == "claude" && s.AgentSessionID != "" {
			if err := session.RehydrateClaude(s.Worktree, c.Dir, s.AgentSessionID); err != nil {
				return nil, fmt.Errorf("chat %s: %w", slug, err)
			}
		}
	}
	switch s.Agent {
	case "claude":
		if s.AgentSessionID == "" {
			return nil, fmt.Errorf("chat %s: no Claude conversation was recorded for it", slug)
		}
		c.Argv = []string{"claude", "--resume=" + s.AgentSessionID, "--permission-mode", "plan", "--disallowedTools=Edit,Write,MultiEdit,NotebookEdit,Bash"}
	case "codex":
		if s.AgentSessionID == "" {
			return nil, fmt.Errorf("chat %s: no Codex thread was recorded for it", slug)
		}
		c.Argv = []string{"codex", "-s", "read-only", "resume", s.AgentSessionID}
	default:
		c.Argv = PairArgv(s)
	}
	c.Env = append(os.Environ(), "LAZY_TASK_ID="+id, "LAZY_WORKTREE="+c.Dir, "LAZY_CHAT=1", "LAZY_READ_ONLY=1")
	if local.Sandbox != nil {
		// Read-only is enforced, not requested: the chat runs in the
		// session's sandbox with the worktree mounted read-only.
		if err := session.SandboxReady(ctx, local.Sandbox); err != nil {
			return nil, fmt.Errorf("chat %s: %w", slug, err)
		}
		p, stop, err := sandbox.Prepare(ctx, c.Dir, s.Agent, c.Argv[0], true, local.Sandbox)
		if err != nil {
			return nil, fmt.Errorf("chat %s: %w", slug, err)
		}
		c.stopEgress = stop
		if c.Argv, err = sandbox.Wrap(c.Argv, p); err != nil {
			stop()
			return nil, fmt.Errorf("chat %s: %w", slug, err)
		}
		c.Sandboxed = true
	}
	return c, nil
}

// EndChat records the conversation as a turn without touching the status
// and releases the worktree.
func (cv *Service) EndChat(ctx context.Context, c *Chat, exitCode int) (*task.Snapshot, error) {
	e := cv.Env
	defer c.release()
	if c.stopEgress != nil {
		defer c.stopEgress()
	}
	took := time.Since(c.Started).Round(time.Second)
	sn, _, err := e.Store.Update(ctx, c.Snapshot.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		session := ""
		if s.Session != nil {
			session = s.Session.ID
		}
		content := fmt.Sprintf("[chat] a read-only conversation with the agent for %s", took)
		if exitCode != 0 {
			content += fmt.Sprintf(" (the agent exited with code %d)", exitCode)
		}
		s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "chat", Content: content, At: time.Now().UTC().Truncate(time.Second), Session: session})
		return &task.Op{Name: "chat", Actor: e.Actor}, nil
	})
	return sn, err
}
