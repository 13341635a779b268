package e2e

import (
	"strings"
	"testing"
)

// A submit that cannot reach its remote says so (no blame on a push
// race), and leaves the task as it was: never submitted without a pull
// request. Once the network is back, the same command works.
func TestSubmitWithoutNetworkSaysSoAndLeavesTheTaskAsItWas(t *testing.T) {
	f := newFakeForge(t)
	r := f.r
	tk := workedTask(t, r, "Offline work", "o.txt offline")

	r.git("remote", "set-url", "origin", "http://127.0.0.1:1/x.git")
	msg := r.fails(1, nil, "submit", tk.Slug)
	if !strings.Contains(msg, "could not reach remote origin") || !strings.Contains(msg, "check the network and run lazy submit again") {
		t.Fatalf("an offline submit said: %s", msg)
	}
	if strings.Contains(msg, "someone else may have pushed") {
		t.Fatalf("an offline submit blamed a push race: %s", msg)
	}
	if s := f.pr(tk.Slug); s.Status != "blocked" || s.PR != nil && s.PR.Number != 0 {
		t.Fatalf("after an offline submit the task is %s with %+v, want blocked without a pull request", s.Status, s.PR)
	}
	if n := len(f.load().PRs); n != 0 {
		t.Fatalf("an offline submit opened %d pull requests", n)
	}

	r.git("remote", "set-url", "origin", f.remote)
	if out := r.ok("submit", tk.Slug); !strings.Contains(out, "opened pull request #1") {
		t.Fatalf("submit once back online: %s", out)
	}
	if s := f.pr(tk.Slug); s.Status != "submitted" || s.PR == nil || s.PR.Number != 1 {
		t.Fatalf("after the retried submit: %+v", s)
	}
}
