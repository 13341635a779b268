package e2e

import (
	"encoding/json"
	"testing"
	"time"
)

// TestPoolRunnerPushesAParkAtOnce: a runner's task that parks for a
// human reaches another clone's lazy pull && lazy inbox within a couple
// of seconds, not at the runner's next round (--poll 9s here): the
// runner pushes a park between its rounds, fenced by its claim.
func TestPoolRunnerPushesAParkAtOnce(t *testing.T) {
	n := newPoolNet(t)
	m := n.machine("r")
	tk := n.queue(1, "park")[0]
	p := startRunner(m, "r", "--lease", "30s", "--poll", "9s")
	defer p.stop()
	poolWait(t, 60*time.Second, "the agent's run to end", func() bool {
		rs := n.runs()[tk.ID]
		return len(rs) == 1 && !rs[0].End.IsZero()
	})
	ended := n.runs()[tk.ID][0].End
	poolWait(t, 60*time.Second, "the park on the remote", func() bool { return n.record(tk.ID).Status == "blocked" })
	pushed := time.Now()
	n.human.ok("pull")
	var out struct {
		Items []struct{ Slug, Status string } `json:"items"`
	}
	if err := json.Unmarshal([]byte(n.human.ok("inbox", "--json")), &out); err != nil {
		t.Fatalf("lazy inbox --json: %v", err)
	}
	seen := time.Now()
	if len(out.Items) != 1 || out.Items[0].Slug != tk.Slug || out.Items[0].Status != "blocked" {
		t.Fatalf("the other clone's inbox after one lazy pull: %+v, want %s blocked", out.Items, tk.Slug)
	}
	t.Logf("agent's end to the park on the remote: %s; then lazy pull && lazy inbox: %s (runner --poll 9s)",
		pushed.Sub(ended).Round(time.Millisecond), seen.Sub(pushed).Round(time.Millisecond))
	if d := pushed.Sub(ended); d > 4*time.Second {
		t.Fatalf("the park reached the remote %s after the agent ended: the runner waited for its next round (--poll 9s) instead of pushing it at once", d)
	}
}
