package e2e

import (
	"strings"
	"testing"
)

// The agent's log outlives accept, reject and reopen, and lazy logs never
// says turns ran on another host when they ran here.
func TestLogsSurviveTheTaskEnding(t *testing.T) {
	r := newRepo(t)
	accepted := workedTask(t, r, "to accept", "a.txt a")
	rejected := workedTask(t, r, "to reject", "b.txt b")
	r.ok("accept", accepted.Slug)
	r.ok("reject", rejected.Slug, "-m", "not wanted")
	for _, tk := range []task{accepted, rejected} {
		res := r.run(nil, "logs", tk.Slug)
		if res.Code != 0 || !strings.Contains(res.Stdout, "did "+tk.Title) || strings.Contains(res.Stderr, "on host") {
			t.Fatalf("logs of %s after it ended: %s", tk.Slug, res)
		}
	}
	r.ok("reopen", rejected.Slug, "--reason", "wanted after all")
	again := r.with(script(t, "print second run"))
	again.ok("unblock", rejected.Slug, "-m", "once more")
	again.waitStatus(rejected.Slug, "blocked")
	if out := r.ok("logs", rejected.Slug); !strings.Contains(out, "did to reject") || !strings.Contains(out, "second run") {
		t.Fatalf("logs after reopen:\n%s", out)
	}
}
