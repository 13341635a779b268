package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// clones returns two lazy repositories sharing a bare remote, origin.
func clones(t *testing.T) (*runner, *runner) {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "remote.git")
	testrepo.Git(t, filepath.Dir(bare), "init", "-q", "--bare", bare)
	a := newRepo(t)
	// A relative URL, as people write them: it is relative to the work
	// tree, which is where lazy must run git fetch and push.
	rel, err := filepath.Rel(a.dir, bare)
	if err != nil {
		t.Fatal(err)
	}
	a.git("remote", "add", "origin", rel)
	a.git("push", "-q", "origin", "main")
	a.ok("init")
	dir := filepath.Join(t.TempDir(), "b")
	testrepo.Git(t, filepath.Dir(dir), "clone", "-q", bare, dir)
	testrepo.Git(t, dir, "config", "user.email", "b@example.com")
	testrepo.Git(t, dir, "config", "user.name", "B")
	return a, &runner{t: t, dir: dir}
}

func (r *runner) ref(id string) string {
	r.t.Helper()
	return strings.TrimSpace(r.git("rev-parse", "refs/lazy/tasks/"+id))
}

func TestPushPullConvergeBetweenClones(t *testing.T) {
	a, b := clones(t)
	tk := a.create("shared work", "-m", "Both machines edit this.")
	a.ok("comment", tk.Slug, "-m", "first, from a")
	if out := a.ok("push"); !strings.Contains(out, "Pushed to origin: 1 task sent (new there)\n") {
		t.Fatalf("push: %s", out)
	}
	if out := a.ok("push"); out != "Pushed to origin: nothing to send; 1 task already up to date there\n" {
		t.Fatalf("a push with nothing to send: %q", out)
	}
	// A clone with tasks on its remote starts with them.
	if out := b.ok("init"); !strings.Contains(out, "took in 1 task\n") {
		t.Fatalf("init on a clone: %s", out)
	}
	if got := b.show(tk.Slug); got.ID != tk.ID || got.Comments != 1 {
		t.Fatalf("bootstrapped task %+v", got)
	}

	a.ok("comment", tk.Slug, "-m", "from a, concurrently")
	b.ok("comment", tk.Slug, "-m", "from b, concurrently")
	b.ok("close", tk.Slug, "-m", "b thinks it is done")
	a.ok("push")
	if out := b.ok("push"); !strings.Contains(out, "Pushed to origin: 1 task sent; the remote had moved, so lazy merged its records in first (once): 1 merged (changed on both sides)\n") {
		t.Fatalf("b's push should have merged first: %s", out)
	}
	if out := a.ok("pull"); out != "Pulled from origin: 1 updated\n" {
		t.Fatalf("a's pull: %s", out)
	}
	if a.ref(tk.ID) != b.ref(tk.ID) {
		t.Fatalf("the clones disagree: %s vs %s", a.ref(tk.ID), b.ref(tk.ID))
	}
	s := a.showFull(tk.Slug)
	if s.Status != "abandoned" || s.Comments != 4 {
		t.Fatalf("merged task: %s with %d comments", s.Status, s.Comments)
	}
	// Nothing left to do either way: no endless merge commits.
	before := a.ref(tk.ID)
	a.ok("pull")
	b.ok("pull")
	a.ok("push")
	if a.ref(tk.ID) != before || b.ref(tk.ID) != before {
		t.Fatal("a no-op sync changed the record")
	}
}

func TestAnotherHostsTurnIsLeftAlone(t *testing.T) {
	a, b := clones(t)
	a = a.with(script(t, "print working over there", "hang"))
	tk := a.create("remote turn")
	a.ok("start", tk.Slug, "--command", fakeAgentBin)
	agentPID(t, a)
	a.ok("push")
	b.git("config", "lazy.startGrace", "1s")
	b.ok("init")
	info := b.showFull(tk.Slug)
	if info.Status != "working" || !strings.HasPrefix(info.Live, "on ") {
		t.Fatalf("another host's turn shows as %s (%q)", info.Status, info.Live)
	}
	if out := b.ok("list"); !strings.Contains(out, "working (on ") {
		t.Fatalf("list: %s", out)
	}
	// Past the grace period (1 s here), reconciling over and over, it is
	// still not judged here.
	for start := time.Now(); time.Since(start) < 1500*time.Millisecond; {
		b.ok("list")
	}
	if msg := b.fails(1, nil, "stop", tk.Slug); !strings.Contains(msg, "runs on host") || !strings.Contains(msg, "take-over") {
		t.Fatalf("stop from another host: %s", msg)
	}
	b.ok("list")
	if got := b.show(tk.Slug); got.Status != "working" {
		t.Fatalf("another host's turn became %s here", got.Status)
	}
	a.ok("stop", tk.Slug)
}

func TestHostileRemoteRecordsAreRefused(t *testing.T) {
	a, b := clones(t)
	good := a.create("good task")
	branch := a.create("bad branch")
	slug := a.create("bad slug")
	a.editTaskJSON(branch.ID, func(m map[string]any) { m["target_branch"] = "--upload-pack=touch /tmp/pwned" })
	a.editTaskJSON(slug.ID, func(m map[string]any) { m["slug"] = "../../etc" })
	a.ok("push")
	res := b.run(nil, "pull")
	if res.Code != 0 {
		t.Fatalf("pull with hostile records: %s", res)
	}
	for _, id := range []string{branch.ID, slug.ID} {
		if !strings.Contains(res.Stderr, "skipped refs/lazy-remotes/origin/tasks/"+id) {
			t.Fatalf("the hostile record %s was not reported: %s", id, res.Stderr)
		}
		if _, err := gitErr(b, "rev-parse", "--verify", "refs/lazy/tasks/"+id); err == nil {
			t.Fatalf("the hostile record %s was taken in", id)
		}
	}
	if got := b.show(good.Slug); got.ID != good.ID {
		t.Fatal("the good task did not come along")
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Fatal("a remote branch name reached git argv")
	}
	if msg := b.fails(1, nil, "pull", "--", "--upload-pack=x"); !strings.Contains(msg, "invalid remote name") {
		t.Fatalf("a hostile remote name: %s", msg)
	}
}
