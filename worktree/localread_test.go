package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// answered is which of a start's reads the in-process reader answered
// (the others it left to git).
type answered struct{ head, branch, commits bool }

// sameAsGit holds the in-process reads of the repository at dir to the
// git commands they replace: where the reader answers, git answers the
// same, and the exported functions (reader first, git when unsure)
// answer as git does. It returns what the reader answered.
func sameAsGit(t *testing.T, dir string, refs ...string) answered {
	t.Helper()
	ctx := context.Background()
	var a answered
	gitNone := noCommitsGit(ctx, dir)
	gitBranch, gitErr := defaultBranchGit(ctx, dir)
	var query strings.Builder
	for _, r := range refs {
		query.WriteString(r + "^{commit}\n")
	}
	gitTips, err := commitsOfGit(ctx, dir, refs, query.String())
	if err != nil {
		t.Fatalf("git cat-file: %v", err)
	}
	if r := openLocal(dir); r != nil {
		if r.headCommit() {
			a.head = true
			if gitNone {
				t.Errorf("the reader says HEAD names a commit; git says the repository has none")
			}
		}
		if b, ok := r.defaultBranch(); ok {
			a.branch = true
			if gitErr != nil || b != gitBranch {
				t.Errorf("default branch: the reader says %q, git %q (%v)", b, gitBranch, gitErr)
			}
		}
		if tips, ok := localCommitsOf(dir, refs); ok {
			a.commits = true
			if !slices.Equal(tips, gitTips) {
				t.Errorf("commits of %q: the reader says %q, git %q", refs, tips, gitTips)
			}
		}
	}
	if got := NoCommits(ctx, dir); got != gitNone {
		t.Errorf("NoCommits = %v, git says %v", got, gitNone)
	}
	if got, err := DefaultBranch(ctx, dir); got != gitBranch || (err == nil) != (gitErr == nil) {
		t.Errorf("DefaultBranch = %q (%v), git says %q (%v)", got, err, gitBranch, gitErr)
	}
	if got, err := commitsOf(ctx, dir, refs...); err != nil || !slices.Equal(got, gitTips) {
		t.Errorf("commitsOf = %q (%v), git says %q", got, err, gitTips)
	}
	return a
}

