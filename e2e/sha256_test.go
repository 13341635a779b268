package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// sha256Repo is a repository made by git init --object-format=sha256,
// with one commit on main.
func sha256Repo(t *testing.T) *runner {
	t.Helper()
	full(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "init", "-q", "-b", "main", "--object-format=sha256")
	testrepo.Git(t, dir, "config", "user.email", "test@example.com")
	testrepo.Git(t, dir, "config", "user.name", "Test")
	testrepo.Git(t, dir, "config", "commit.gpgsign", "false")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "add", "README.md")
	testrepo.Git(t, dir, "commit", "-q", "-m", "initial")
	return &runner{t: t, dir: dir}
}

// TestSHA256Repository: lazy works in a SHA-256 repository end to end:
// init, create, start with the exec agent (start --command; its turn
// writes a file and commits), accept into main, push to a SHA-256 bare
// remote, and pull into a second clone, where list and show see the task
// as the first clone does.
func TestSHA256Repository(t *testing.T) {
	a := sha256Repo(t)
	if f := strings.TrimSpace(a.git("rev-parse", "--show-object-format")); f != "sha256" {
		t.Fatalf("object format %q, want sha256", f)
	}
	bare := filepath.Join(t.TempDir(), "remote.git")
	testrepo.Git(t, filepath.Dir(bare), "init", "-q", "--bare", "--object-format=sha256", bare)
	a.git("remote", "add", "origin", bare)
	a.git("push", "-q", "origin", "main")
	a.ok("init")

	tk := workedTask(t, a, "sha256 work", "hello.txt hello from sha256")
	if res := a.run(nil, "accept", tk.Slug); res.Code != 0 || !strings.Contains(res.Stdout, "squash-merged into main") {
		t.Fatalf("accept: %s", res)
	}
	if got := a.git("show", "main:hello.txt"); got != "hello from sha256" {
		t.Fatalf("main:hello.txt = %q", got)
	}
	if s := a.showFull(tk.Slug); s.Status != "complete" || s.Outcome != "accepted" {
		t.Fatalf("after accept: %s %q", s.Status, s.Outcome)
	}
	if out := a.ok("push"); !strings.Contains(out, "Pushed to origin") {
		t.Fatalf("push: %s", out)
	}

	dir := filepath.Join(t.TempDir(), "b")
	testrepo.Git(t, filepath.Dir(dir), "clone", "-q", bare, dir)
	b := &runner{t: t, dir: dir}
	if f := strings.TrimSpace(b.git("rev-parse", "--show-object-format")); f != "sha256" {
		t.Fatalf("clone's object format %q, want sha256", f)
	}
	b.git("config", "user.email", "b@example.com")
	b.git("config", "user.name", "B")
	b.ok("init")
	b.ok("pull")
	if a.ref(tk.ID) != b.ref(tk.ID) || len(a.ref(tk.ID)) != 64 {
		t.Fatalf("the clones disagree or the id is not SHA-256: %s vs %s", a.ref(tk.ID), b.ref(tk.ID))
	}
	for _, r := range []*runner{a, b} {
		if got := r.show(tk.Slug); got.ID != tk.ID || got.Status != "complete" || got.Outcome != "accepted" {
			t.Fatalf("show in %s: %+v", r.dir, got)
		}
		ts := r.list()
		if len(ts) != 1 || ts[0].ID != tk.ID || ts[0].Status != "complete" {
			t.Fatalf("list in %s: %+v", r.dir, ts)
		}
		if out := r.ok("list"); !strings.Contains(out, tk.Slug) {
			t.Fatalf("list in %s lacks the task:\n%s", r.dir, out)
		}
	}
}
