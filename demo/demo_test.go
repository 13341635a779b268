package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeLazy writes an executable script standing in for the lazy binary:
// body is its shell, run in the scratch repository.
func fakeLazy(t *testing.T, body string) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "lazy")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

func newDemo(t *testing.T, exe string) (*demo, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	repo := filepath.Join(t.TempDir(), "project")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	return &demo{out: &out, exe: exe, repo: repo}, &out
}

// TestShEchoesTheCommandAndItsOutput: a step shows the command as a
// person would type it (the binary as lazy, arguments quoted for a
// shell) and its output indented, and fails when it ends otherwise than
// the step wants.
func TestShEchoesTheCommandAndItsOutput(t *testing.T) {
	exe := fakeLazy(t, `echo "ran in $(basename "$PWD"): $*"; [ "$1" != fail ]`)
	d, out := newDemo(t, exe)
	d.say("the first step")
	got, err := d.lazy(context.Background(), "create", "Fix the login", "-m", "it's broken")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "ran in project: create Fix the login -m it's broken") {
		t.Errorf("output %q", got)
	}
	want := "\n[1] the first step\n$ lazy create 'Fix the login' -m 'it'\\''s broken'\n  ran in project: create Fix the login -m it's broken\n"
	if out.String() != want {
		t.Errorf("shown:\n%q\nwant:\n%q", out.String(), want)
	}
	if _, err := d.lazy(context.Background(), "fail"); err == nil || !strings.Contains(err.Error(), "demo step 1 failed: lazy fail") {
		t.Errorf("a failing step: %v", err)
	}
	if _, err := d.sh(context.Background(), false, "", exe, "fail"); err != nil {
		t.Errorf("a step that should fail and did: %v", err)
	}
	if _, err := d.sh(context.Background(), false, "", exe, "ok"); err == nil || !strings.Contains(err.Error(), "should have failed") {
		t.Errorf("a step that should fail and did not: %v", err)
	}
}

// TestShRunsInAScratchWorld: the commands get their stdin, and the
// environment keeps them in the scratch directory under the demo's own
// identity, whoever runs it.
func TestShRunsInAScratchWorld(t *testing.T) {
	t.Setenv("LAZY_ACTOR", "someone")
	exe := fakeLazy(t, `read line; echo "in=$line actor=[$LAZY_ACTOR] data=$(basename "$XDG_DATA_HOME") author=$GIT_AUTHOR_NAME nosystem=$GIT_CONFIG_NOSYSTEM"`)
	d, _ := newDemo(t, exe)
	got, err := d.sh(context.Background(), true, "typed\n", exe)
	if err != nil {
		t.Fatal(err)
	}
	if want := "in=typed actor=[] data=data author=lazy demo nosystem=1\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestExpect(t *testing.T) {
	d := &demo{step: 4}
	if err := d.expect("Created fix-login (abc) in backlog", "in backlog"); err != nil {
		t.Error(err)
	}
	if err := d.expect("Created fix-login", "blocked"); err == nil || err.Error() != `demo step 4: expected "blocked" in the output` {
		t.Errorf("a missing word: %v", err)
	}
}

func TestQuoteAll(t *testing.T) {
	got := quoteAll([]string{"plain", "", "two words", "it's", "$HOME", "a*b", "--flag=x"})
	want := []string{"plain", "''", "'two words'", `'it'\''s'`, "'$HOME'", "'a*b'", "--flag=x"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("quoteAll = %q, want %q", got, want)
	}
}

// TestWaitParked: the tour waits quietly while the turn works, says once
// how it ended, and fails when it ended otherwise than blocked.
func TestWaitParked(t *testing.T) {
	count := filepath.Join(t.TempDir(), "count")
	exe := fakeLazy(t, `n=$(cat `+count+` 2>/dev/null || echo 0); n=$((n+1)); echo $n > `+count+`
if [ $n -lt 3 ]; then echo '{"status":"working"}'; else echo '{"status":"'$STATUS'"}'; fi`)
	t.Setenv("STATUS", "blocked")
	d, out := newDemo(t, exe)
	if err := d.waitParked(context.Background(), "fix-login"); err != nil {
		t.Fatal(err)
	}
	if out.String() != "  (the turn ended; fix-login is now blocked)\n" {
		t.Errorf("shown %q", out.String())
	}
	_ = os.Remove(count)
	t.Setenv("STATUS", "interrupted")
	if err := d.waitParked(context.Background(), "fix-login"); err == nil || !strings.Contains(err.Error(), "ended as interrupted, not blocked") {
		t.Errorf("an interrupted turn: %v", err)
	}
	bad := fakeLazy(t, `echo not json`)
	d.exe = bad
	if err := d.waitParked(context.Background(), "fix-login"); err == nil || !strings.Contains(err.Error(), "demo: lazy show fix-login") {
		t.Errorf("a show that says no JSON: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d.exe = fakeLazy(t, `echo '{"status":"working"}'`)
	if err := d.waitParked(ctx, "fix-login"); err == nil {
		t.Error("a cancelled wait did not end")
	}
}

// TestRunKeepsOrRemovesTheScratchRepository: the tour's scratch
// repository goes when it ends, unless kept, and then it says where.
func TestRunKeepsOrRemovesTheScratchRepository(t *testing.T) {
	exe := fakeLazy(t, `exit 3`) // the tour's first lazy command fails
	for _, keep := range []bool{false, true} {
		dir := t.TempDir()
		var out bytes.Buffer
		if err := Run(context.Background(), &out, exe, dir, keep); err == nil {
			t.Fatal("a tour whose lazy fails succeeded")
		}
		left, _ := os.ReadDir(dir)
		if keep != (len(left) == 1) || keep != strings.Contains(out.String(), "The scratch repository is kept at "+dir) {
			t.Errorf("keep %v: left %d entries, said:\n%s", keep, len(left), out.String())
		}
	}
}
