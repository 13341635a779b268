package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/renameio/v2"

	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// PoolMark is what lazy start --pool asks of the runner that takes a task.
type PoolMark struct {
	Labels   []string
	Priority int
	Agent    string
}

// MarkForPool marks a backlog task for the runner pool: any runner
// whose labels include Labels and whose configuration allows Agent may
// claim it once the tasks it waits for are complete. It records only;
// the caller pushes.
func (s *Service) MarkForPool(ctx context.Context, name string, m PoolMark) (*task.Snapshot, error) {
	e := s.Env
	for _, l := range m.Labels {
		if !task.PoolLabel.MatchString(l) {
			return nil, fmt.Errorf("--label %q: a label is lower-case letters, digits, '.', '_' and '-' (gpu, linux-arm64)", l)
		}
	}
	if m.Agent != "" && !task.PoolLabel.MatchString(m.Agent) {
		return nil, fmt.Errorf("--agent %q is no agent name", m.Agent)
	}
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Backlog {
			return nil, fmt.Errorf("start --pool %s: the task is %s; only a backlog task goes to the pool", s.Task.Slug, s.Task.Status)
		}
		if s.Task.Pool != nil && s.Task.Pool.Runner != "" {
			return nil, fmt.Errorf("start --pool %s: runner %s holds it already", s.Task.Slug, s.Task.Pool.Runner)
		}
		s.Task.Pool = &task.PoolSpec{Labels: slices.Compact(slices.Sorted(slices.Values(m.Labels))), Priority: m.Priority, Agent: m.Agent,
			MarkedAt: time.Now().UTC().Truncate(time.Second), MarkedBy: string(e.Actor)}
		return &task.Op{Name: "pool", Actor: e.Actor, Reason: "marked for the runner pool"}, nil
	})
	return sn, err
}

// errNotPooled is a pooled operation on a task nobody marked.
var errNotPooled = errors.New("the task is not in the runner pool")

// DeferredStart is a lazy start of a task that waits for others, kept on
// this machine until they are complete: the daemon then starts it with
// the agent and command the user gave.
type DeferredStart struct {
	Task    string   `json:"task"`
	Agent   string   `json:"agent"`
	Command []string `json:"command,omitempty"`
	Model   string   `json:"model,omitempty"`
	// Sandbox is the start's own --sandbox, when SandboxExplicit: kept
	// so that the session starts as confined as the user said, not as
	// git config says when the wait ends.
	Sandbox         *proto.Sandbox `json:"sandbox,omitempty"`
	SandboxExplicit bool           `json:"sandbox_explicit,omitempty"`
	At              time.Time      `json:"at"`
}

func (s *Service) deferredPath(id string) string {
	return s.Env.Repo.LazyDir("queue", "deferred", id+".json")
}

// DeferStart records that task name starts here, as in, once the tasks
// it waits for are complete.
func (s *Service) DeferStart(name string, in session.StartInput) (*task.Snapshot, error) {
	e := s.Env
	id, err := e.Store.Resolve(name)
	if err != nil {
		return nil, err
	}
	sn, err := e.Store.Load(id)
	if err != nil {
		return nil, err
	}
	if sn.Task.Status != machine.Backlog {
		return nil, lifecycle.NotStartable(sn.Task.Slug, sn.Task.Status)
	}
	d := DeferredStart{Task: id, Agent: in.Agent, Command: in.ExecCommand, Model: in.Model, At: time.Now().UTC().Truncate(time.Second)}
	if in.SandboxExplicit {
		d.Sandbox, d.SandboxExplicit = in.Sandbox, true
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	p := s.deferredPath(id)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	return sn, renameio.WriteFile(p, append(b, '\n'), 0o644)
}

// StartDeferred starts the deferred tasks whose waits are over, with
// start (the caller's way to start a task as the deferred start says),
// and drops those that can no longer start. It returns what it started.
func (s *Service) StartDeferred(ctx context.Context, start func(ctx context.Context, d DeferredStart) error) []string {
	e := s.Env
	paths, _ := filepath.Glob(e.Repo.LazyDir("queue", "deferred", "*.json"))
	var started []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		var d DeferredStart
		if err != nil || json.Unmarshal(b, &d) != nil || !task.ValidID(d.Task) || filepath.Base(p) != d.Task+".json" {
			continue
		}
		sn, err := e.Store.Load(d.Task)
		if err != nil || sn.Task.Status != machine.Backlog {
			_ = os.Remove(p) // started some other way, or gone
			continue
		}
		if lifecycle.DepsDone(e.Store, sn) != nil {
			continue
		}
		if err := start(ctx, d); err == nil {
			started = append(started, sn.Task.Slug)
		}
		_ = os.Remove(p)
	}
	return started
}
