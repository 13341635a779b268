package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lazy start launches the supervisor before it makes the worktree (it
// starts up beside git worktree add) and lets it run only once the turn
// is recorded. A start that fails after that launch ends the waiting
// supervisor: it exits having run nothing and leaves no process; the
// next start runs the turn, which does the job on the task's branch.
func TestAStartThatFailsEndsItsEarlySupervisor(t *testing.T) {
	r := newRepo(t)
	wts := t.TempDir()
	r.git("config", "lazy.worktreeDir", wts)
	tk := r.create("Blocked by a directory")
	in := filepath.Join(wts, tk.Slug)
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "mine.txt"), []byte("not lazy's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg := r.fails(1, nil, "start", tk.Slug, "--command", fakeAgentBin); !strings.Contains(msg, "already exists") {
		t.Fatalf("a start onto a directory in the way said: %s", msg)
	}
	pd := filepath.Join(r.dir, ".git", "lazy", "proto", tk.ID)
	exit := filepath.Join(pd, "supervisor.exit")
	eventually(t, "the early supervisor to exit", func() bool {
		sup, agents := turnProcs(tk.ID)
		_, err := os.Stat(exit)
		return len(sup) == 0 && len(agents) == 0 && err == nil
	})
	if b, _ := os.ReadFile(exit); strings.TrimSpace(string(b)) != "0" {
		t.Fatalf("the early supervisor exited %q, want 0", b)
	}
	if _, err := os.Stat(filepath.Join(pd, "status.json")); !os.IsNotExist(err) {
		t.Fatalf("the early supervisor of a start that failed ran a turn: status.json %v", err)
	}
	if got := r.show(tk.Slug).Status; got != "backlog" {
		t.Fatalf("after the failed start the task is %s", got)
	}
	if b, err := os.ReadFile(filepath.Join(in, "mine.txt")); err != nil || string(b) != "not lazy's\n" {
		t.Fatalf("the directory in the way was touched: %q %v", b, err)
	}

	if err := os.RemoveAll(in); err != nil {
		t.Fatal(err)
	}
	rr := r.with(script(t, "write a.txt alpha", "commit agent: add a", "print done"))
	rr.ok("start", tk.Slug, "--command", fakeAgentBin)
	rr.waitStatus(tk.Slug, "blocked")
	if log := r.git("log", "--format=%s", "main..lazy/"+tk.Slug); !strings.Contains(log, "agent: add a") {
		t.Fatalf("the turn after the failed start did not commit on the task's branch: %q", log)
	}
	if got := strings.TrimSpace(r.git("show", "lazy/"+tk.Slug+":a.txt")); got != "alpha" {
		t.Fatalf("a.txt on the branch: %q", got)
	}
}
