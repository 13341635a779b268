package cli

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// pushPoolFile pushes, to the bare repository, a commit holding one file
// under refs/lazy-pool/REF, as anyone with push access could.
func pushPoolFile(t *testing.T, bare, ref, name, content string) {
	t.Helper()
	git := func(stdin string, args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", bare, "-c", "user.name=m", "-c", "user.email=m@example.com"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	blob := git(content, "hash-object", "-w", "--stdin")
	tree := git("100644 blob "+blob+"\t"+name+"\n", "mktree")
	commit := git("crafted\n", "commit-tree", tree)
	git("", "update-ref", "refs/lazy-pool/"+ref, commit)
}

// TestPoolCountIsTheFigureAScalerReads: lazy pool --count prints one
// integer, the pooled tasks no live claim holds that a runner could
// start; a claim lazy does not accept (garbage on the remote) holds
// nothing, so its task counts, and lazy exits 0; --json carries the same
// number as waiting_count; --count with --json is a usage error.
func TestPoolCountIsTheFigureAScalerReads(t *testing.T) {
	l := newLazy(t)
	l.fails(1, []string{"pool", "--count"}, "this repository has no remote")
	bare := filepath.Join(t.TempDir(), "remote.git")
	testrepo.Git(t, l.dir, "init", "-q", "--bare", bare)
	testrepo.Git(t, l.dir, "remote", "add", "origin", bare)
	if out := l.ok("pool", "--count"); out != "0\n" {
		t.Errorf("lazy pool --count on an empty pool: %q, want \"0\\n\"", out)
	}

	free := l.create("free")
	held := l.create("held")
	hostile := l.create("hostile")
	first := l.create("first")
	after := l.create("after", "--after", first.Slug)
	l.create("not pooled")
	l.ok("start", "--pool", free.Slug, held.Slug, hostile.Slug, after.Slug)
	expires := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	pushPoolFile(t, bare, "claims/"+held.ID, "claim.json",
		fmt.Sprintf(`{"task":%q,"runner":"r1","generation":1,"lease_expires":%q,"claimed_at":%q,"renewed_at":%q}`, held.ID, expires, expires, expires))
	pushPoolFile(t, bare, "claims/"+hostile.ID, "claim.json", `{"task": "`)
	pushPoolFile(t, bare, "claims/not-a-task-id", "claim.json", strings.Repeat("{", 100<<10))

	if out := l.ok("pool", "--count"); out != "2\n" {
		t.Errorf("lazy pool --count: %q, want \"2\\n\" (free and hostile; held is claimed live, after waits for first)", out)
	}
	var v struct {
		WaitingCount *int  `json:"waiting_count"`
		Waiting      []any `json:"waiting"`
		Skipped      []any `json:"skipped"`
	}
	l.json(&v, "pool", "--json")
	if v.WaitingCount == nil || *v.WaitingCount != 2 || len(v.Waiting) != 3 || len(v.Skipped) != 2 {
		t.Errorf("lazy pool --json: waiting_count %v, %d waiting, %d skipped; want 2, 3 (after too, with why), 2", v.WaitingCount, len(v.Waiting), len(v.Skipped))
	}
	l.fails(2, []string{"pool", "--count", "--json"}, "give one of them")
	if out := l.ok("pool", "--count", "--local"); out != "2\n" {
		t.Errorf("lazy pool --count --local: %q", out)
	}
}
