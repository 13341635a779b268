package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lazy.copyFiles and lazy.setup prepare a new worktree before its first
// turn, with their output in the turn's log; a failing setup parks the
// task blocked with the reason, and runs again on the next turn.
func TestSetupPreparesTheWorktree(t *testing.T) {
	r := newRepo(t)
	if err := os.WriteFile(filepath.Join(r.dir, ".gitignore"), []byte(".env\nsetup.out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("add", ".gitignore")
	r.git("commit", "-q", "-m", "ignore local files")
	if err := os.WriteFile(filepath.Join(r.dir, ".env"), []byte("SECRET=local\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	count := filepath.Join(t.TempDir(), "setups")
	r.git("config", "lazy.copyFiles", ".env")
	r.git("config", "lazy.setup", `echo SETUP-RAN; cp .env setup.out; echo run >> "$SETUP_COUNT"`)
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	r = r.with("SETUP_COUNT="+count, script(t, "argv "+argvFile, "print agent ran"))
	tk := r.create("prepared")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	wt := r.waitStatus(tk.Slug, "blocked").Session.Worktree
	for _, f := range []string{".env", "setup.out"} {
		if b, err := os.ReadFile(filepath.Join(wt, f)); err != nil || string(b) != "SECRET=local\n" {
			t.Fatalf("%s in the worktree: %q, %v", f, b, err)
		}
	}
	if out := r.ok("logs", tk.Slug); !strings.Contains(out, "setup: echo SETUP-RAN") || !strings.Contains(out, "SETUP-RAN") || !strings.Contains(out, "copied .env") {
		t.Fatalf("the setup's output is not in the log:\n%s", out)
	}
	r.ok("unblock", tk.Slug, "-m", "next")
	r.waitStatus(tk.Slug, "blocked")
	if b, _ := os.ReadFile(count); string(b) != "run\n" {
		t.Fatalf("setup ran %q times; once per worktree", b)
	}

	// A failing setup: blocked with the reason, and the agent never ran.
	r.git("config", "lazy.setup", "echo cannot install >&2; exit 3")
	argv2 := filepath.Join(t.TempDir(), "argv.json")
	f := r.with(script(t, "argv "+argv2, "print agent ran"))
	tk2 := f.create("setup fails")
	f.ok("start", tk2.Slug, "--command", fakeAgentBin)
	s := f.waitStatus(tk2.Slug, "blocked")
	if !strings.Contains(s.Session.InterruptReason, "setup_failed") || !strings.Contains(s.Session.InterruptReason, "exit status 3") {
		t.Fatalf("reason %q", s.Session.InterruptReason)
	}
	if _, err := os.Stat(argv2); err == nil {
		t.Fatal("the agent ran after its setup failed")
	}
	if out := f.ok("logs", tk2.Slug); !strings.Contains(out, "cannot install") {
		t.Fatalf("the failed setup's output is not in the log:\n%s", out)
	}
	f.git("config", "lazy.setup", "true")
	f.ok("unblock", tk2.Slug, "-m", "the setup is fixed")
	f.waitStatus(tk2.Slug, "blocked")
	if _, err := os.Stat(argv2); err != nil {
		t.Fatal("the agent did not run once the setup was fixed")
	}
}
