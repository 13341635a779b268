package pool

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

const taskID = "0123456789abcdef"

// TestPoolCommandsArgv pins what the pool asks git.
func TestPoolCommandsArgv(t *testing.T) {
	c1, c2 := "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	for _, tc := range []struct {
		name string
		cmd  *gitcli.Cmd
		want []string
	}{
		{"fetch", fetchCmd("r", "origin"), []string{"fetch", "--quiet", "--no-tags", "--prune", "origin", "+refs/lazy-pool/*:refs/lazy-pool-remotes/origin/*"}},
		{"list", listCmd("r", "refs/lazy-pool-remotes/origin/claims/"), []string{"for-each-ref", "--format=%(objectname) %(refname)", "refs/lazy-pool-remotes/origin/claims/"}},
		{"typed list", typedListCmd("r", "refs/lazy-pool-remotes/origin/claims/", 10001), []string{"for-each-ref", "--count=10001", "--format=%(objectname) %(objecttype) %(refname)", "refs/lazy-pool-remotes/origin/claims/"}},
		{"max lease", maxLeaseCmd("r"), []string{"config", "--get", "lazy.pool.maxLease"}},
		{"hash", hashCmd("r", nil), []string{"hash-object", "-w", "--stdin"}},
		{"mktree", mktreeCmd("r", nil), []string{"mktree"}},
		{"commit", commitTreeCmd("r", c1, "m"), []string{"commit-tree", c1, "-F", "-"}},
		{"push", pushCmd("r", "origin", []Update{
			{Ref: ClaimsPrefix + taskID, New: c2, Old: c1, Leased: true},
			{Ref: ClaimsPrefix + "new", New: c2, Leased: true},
			{Ref: "refs/lazy/tasks/" + taskID, New: c1},
			{Ref: RunnersPrefix + "h1", New: c2, Force: true},
		}), []string{"push", "--atomic", "--porcelain", "--no-verify",
			"--force-with-lease=refs/lazy-pool/claims/" + taskID + ":" + c1, "--force-with-lease=refs/lazy-pool/claims/new:",
			"origin", c2 + ":refs/lazy-pool/claims/" + taskID, c2 + ":refs/lazy-pool/claims/new", c1 + ":refs/lazy/tasks/" + taskID, "+" + c2 + ":refs/lazy-pool/runners/h1"}},
	} {
		got, err := tc.cmd.Argv()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []Update{{Ref: "-x", New: c1}, {Ref: "refs/x", New: "--all"}, {Ref: "refs/x", New: c1, Old: "HEAD", Leased: true}, {Ref: "refs/x y", New: c1}} {
		if checkUpdate(bad) == nil {
			t.Errorf("%+v was not refused", bad)
		}
	}
}

// clones makes a bare remote and n clones of it, each a pool on origin.
func clones(t *testing.T, n int) []*Remote {
	t.Helper()
	src := testrepo.New(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	testrepo.Git(t, src, "clone", "-q", "--bare", src, bare)
	var out []*Remote
	for i := 0; i < n; i++ {
		dir := filepath.Join(t.TempDir(), "clone")
		testrepo.Git(t, t.TempDir(), "clone", "-q", bare, dir)
		r, err := New(dir, "origin")
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			// Every other clone writes its pool commits in process, as
			// a runner does: both paths race in the same tests.
			r.Objects = gitrepo.OpenLocal(filepath.Join(dir, ".git"))
		}
		out = append(out, r)
	}
	return out
}

