package wire

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// FuzzForeignRecordNeverActs stores a task whose session claims this host
// with arbitrary execution fields, as a record fetched from a remote
// would, and runs every operation that starts, stops or cleans up a
// session. None may launch anything, and a directory the record names is
// never touched.
func FuzzForeignRecordNeverActs(f *testing.F) {
	f.Add(uint8(0), "0123456789abcdef", "exec", "/bin/sh -c id", "lazy/x", "canary", "sid")
	f.Add(uint8(1), "0123456789abcdef", "claude", "", "main", "canary", "--help")
	f.Add(uint8(2), "s1", "codex", "rm -rf /", "lazy/other", "/", "../../x")
	f.Add(uint8(3), "", "exec", "", "-x", "", "")
	f.Fuzz(func(t *testing.T, st uint8, sessionID, agentName, command, branch, wt, agentSession string) {
		e := env(t)
		ctx := context.Background()
		canary := t.TempDir()
		if err := os.WriteFile(filepath.Join(canary, "keep"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if wt == "canary" {
			wt = canary
		}
		statuses := []machine.Status{machine.Interrupted, machine.Blocked, machine.Conflict, machine.Working, machine.Abandoned, machine.Pairing}
		status := statuses[int(st)%len(statuses)]
		sn, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "crafted"})
		if err != nil {
			t.Fatal(err)
		}
		id := sn.Task.ID
		if _, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
			s.Task.Sessions, s.Task.Host = 1, e.Store.Host()
			s.Session = &task.Session{ID: sessionID, Number: 1, Host: e.Store.Host(), Agent: agentName,
				ExecCommand: strings.Fields(command), Branch: branch, Worktree: wt, AgentSessionID: agentSession,
				StartedAt: time.Now().UTC()}
			s.Task.Status = status
			return &task.Op{Name: "craft", Actor: machine.System}, nil
		}); err != nil {
			t.Skip("a record the store itself refuses to write is out of scope")
		}
		var launched atomic.Int32
		e.Launch = func(string) error { launched.Add(1); return nil }
		_, _ = e.Lifecycle().Resume(ctx, id)
		_, _ = e.Lifecycle().AutoResume(ctx, id)
		_, _ = e.Lifecycle().Unblock(ctx, id, "go", lifecycle.Decisions{})
		_, _ = e.Conversation().Ask(ctx, id, "why?")
		_, _ = e.Conversation().Sync(ctx, id)
		_, _ = e.Lifecycle().Stop(ctx, id, "")
		if p, err := e.Conversation().BeginPair(ctx, id); err == nil {
			t.Fatalf("pairing began on a foreign session: %+v", p.Argv)
		}
		if c, err := e.Conversation().BeginChat(ctx, id); err == nil {
			_, _ = e.Conversation().EndChat(ctx, c, 0) // lets go of the worktree lock
			t.Fatalf("a chat began on a foreign session: %v", c.Argv)
		}
		_, _ = e.Landing().Accept(ctx, id, nil, landing.AcceptOptions{})
		if sn, err := e.Store.Load(id); err == nil {
			if notes, err := e.Landing().Cleanups().CleanupAbandoned(ctx, sn, true); err != nil || len(notes) != 1 || !strings.Contains(notes[0], "alone") {
				t.Fatalf("cleanup of a foreign session: %v %v", notes, err)
			}
		}
		if n := launched.Load(); n != 0 {
			t.Fatalf("%d turn(s) launched for a session this machine never started", n)
		}
		if _, err := os.Stat(filepath.Join(canary, "keep")); err != nil {
			t.Fatalf("a directory named by the record was touched: %v", err)
		}
		if _, err := os.Stat(e.Sessions().Path(id)); err == nil {
			t.Fatal("a local session record appeared without a local decision")
		}
	})
}
