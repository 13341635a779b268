package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// lazy diff shows what the worktree has not committed, under a header
// that says so; before, it printed nothing while show listed the file.
func TestDiffShowsUncommittedWork(t *testing.T) {
	r := newRepo(t)
	r.git("config", "lazy.uncommitted", "keep")
	r = r.with(script(t, "write done.txt committed", "commit agent: done", "write left.txt not committed yet", "print done"))
	tk := r.create("half done")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	out := r.ok("diff", tk.Slug)
	i, j := strings.Index(out, "done.txt"), strings.Index(out, "# Uncommitted in the worktree")
	if i < 0 || j < i || !strings.Contains(out[j:], "+not committed yet") {
		t.Fatalf("diff:\n%s", out)
	}
	if names := r.ok("diff", "--name-only", tk.Slug); !strings.Contains(names, "done.txt") || !strings.Contains(names, "left.txt") {
		t.Fatalf("diff --name-only:\n%s", names)
	}
	if out := r.ok("diff", "--committed", tk.Slug); strings.Contains(out, "left.txt") || !strings.Contains(out, "done.txt") {
		t.Fatalf("diff --committed:\n%s", out)
	}
}

// The web view's diff is lazy diff's range: the merge base with the
// branch the task merges into. Another task's accepted work, merged in by
// a sync, is not this task's.
func TestWebDiffIsTheReviewRange(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	other := workedTask(t, r, "other work", "other.txt from another task")
	mine := workedTask(t, r, "my work", "mine.txt mine")
	r.ok("accept", other.Slug)
	if out := r.ok("sync", mine.Slug); !strings.Contains(out, "merged") {
		t.Fatalf("sync: %s", out)
	}
	if names := r.ok("diff", "--name-only", mine.Slug); strings.TrimSpace(names) != "mine.txt" {
		t.Fatalf("lazy diff: %q", names)
	}
	full, base := webURL(t, r)
	_, token, _ := strings.Cut(full, "/?token=")
	resp, err := http.Get(base + "/task/" + mine.ID + "?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	diff := string(page)
	if k := strings.Index(diff, `id="diff"`); k >= 0 {
		diff = diff[k:]
	}
	if !strings.Contains(diff, "mine.txt") || strings.Contains(diff, "other.txt") {
		t.Fatalf("the web view's diff:\n%.3000s", diff)
	}
}
