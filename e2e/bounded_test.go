package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPullReportsHugeRecordUnread: a task.json far over the limit,
// pushed from an attacker's clone, is reported by pull (text and --json)
// as oversize and not taken in; list and show on the clone that holds it
// report it as corrupt and go on. gitstore's TestOversizeRecordIsNeverRead
// proves, by counting allocations, that no path reads its content.
func TestPullReportsHugeRecordUnread(t *testing.T) {
	victim, attacker := clones(t)
	honest := victim.create("honest work")
	victim.ok("push")
	attacker.ok("init")
	attacker.ok("pull")
	huge := attacker.create("huge")
	craft(t, attacker.dir, "refs/lazy/tasks/"+huge.ID, func(f map[string][]byte) {
		setJSON(t, f, "task.json", map[string]any{"padding": strings.Repeat("x", 64<<20)})
	})
	attacker.git("push", "-q", "origin", "refs/lazy/tasks/"+huge.ID+":refs/lazy/tasks/"+huge.ID)

	res := victim.run(nil, "pull")
	if res.Code != 0 || !strings.Contains(res.Stderr, "skipped refs/lazy-remotes/origin/tasks/"+huge.ID) || !strings.Contains(res.Stderr, "over lazy's size limit of 1 MiB") {
		t.Fatalf("pull did not report the huge record:\n%s", res)
	}
	var rep struct {
		Skipped []struct{ Ref, Reason string } `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(victim.ok("pull", "--json")), &rep); err != nil || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "64.0 MiB") {
		t.Fatalf("pull --json: %+v (%v)", rep, err)
	}
	if got := victim.list(); len(got) != 1 || got[0].ID != honest.ID {
		t.Fatalf("the victim's list: %+v", got)
	}
	victim.fails(1, nil, "show", huge.ID)

	// Where it does live, it is reported and the others still list.
	res = attacker.run(nil, "list")
	if !strings.Contains(res.Stdout, honest.Slug) || !strings.Contains(res.Stderr, huge.ID) || !strings.Contains(res.Stderr, "over lazy's size limit") {
		t.Fatalf("list on the clone holding it:\n%s", res)
	}
	if msg := attacker.fails(1, nil, "show", huge.ID); !strings.Contains(msg, "it was not read") {
		t.Fatalf("show: %s", msg)
	}
}
