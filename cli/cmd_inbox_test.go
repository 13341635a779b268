package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// TestInboxListsWhatWaitsWithTheCommandThatAnswersIt: lazy inbox lists
// the parked tasks (a review, a budget, a change to what the gate runs)
// with where they wait and the one command, and --json and --count say
// the same; a backlog task waits on nobody.
func TestInboxListsWhatWaitsWithTheCommandThatAnswersIt(t *testing.T) {
	l := newLazy(t)
	if out := l.ok("inbox"); !strings.Contains(out, "Nothing waits on a human") {
		t.Fatalf("an empty inbox says:\n%s", out)
	}
	l.create("not started")
	review := l.worked("review me", "a.txt", "a\n")
	spent := l.worked("spent it", "b.txt", "b\n")
	l.set(spent.ID, func(sn *task.Snapshot) {
		sn.Task.Hold = &task.Hold{Kind: task.HoldBudget, At: sn.Task.UpdatedAt, Scope: "task", LimitUSD: 1, SpentUSD: 2}
	})
	// The gate runs check.sh: a change to it waits for a human's approval.
	if err := os.WriteFile(filepath.Join(l.dir, "check.sh"), []byte("exit 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, l.dir, "add", "check.sh")
	testrepo.Git(t, l.dir, "commit", "-q", "-m", "the gate's script")
	l.ok("config", "lazy.gate", "sh check.sh")
	gated := l.worked("edit the gate", "check.sh", "exit 0\n")

	out := l.ok("inbox")
	has(t, "lazy inbox", out,
		"lazy accept "+review.Slug+"\n", "lazy unblock "+spent.Slug+" --budget +N", "lazy accept "+gated.Slug+" --approve-protected",
		"protected: check.sh", "WAITING", "review me")
	hasNot(t, "lazy inbox", out, "not-started")

	var res struct {
		Items []struct {
			Kind, Slug, Host, Command string
			Status                    machine.Status
			WaitingSeconds            int64 `json:"waiting_seconds"`
		} `json:"items"`
		Unreadable []string `json:"unreadable"`
	}
	l.json(&res, "inbox", "--json")
	if len(res.Items) != 3 || res.Unreadable == nil {
		t.Fatalf("lazy inbox --json = %+v, want 3 items and an unreadable list", res)
	}
	kinds := map[string]string{}
	for _, it := range res.Items {
		kinds[it.Slug] = it.Kind
		if it.Host == "" || it.Status != machine.Blocked {
			t.Errorf("item %s: host %q status %s, want this clone's host, blocked", it.Slug, it.Host, it.Status)
		}
	}
	if kinds[review.Slug] != "blocked" || kinds[spent.Slug] != "over_budget" || kinds[gated.Slug] != "protected" {
		t.Errorf("kinds = %v", kinds)
	}
	if got := strings.TrimSpace(l.ok("inbox", "--count")); got != "3" {
		t.Errorf("lazy inbox --count = %q, want 3", got)
	}
	var n struct{ Count int }
	if l.json(&n, "inbox", "--count", "--json"); n.Count != 3 {
		t.Errorf("lazy inbox --count --json = %+v, want 3", n)
	}
}

// TestInboxShowsATaskPulledFromAnotherClone: a task parked on a second
// machine reaches this one's inbox by lazy pull, with that machine's
// host as where it waits, and the command to answer it here.
func TestInboxShowsATaskPulledFromAnotherClone(t *testing.T) {
	l := newLazy(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	testrepo.Git(t, l.dir, "init", "-q", "--bare", bare)
	testrepo.Git(t, l.dir, "remote", "add", "origin", bare)
	testrepo.Git(t, l.dir, "push", "-q", "origin", "main")
	testrepo.Git(t, bare, "symbolic-ref", "HEAD", "refs/heads/main")
	l.ok("init")
	here := testrepo.Git(t, l.dir, "config", "--get", "lazy.hostid")

	b := clone(t, l, bare)
	b.ok("init")
	there := testrepo.Git(t, b.dir, "config", "--get", "lazy.hostid")
	if there == "" || there == here {
		t.Fatalf("the clones' host ids are %q and %q: want two", here, there)
	}
	parked := b.worked("parked over there", "far.txt", "far\n")
	b.ok("push")

	if got := strings.TrimSpace(l.ok("inbox", "--count")); got != "0" {
		t.Fatalf("before the pull the inbox counts %s, want 0", got)
	}
	l.ok("pull")
	var res struct {
		Items []struct{ Slug, Host, Command string } `json:"items"`
	}
	l.json(&res, "inbox", "--json")
	if len(res.Items) != 1 || res.Items[0].Slug != parked.Slug || res.Items[0].Host != there ||
		res.Items[0].Command != "lazy accept "+parked.Slug {
		t.Fatalf("the inbox after the pull = %+v, want %s waiting on %s, answered by lazy accept", res.Items, parked.Slug, there)
	}
	has(t, "lazy inbox", l.ok("inbox"), parked.Slug, there)
}
