package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// lazy start --wait on a terminal redraws one status line, the task's
// slug, what it is doing and the time so far, and erases it before the
// result; piped, the same command writes none of it.
func TestProgressLineOnlyOnATerminal(t *testing.T) {
	r := newRepo(t)
	release := filepath.Join(t.TempDir(), "release")
	rr := r.with(script(t, "wait-file "+release, "write p.txt p", "commit agent: p", "print done"))
	tk := rr.create("shown on a tty", "-m", "Goal.")
	cmd, _, output := ptyRun(t, rr, &pty.Winsize{Rows: 24, Cols: 100}, "start", tk.Slug, "--command", fakeAgentBin, "--wait")
	line := regexp.MustCompile(`\r` + regexp.QuoteMeta(tk.Slug) + `: [^\r\n]+ · \d+s\x1b\[K`)
	deadline := time.Now().Add(30 * time.Second)
	for !line.MatchString(output()) {
		if time.Now().After(deadline) {
			t.Fatalf("no progress line on the terminal:\n%q", output())
		}
		time.Sleep(20 * time.Millisecond) // poll the pty's output
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("start --wait: %v\n%q", err, output())
	}
	out := output()
	last := strings.LastIndex(out, "\r\x1b[K") // the line erased
	if last < 0 || !strings.Contains(out[last:], tk.Slug+": blocked; next:") {
		t.Fatalf("the line was not erased before the result:\n%q", out)
	}

	// Piped: the same wait, not a byte of the line.
	tk2 := rr.create("piped", "-m", "Goal.")
	if err := os.Remove(release); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() { done <- rr.run(nil, "start", tk2.Slug, "--command", fakeAgentBin, "--wait") }()
	rr.waitSubstate(tk2.Slug)
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Code != 0 || !strings.Contains(res.Stdout, tk2.Slug+": blocked") {
		t.Fatalf("piped start --wait: %s", res)
	}
	if strings.ContainsAny(res.Stderr+res.Stdout, "\r\x1b") || strings.Contains(res.Stderr, " · ") {
		t.Fatalf("a progress line in a pipe: %s", res)
	}
}

// waitSubstate polls until name is working with a live substate, so a
// wait started before it has polled at least once while it ran.
func (r *runner) waitSubstate(name string) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := r.ok("status", "--json")
		if strings.Contains(out, `"substate"`) && strings.Contains(out, name) {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s never showed a substate:\n%s", name, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