func fetchClaims(t *testing.T, r *Remote) map[string]Held {
	t.Helper()
	ctx := context.Background()
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	claims, _, err := r.Claims(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return claims
}

// TestExactlyOneRunnerWinsAClaim: eight clones race for one task (three
// in the fast lane); the remote's compare-and-swap lets exactly one
// through, and every clone then reads that one claim.
func TestExactlyOneRunnerWinsAClaim(t *testing.T) {
	t.Parallel()
	n := 8
	if testing.Short() {
		n = 3
	}
	rs := clones(t, n)
	now := time.Now()
	var wg sync.WaitGroup
	results := make([]error, len(rs))
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = r.Take(context.Background(), taskID, "runner"+string(rune('a'+i)), nil, time.Minute, now)
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range results {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("runners %d and %d both won", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, ErrLost):
			t.Fatalf("runner %d: %v, want ErrLost", i, err)
		}
	}
	if won < 0 {
		t.Fatal("nobody won")
	}
	for _, r := range rs {
		c := fetchClaims(t, r)[taskID]
		if c.Runner != "runner"+string(rune('a'+won)) || c.Generation != 1 || !c.Live(time.Now()) {
			t.Fatalf("claim as read: %+v", c)
		}
	}
}

// TestAnExpiredClaimIsTakenOverAndTheOldHolderIsFenced: after its lease
// runs out, another runner takes the task at the next generation; the
// old holder's renewal and its result push are refused whole, and the
// new holder's go through.
func TestAnExpiredClaimIsTakenOverAndTheOldHolderIsFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := clones(t, 2)
	a, b := rs[0], rs[1]
	t0 := time.Now()
	held, err := a.Take(ctx, taskID, "a", nil, time.Second, t0)
	if err != nil {
		t.Fatal(err)
	}
	prev := fetchClaims(t, b)[taskID]
	if _, err := b.Take(ctx, taskID, "b", &prev, time.Minute, t0); !errors.Is(err, ErrHeld) {
		t.Fatalf("a live claim was taken: %v", err)
	}
	later := t0.Add(2 * time.Second)
	nb, err := b.Take(ctx, taskID, "b", &prev, time.Minute, later)
	if err != nil || nb.Generation != 2 {
		t.Fatalf("take-over: %+v, %v", nb, err)
	}
	if _, err := a.Renew(ctx, []Held{held}, Runner{ID: "a"}, time.Minute, later); !errors.Is(err, ErrLost) {
		t.Fatalf("the old holder renewed: %v", err)
	}
	head := testrepo.Git(t, a.Dir, "rev-parse", "HEAD")
	if _, err := a.Fenced(ctx, held, time.Minute, later, []Update{{Ref: "refs/heads/result-a", New: head}}); !errors.Is(err, ErrLost) {
		t.Fatalf("the old holder pushed a result: %v", err)
	}
	if _, err := b.Fenced(ctx, nb, time.Minute, later, []Update{{Ref: "refs/heads/result-b", New: head}}); err != nil {
		t.Fatalf("the new holder could not push: %v", err)
	}
	refs := testrepo.Git(t, a.Dir, "ls-remote", "origin", "refs/heads/result-*")
	if want := head + "\trefs/heads/result-b"; refs != want {
		t.Fatalf("remote result refs %q, want only %q", refs, want)
	}
	if err := b.Release(ctx, fetchClaims(t, b)[taskID], later); err != nil {
		t.Fatal(err)
	}
	if c := fetchClaims(t, a)[taskID]; c.Live(later) || c.Generation != 2 {
		t.Fatalf("released claim: %+v", c)
	}
}

// TestRenewIsOnePushForEveryClaimAndTheRunner.
func TestRenewIsOnePushForEveryClaimAndTheRunner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := clones(t, 1)[0]
	r.MaxLease = 2 * time.Hour // the hour's lease below is within it
	now := time.Now()
	var held []Held
	for _, id := range []string{taskID, "fedcba9876543210"} {
		h, err := r.Take(ctx, id, "a", nil, time.Second, now)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, h)
	}
	next, err := r.Renew(ctx, held, Runner{ID: "a", Labels: []string{"gpu"}, MaxTasks: 2}, time.Hour, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	claims := fetchClaims(t, r)
	for _, h := range next {
		if c := claims[h.Task]; c.Commit != h.Commit || !c.Live(now.Add(30*time.Minute)) {
			t.Fatalf("claim %s: %+v", h.Task, c)
		}
	}
	runners, _, err := r.Runners(ctx, time.Now())
	if err != nil || len(runners) != 1 || runners[0].ID != "a" || runners[0].Labels[0] != "gpu" {
		t.Fatalf("runners: %+v, %v", runners, err)
	}
}

