package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// pullReport is the part of lazy pull --json these tests read.
type pullReport struct {
	FastForwarded []string `json:"fast_forwarded"`
	Refused       []struct {
		Task   string `json:"task"`
		Reason string `json:"reason"`
	} `json:"refused"`
	Unverified []struct {
		Task   string `json:"task"`
		Reason string `json:"reason"`
	} `json:"unverified"`
}

// TestPulledFastForwardCannotCompleteATask is issue 29's third finding:
// an attacker's commit on top of the victim's own blocked task claims
// `complete, accepted`. Pull would have fast-forwarded it; doctor would
// then have removed the worktree and deleted the branch of work that was
// never merged. The change is refused with a reason, in text and JSON,
// and the task, its worktree and its branch stay as they were.
func TestPulledFastForwardCannotCompleteATask(t *testing.T) {
	victim, attacker := clones(t)
	mine := workedTask(t, victim, "victim work", "v.txt v")
	victim.ok("push")
	attacker.ok("init")
	vs := sessionOf(t, attacker, mine.ID)
	wt, branch := vs["worktree"].(string), vs["branch"].(string)
	before := victim.ref(mine.ID)

	craft(t, attacker.dir, "refs/lazy/tasks/"+mine.ID, func(f map[string][]byte) {
		setJSON(t, f, "task.json", map[string]any{"status": "complete", "outcome": "accepted"})
		setJSON(t, f, "op.json", map[string]any{"op": "accept", "actor": "human", "from": "blocked", "to": "complete", "reason": "merged into main"})
	})
	attacker.git("push", "-q", "origin", "refs/lazy/tasks/"+mine.ID+":refs/lazy/tasks/"+mine.ID)

	res := victim.run(nil, "pull")
	if res.Code != 0 || !strings.Contains(res.Stdout, "refused "+mine.Slug) || !strings.Contains(res.Stdout, "lazy accept") {
		t.Fatalf("pull did not refuse the crafted completion:\n%s", res)
	}
	if got := victim.ref(mine.ID); got != before {
		t.Fatalf("the local record moved from %s to %s", before, got)
	}
	var rep pullReport
	if err := json.Unmarshal([]byte(victim.ok("pull", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Refused) != 1 || rep.Refused[0].Task != mine.Slug || rep.Refused[0].Reason == "" || len(rep.FastForwarded) != 0 {
		t.Fatalf("pull --json: %+v", rep)
	}
	if got := victim.list(); len(got) != 1 || got[0].Status != "blocked" {
		t.Fatalf("list after the pull: %+v", got)
	}
	if s := victim.show(mine.Slug); s.Status != "blocked" || s.Outcome != "" {
		t.Fatalf("show after the pull: %s (%s)", s.Status, s.Outcome)
	}
	victim.run(nil, "doctor")
	if _, err := os.Stat(wt); err != nil {
		t.Fatalf("doctor removed the worktree: %v", err)
	}
	if got := victim.git("rev-parse", "--verify", "refs/heads/"+branch); got == "" {
		t.Fatal("doctor deleted the branch")
	}
	// The work is still the victim's to accept.
	victim.ok("accept", mine.Slug)
	if got := victim.git("show", "main:v.txt"); got != "v" {
		t.Fatalf("main lacks the victim's work: %q", got)
	}
}

// TestPulledRealAcceptFastForwards: an accept made by lazy on another
// machine still arrives by fast-forward and shows as accepted.
func TestPulledRealAcceptFastForwards(t *testing.T) {
	a, b := clones(t)
	tk := workedTask(t, a, "remote work", "r.txt r")
	a.ok("push")
	b.ok("init")
	if s := b.show(tk.Slug); s.Status != "blocked" {
		t.Fatalf("before the accept: %s", s.Status)
	}
	a.ok("accept", tk.Slug)
	a.ok("push")
	a.git("push", "-q", "origin", "main")
	b.git("fetch", "-q", "origin")

	var rep pullReport
	if err := json.Unmarshal([]byte(b.ok("pull", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.FastForwarded) != 1 || rep.FastForwarded[0] != tk.Slug || len(rep.Refused) != 0 {
		t.Fatalf("pull --json: %+v", rep)
	}
	if s := b.show(tk.Slug); s.Status != "complete" || s.Outcome != "accepted" {
		t.Fatalf("after the pull: %s (%s)", s.Status, s.Outcome)
	}
	if a.ref(tk.ID) != b.ref(tk.ID) {
		t.Fatal("the clones disagree")
	}
}

// TestDoctorKeepsTheWorktreeOfAPulledClose: a close is a transition any
// machine may make, so pull takes it in; but doctor removes a finished
// task's worktree only on a status this machine can confirm, and a close
// made elsewhere is not one.
func TestDoctorKeepsTheWorktreeOfAPulledClose(t *testing.T) {
	victim, attacker := clones(t)
	mine := workedTask(t, victim, "victim work", "v.txt v")
	victim.ok("push")
	attacker.ok("init")
	vs := sessionOf(t, attacker, mine.ID)
	wt, branch := vs["worktree"].(string), vs["branch"].(string)
	craft(t, attacker.dir, "refs/lazy/tasks/"+mine.ID, func(f map[string][]byte) {
		setJSON(t, f, "task.json", map[string]any{"status": "abandoned", "outcome": "closed"})
		setJSON(t, f, "op.json", map[string]any{"op": "close", "actor": "human", "from": "blocked", "to": "abandoned"})
	})
	attacker.git("push", "-q", "origin", "refs/lazy/tasks/"+mine.ID+":refs/lazy/tasks/"+mine.ID)
	if out := victim.ok("pull"); !strings.Contains(out, "1 updated") {
		t.Fatalf("pull: %s", out)
	}
	res := victim.run(nil, "doctor")
	if !strings.Contains(res.Stdout, "cannot confirm") {
		t.Fatalf("doctor does not say why it keeps the worktree:\n%s", res)
	}
	if _, err := os.Stat(wt); err != nil {
		t.Fatalf("doctor removed the worktree of a task closed elsewhere: %v", err)
	}
	if got := victim.git("rev-parse", "--verify", "refs/heads/"+branch); got == "" {
		t.Fatal("the branch is gone")
	}
}
