package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestWatchFollowsTheDaemonAndStatusSummarizes(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	// Long enough to outlast a daemon tick (2 s): the watcher must see the
	// agent working even if the launch poke came before its first report.
	r = r.with(script(t, "print starting", "sleep 4s", "print done"))
	tk := r.create("watched")
	r.ok("daemon", "--ensure")
	lines := startLines(t, r.dir, r.environ(), "watch")
	expect := func(want string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		var seen []string
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("watch ended before %q", want)
				}
				seen = append(seen, l)
				if strings.Contains(l, want) {
					return
				}
			case <-deadline:
				t.Fatalf("watch never printed %q (saw %q)", want, seen)
			}
		}
	}
	expect(tk.Slug + " backlog")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	expect(tk.Slug + " working (agent")

	var st struct {
		Counts map[string]int `json:"counts"`
		Active []struct {
			Slug, Status, Substate string
		} `json:"active"`
		Daemon *struct{ PID int } `json:"daemon"`
	}
	if err := json.Unmarshal([]byte(r.ok("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Counts["working"] != 1 || len(st.Active) != 1 || !strings.HasPrefix(st.Active[0].Substate, "agent") || st.Daemon == nil {
		t.Fatalf("status while working: %+v", st)
	}
	if out := r.ok("status"); !strings.Contains(out, "1 working") || !strings.Contains(out, "working (agent") {
		t.Fatalf("status: %s", out)
	}
	expect(tk.Slug + " blocked")
	if out := r.ok("active"); !strings.Contains(out, "No tasks.") {
		t.Fatalf("active after the turn: %s", out)
	}
}