// TestCurrentReadsTheRemotesClaimsApartFromFetch: Current sees a claim
// another runner moved since the last Fetch, and leaves Fetch's refs (and
// so Claims) as they were: a renewer may run it beside a round's Fetch.
func TestCurrentReadsTheRemotesClaimsApartFromFetch(t *testing.T) {
	ctx := context.Background()
	rs := clones(t, 2)
	a, b := rs[0], rs[1]
	now := time.Now()
	h, err := a.Take(ctx, taskID, "a", nil, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := fetchClaims(t, b)[taskID]; got.Commit != h.Commit {
		t.Fatalf("b fetched %+v, want a's claim", got)
	}
	if err := a.Release(ctx, h, now); err != nil {
		t.Fatal(err)
	}
	cur, err := b.Current(ctx, "renewer", now)
	if err != nil {
		t.Fatal(err)
	}
	if c := cur[taskID]; !c.Released || c.Runner != "a" || c.Generation != 1 {
		t.Fatalf("Current: %+v, want a's claim released at generation 1", c)
	}
	last, _, err := b.Claims(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if c := last[taskID]; c.Commit != h.Commit || c.Released {
		t.Fatalf("Claims after Current: %+v, want the claim as last fetched, %s", c, h.Commit)
	}
	if got := testrepo.Git(t, b.Dir, "for-each-ref", "--format=%(refname)", CheckPrefix("origin", "renewer")); got != CheckPrefix("origin", "renewer")+"claims/"+taskID {
		t.Fatalf("Current's refs: %q", got)
	}
}

// TestInProcessPoolCommitsAreGitsOwn: a claim written through the
// repository's object writer (SHA-1 in process, SHA-256 through git) is
// the blob and tree git hash-object and mktree make, in a commit by lazy
// that git fsck --strict accepts and a remote takes in a push.
func TestInProcessPoolCommitsAreGitsOwn(t *testing.T) {
	t.Parallel()
	for _, format := range []string{gitrepo.SHA1, gitrepo.SHA256} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			testrepo.Git(t, dir, "init", "-q", "--object-format="+format)
			var w gitrepo.ObjectWriter = gitrepo.OpenLocal(filepath.Join(dir, ".git"))
			if format == gitrepo.SHA256 {
				g, err := gitrepo.OpenGitFor(filepath.Join(dir, ".git"), format)
				if err != nil {
					t.Fatal(err)
				}
				w = g
			}
			viaGit := &Remote{Dir: dir, Name: "origin"}
			inProcess := &Remote{Dir: dir, Name: "origin", Objects: w}
			c := Claim{Task: taskID, Runner: "r1", Generation: 3}
			a, err := viaGit.WriteClaim(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			b, err := inProcess.WriteClaim(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if ta, tb := testrepo.Git(t, dir, "rev-parse", a+"^{tree}"), testrepo.Git(t, dir, "rev-parse", b+"^{tree}"); ta != tb {
				t.Fatalf("trees differ: git's %s, in process %s", ta, tb)
			}
			testrepo.Git(t, dir, "update-ref", "refs/lazy-pool/claims/"+taskID, b)
			testrepo.Git(t, dir, "fsck", "--strict", "--no-dangling")
			body := testrepo.Git(t, dir, "cat-file", "-p", b)
			if !strings.Contains(body, "author lazy <lazy@lazy.invalid> ") || !strings.Contains(body, "generation 3") {
				t.Fatalf("the in-process claim commit:\n%s", body)
			}
			if got := testrepo.Git(t, dir, "log", "-1", "--format=%an %ae %cn %ce", b); got != "lazy lazy@lazy.invalid lazy lazy@lazy.invalid" {
				t.Fatalf("identity %q", got)
			}
		})
	}
}
