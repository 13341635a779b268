package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRejectKeepsAnUnmergedBranchUnlessToldAndReopenRestoresTheWorktree(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "unwanted", "u.txt work nobody merged")
	wt := r.showFull(tk.Slug).Session.Worktree
	tip := strings.TrimSpace(r.git("rev-parse", "lazy/"+tk.Slug))

	out := r.ok("reject", tk.Slug, "-m", "wrong approach")
	if !strings.Contains(out, "removed the clean worktree") || !strings.Contains(out, "kept the branch lazy/unwanted") {
		t.Fatalf("reject said %q", out)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatalf("clean worktree kept: %v", err)
	}
	if got := strings.TrimSpace(r.git("rev-parse", "lazy/"+tk.Slug)); got != tip {
		t.Fatal("reject touched the branch")
	}

	// Reopen brings the worktree back on the kept branch.
	r.ok("reopen", tk.Slug)
	if b, err := os.ReadFile(filepath.Join(wt, "u.txt")); err != nil || string(b) != "work nobody merged\n" {
		t.Fatalf("reopened worktree: %q %v", b, err)
	}
	if s := r.show(tk.Slug); s.Status != "blocked" {
		t.Fatalf("reopened to %s", s.Status)
	}

	// The explicit decision: the tip is recorded first, then deleted.
	var closed struct {
		Status  string   `json:"status"`
		Cleanup []string `json:"cleanup"`
	}
	if err := json.Unmarshal([]byte(r.ok("close", tk.Slug, "--delete-branch", "--json")), &closed); err != nil {
		t.Fatal(err)
	}
	if closed.Status != "abandoned" || !strings.Contains(strings.Join(closed.Cleanup, "\n"), "deleted the branch lazy/unwanted") {
		t.Fatalf("close --delete-branch: %+v", closed)
	}
	if _, err := gitErr(r, "rev-parse", "--verify", "lazy/"+tk.Slug); err == nil {
		t.Fatal("the branch survived --delete-branch")
	}
	s := r.showFull(tk.Slug)
	if last := s.CommentList[len(s.CommentList)-1].Text; !strings.Contains(last, tip) || !strings.Contains(last, "git branch lazy/unwanted "+tip) {
		t.Fatalf("the tip was not recorded: %q", last)
	}
}

// spec: reject and close clean up worktree and branch. A branch with
// nothing unmerged goes; one with unmerged work, or a dirty worktree, is
// kept, and a comment says where the work is.
func TestCloseCleansUpWhatHoldsNoWorkAndRecordsWhatItKeeps(t *testing.T) {
	r := newRepo(t)
	r = r.with(script(t, "print nothing to do"))
	idle := r.create("nothing done")
	r.ok("start", idle.Slug, "--command", fakeAgentBin)
	r.waitStatus(idle.Slug, "blocked")
	out := r.ok("close", idle.Slug, "-m", "not needed")
	if !strings.Contains(out, "removed the clean worktree") || !strings.Contains(out, "deleted the branch lazy/nothing-done") {
		t.Fatalf("close said %q", out)
	}
	if _, err := gitErr(r, "rev-parse", "--verify", "lazy/"+idle.Slug); err == nil {
		t.Fatal("a branch with nothing unmerged was kept")
	}

	worked := workedTask(t, r, "unmerged work", "w.txt w")
	tip := strings.TrimSpace(r.git("rev-parse", "lazy/"+worked.Slug))
	r.ok("reject", worked.Slug, "-m", "no")
	s := r.showFull(worked.Slug)
	last := s.CommentList[len(s.CommentList)-1].Text
	if !strings.Contains(last, "kept, with work in it: the branch lazy/unmerged-work at "+tip) || !strings.Contains(last, "not merged into main") {
		t.Fatalf("the kept branch is not recorded: %q", last)
	}
}

func TestCloseKeepsADirtyWorktree(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "half done", "h.txt h")
	wt := r.showFull(tk.Slug).Session.Worktree
	if err := os.WriteFile(filepath.Join(wt, "wip.txt"), []byte("not committed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := r.ok("close", tk.Slug, "--delete-branch")
	if !strings.Contains(out, "kept the worktree") || !strings.Contains(out, "kept the branch") {
		t.Fatalf("close said %q", out)
	}
	if b, err := os.ReadFile(filepath.Join(wt, "wip.txt")); err != nil || string(b) != "not committed\n" {
		t.Fatalf("uncommitted work lost: %q %v", b, err)
	}
	if _, err := gitErr(r, "rev-parse", "--verify", "lazy/"+tk.Slug); err != nil {
		t.Fatal("deleted the branch of a kept worktree")
	}
	s := r.showFull(tk.Slug)
	if last := s.CommentList[len(s.CommentList)-1].Text; !strings.Contains(last, "the worktree "+wt+", which has uncommitted changes") {
		t.Fatalf("the kept worktree is not recorded: %q", last)
	}
}

func TestReopenAnAcceptedTaskAndReparent(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "shipped", "s.txt shipped")
	r.ok("accept", tk.Slug)
	if msg := r.fails(1, nil, "reopen", tk.Slug); !strings.Contains(msg, "--reason") {
		t.Fatalf("reopen without a reason: %s", msg)
	}
	r.ok("reopen", tk.Slug, "--reason", "regression found")
	s := r.showFull(tk.Slug)
	if s.Status != "blocked" {
		t.Fatalf("reopened to %s", s.Status)
	}
	if b, err := os.ReadFile(filepath.Join(s.Session.Worktree, "s.txt")); err != nil || string(b) != "shipped\n" {
		t.Fatalf("the recreated worktree lacks the merged work: %q %v", b, err)
	}

	a := r.create("top a")
	b := r.create("top b", "--parent", a.Slug)
	if msg := r.fails(1, nil, "reparent", a.Slug, "--parent", b.Slug); !strings.Contains(msg, "cycle") {
		t.Fatalf("cycle: %s", msg)
	}
	if msg := r.fails(1, nil, "reparent", a.Slug, "--parent", a.Slug); !strings.Contains(msg, "own parent") {
		t.Fatalf("self: %s", msg)
	}
	if msg := r.fails(1, nil, "reparent", b.Slug, "--parent", "no-such-task"); !strings.Contains(msg, "no task") {
		t.Fatalf("unknown parent: %s", msg)
	}
	if out := r.ok("reparent", b.Slug, "--root"); !strings.Contains(out, "top-level") {
		t.Fatalf("reparent --root: %s", out)
	}
	if out := r.ok("reparent", a.Slug, "--parent", tk.Slug); !strings.Contains(out, "subtask of shipped") {
		t.Fatalf("reparent: %s", out)
	}
	if got := r.show(a.Slug); got.Parent != tk.ID {
		t.Fatalf("parent %q", got.Parent)
	}
	if res := r.run(nil, "reparent", a.Slug); res.Code != 2 {
		t.Fatalf("reparent without a destination: %s", res)
	}
}