// TestStartReadsAnswerAsGit: the reads a start makes before its
// worktree exists (NoCommits, DefaultBranch, the two tips Create reads),
// now answered in process, give git's answer in every state a
// repository can be in at a start, and leave to git what the reader
// cannot be sure of (a name git would resolve by another rule or as
// describe output, a branch at a tree, an ambiguous short name, a
// SHA-256 repository).
func TestStartReadsAnswerAsGit(t *testing.T) {
	testrepo.FullLane(t) // not parallel: a subtest sets GIT_DIR
	all := answered{true, true, true}
	refs := []string{"refs/heads/lazy/x", "refs/heads/main"}

	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) string // the directory to ask in
		refs  []string
		want  answered
	}{
		{"one commit on main", nil, refs, all},
		{"packed refs", func(t *testing.T, dir string) string {
			testrepo.Git(t, dir, "branch", "lazy/x")
			testrepo.Git(t, dir, "pack-refs", "--all")
			return dir
		}, refs, all},
		{"a loose ref over a stale packed one", func(t *testing.T, dir string) string {
			testrepo.Git(t, dir, "branch", "lazy/x")
			testrepo.Git(t, dir, "pack-refs", "--all")
			testrepo.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "second")
			testrepo.Git(t, dir, "update-ref", "refs/heads/lazy/x", "HEAD")
			return dir
		}, refs, all},
		{"detached HEAD", func(t *testing.T, dir string) string {
			testrepo.Git(t, dir, "checkout", "-q", "--detach")
			return dir
		}, refs, answered{head: true, commits: true}},
		{"HEAD on a branch with no commit yet", func(t *testing.T, dir string) string {
			testrepo.Git(t, dir, "symbolic-ref", "HEAD", "refs/heads/ghost")
			return dir
		}, refs, answered{branch: true, commits: true}},
		{"origin/HEAD names a ref that is missing", func(t *testing.T, dir string) string {
			testrepo.Git(t, dir, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/dev")
			return dir
		}, refs, all},
		{"origin/HEAD as a clone leaves it (a loose ref)", func(t *testing.T, dir string) string {
			testrepo.Git(t, dir, "update-ref", "refs/remotes/origin/main", "HEAD")
			testrepo.Git(t, dir, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
			return dir
		}, refs, all},
		{"origin/HEAD names a packed ref", func(t *testing.T, dir string) string {
			testrepo.Git(t, dir, "update-ref", "refs/remotes/origin/trunk", "HEAD")
			testrepo.Git(t, dir, "pack-refs", "--all")
			testrepo.Git(t, dir, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")
			return dir
		}, refs, all},
		{"origin/HEAD holds an object", func(t *testing.T, dir string) string {
			testrepo.Git(t, dir, "update-ref", "--no-deref", "refs/remotes/origin/HEAD", "HEAD")
			return dir
		}, refs, all},
		{"origin/HEAD names a symbolic ref", func(t *testing.T, dir string) string {
			testrepo.Git(t, dir, "update-ref", "refs/remotes/origin/real", "HEAD")
			testrepo.Git(t, dir, "symbolic-ref", "refs/remotes/origin/alias", "refs/remotes/origin/real")
			testrepo.Git(t, dir, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/alias")
			return dir
		}, refs, answered{head: true, commits: true}},
		{"a tag named like the branch", func(t *testing.T, dir string) string {
			testrepo.Git(t, dir, "tag", "main")
			return dir
		}, refs, answered{head: true, commits: true}},
		{"a branch under refs/heads/refs/heads", func(t *testing.T, dir string) string {
			testrepo.Git(t, dir, "update-ref", "refs/heads/refs/heads/lazy/x", "HEAD")
			return dir
		}, refs, answered{head: true, branch: true}},
		{"a missing branch named like describe output", func(t *testing.T, dir string) string {
			return dir
		}, nil, answered{head: true, branch: true}},
		{"a branch at a tree", func(t *testing.T, dir string) string {
			// git refuses to put a branch there; a hand edit does not.
			tree := testrepo.Git(t, dir, "rev-parse", "HEAD^{tree}")
			writeRef(t, dir, "refs/heads/lazy/x", tree)
			return dir
		}, refs, answered{head: true, branch: true}},
		{"a branch at a missing object", func(t *testing.T, dir string) string {
			writeRef(t, dir, "refs/heads/gone", strings.Repeat("1", 40))
			return dir
		}, []string{"refs/heads/gone", "refs/heads/main"}, answered{head: true, branch: true}},
		{"a linked worktree", func(t *testing.T, dir string) string {
			wt := filepath.Join(t.TempDir(), "wt")
			testrepo.Git(t, dir, "worktree", "add", "-q", "-b", "side", wt)
			return wt
		}, []string{"refs/heads/side", "refs/heads/lazy/x"}, all},
		{"the git directory itself", func(t *testing.T, dir string) string {
			return filepath.Join(dir, ".git")
		}, refs, all},
		{"replace refs", func(t *testing.T, dir string) string {
			testrepo.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "second")
			testrepo.Git(t, dir, "replace", "HEAD", "HEAD~1")
			return dir
		}, refs, answered{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testrepo.New(t)
			refs := tc.refs
			if tc.setup != nil {
				dir = tc.setup(t, dir)
			}
			if refs == nil {
				// An abbreviation of main's commit, as git describe spells it.
				abbrev := testrepo.Git(t, dir, "rev-parse", "--short=7", "main")
				refs = []string{"refs/heads/lazy/x-g" + abbrev, "refs/heads/main"}
			}
			if got := sameAsGit(t, dir, refs...); got != tc.want {
				t.Errorf("the reader answered %+v, want %+v", got, tc.want)
			}
		})
	}

	t.Run("no commits yet", func(t *testing.T) {
		dir := t.TempDir()
		testrepo.Git(t, dir, "init", "-q", "-b", "main")
		if got := sameAsGit(t, dir, refs...); got != (answered{branch: true, commits: true}) {
			t.Errorf("the reader answered %+v", got)
		}
		if !NoCommits(context.Background(), dir) {
			t.Error("NoCommits is false in a repository with no commit")
		}
	})

	t.Run("SHA-256 repository", func(t *testing.T) {
		dir := t.TempDir()
		if out, err := testrepo.GitErr(dir, "init", "-q", "-b", "main", "--object-format=sha256"); err != nil {
			t.Skipf("this git cannot make a SHA-256 repository: %s", out)
		}
		testrepo.Identity(t, dir)
		testrepo.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "init")
		if got := sameAsGit(t, dir, refs...); got != (answered{}) {
			t.Errorf("the reader answered %+v in a SHA-256 repository", got)
		}
		tip := testrepo.Git(t, dir, "rev-parse", "HEAD")
		sha, err := Create(context.Background(), dir, filepath.Join(t.TempDir(), "w"), "lazy/x", "main")
		if err != nil || sha != tip {
			t.Fatalf("Create in a SHA-256 repository: %q %v, want %s", sha, err, tip)
		}
	})

	t.Run("GIT_DIR set", func(t *testing.T) {
		dir := testrepo.New(t)
		t.Setenv("GIT_DIR", filepath.Join(dir, ".git"))
		if got := sameAsGit(t, dir, refs...); got != (answered{}) {
			t.Errorf("the reader answered %+v with GIT_DIR set", got)
		}
	})
}

// writeRef writes a loose ref file by hand, as git would not.
func writeRef(t *testing.T, dir, ref, value string) {
	t.Helper()
	path := filepath.Join(dir, ".git", filepath.FromSlash(ref))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(value+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
