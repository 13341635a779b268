package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// An accept killed after stashing the user's changes and before giving
// them back, with the user working on meanwhile and another accept
// completing: doctor and status report the owed stash with the command
// that restores it, that command restores every byte, and the report
// goes once the changes are back.
func TestKilledAcceptOwesItsStashUntilRestored(t *testing.T) {
	r := newRepo(t)
	killed := workedTask(t, r, "killed accept", "k.txt work")
	later := workedTask(t, r, "later accept", "l.txt later")
	mine := map[string]string{"README.md": "# test\nmy edit\n", "notes.txt": "untracked notes\n"}
	for f, b := range mine {
		if err := os.WriteFile(filepath.Join(r.dir, f), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	marker := filepath.Join(t.TempDir(), "in-hook")
	hook(t, r, "post-commit", "touch "+marker+"\nsleep 600")
	cmd := startLazy(t, r, "accept", killed.Slug)
	waitFile(t, marker) // stashed and merged, not yet given back
	// The accept is alive and will give its stash back: not owed yet.
	if doc := r.run(nil, "doctor", "--dry-run"); strings.Contains(doc.Stdout, "owed-stash") {
		t.Fatalf("doctor reports the stash of an accept still running: %s", doc)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	if err := os.Remove(filepath.Join(r.dir, ".git", "hooks", "post-commit")); err != nil {
		t.Fatal(err)
	}
	// The user goes on working, so nothing can give the stash back
	// unasked; another accept stashes and restores around it.
	if err := os.WriteFile(filepath.Join(r.dir, "later.txt"), []byte("later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mine["later.txt"] = "later\n"
	r.run(nil, "accept", later.Slug)

	doc := r.run(nil, "doctor")
	m := regexp.MustCompile(`git -C (\S+) stash apply ([0-9a-f]{40})`).FindStringSubmatch(doc.Stdout)
	if doc.Code == 0 || !strings.Contains(doc.Stdout, "owed-stash") || m == nil {
		t.Fatalf("doctor does not report the owed stash with its restore command: %s", doc)
	}
	if st := r.run(nil, "status", "--json"); !strings.Contains(st.Stdout, `"owed_stashes"`) || !strings.Contains(st.Stdout, m[2]) {
		t.Fatalf("status --json does not report stash %s: %s", m[2], st)
	}
	if st := r.ok("status"); !strings.Contains(st, "stash apply "+m[2]) {
		t.Fatalf("status does not report stash %s: %s", m[2], st)
	}
	// As if killed between its stash and its record: status and a dry
	// run report the stash from the stash list and write nothing; doctor
	// records it.
	kept := strings.TrimSpace(r.git("for-each-ref", "--format=%(refname)", "refs/lazy-kept/stash/"))
	if !strings.HasSuffix(kept, "/"+m[2]) {
		t.Fatalf("the accept did not record its stash under refs/lazy-kept/stash/: %q", kept)
	}
	r.git("update-ref", "-d", kept)
	if st := r.ok("status"); !strings.Contains(st, "stash apply") {
		t.Fatalf("status does not report an unrecorded accept stash: %s", st)
	}
	if doc := r.run(nil, "doctor", "--dry-run"); !strings.Contains(doc.Stdout, "owed-stash") {
		t.Fatalf("doctor --dry-run does not report an unrecorded accept stash: %s", doc)
	}
	if refs := r.git("for-each-ref", "refs/lazy-kept/"); strings.TrimSpace(refs) != "" {
		t.Fatalf("status or doctor --dry-run wrote %s", refs)
	}
	if r.run(nil, "doctor"); strings.TrimSpace(r.git("for-each-ref", "--format=%(refname)", "refs/lazy-kept/stash/")) != kept {
		t.Fatalf("doctor did not record the stash again as %s", kept)
	}
	if m[1] != r.dir {
		t.Fatalf("the restore command runs in %s, not the checkout %s", m[1], r.dir)
	}
	r.git("stash", "apply", "--quiet", m[2])
	for f, want := range mine {
		if b, err := os.ReadFile(filepath.Join(r.dir, f)); err != nil || string(b) != want {
			t.Fatalf("%s after the restore: %q %v, want %q", f, b, err, want)
		}
	}
	if doc := r.run(nil, "doctor"); strings.Contains(doc.Stdout, "owed-stash") {
		t.Fatalf("doctor still reports the restored stash: %s", doc)
	}
	if got := r.show(killed.Slug).Status; got != "complete" {
		t.Fatalf("the killed accept's task: %s", got)
	}
}
