package gitstore

import (
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestFormatIsGitsVerdictNotASubstring: names that merely contain
// "objectformat", "sha256", "refstorage" or "reftable" leave a plain SHA-1
// repository, and lazy opens it. The substring test this replaced refused
// both.
func TestFormatIsGitsVerdictNotASubstring(t *testing.T) {
	dir := testrepo.New(t)
	testrepo.Git(t, dir, "config", "alias.objectformat", "!echo sha256")
	testrepo.Git(t, dir, "config", "remote.reftable.url", "https://example.com/refstorage.git")
	repo, err := Discover(dir)
	if err != nil {
		t.Fatalf("a SHA-1 repository with such names refused: %v", err)
	}
	if repo.ObjectFormat != gitrepo.SHA1 {
		t.Fatalf("object format %q, want %q", repo.ObjectFormat, gitrepo.SHA1)
	}
}

// TestFormatRefusesWhatGitRefuses: extensions git does not know, a
// reftable ref store and a v1-only extension in a version 0 repository
// each get one sentence naming git's complaint and what lazy supports.
func TestFormatRefusesWhatGitRefuses(t *testing.T) {
	cases := []struct {
		name   string
		config [][2]string
		want   string
	}{
		{"unknown extension", [][2]string{{"core.repositoryformatversion", "1"}, {"extensions.foo", "bar"}}, "foo"},
		{"reftable", [][2]string{{"core.repositoryformatversion", "1"}, {"extensions.refStorage", "reftable"}}, "refstorage"},
		{"v1-only extension at version 0", [][2]string{{"extensions.objectFormat", "sha256"}}, "objectformat"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := testrepo.New(t)
			for _, kv := range c.config {
				testrepo.Git(t, dir, "config", kv[0], kv[1])
			}
			_, err := Discover(dir)
			if err == nil {
				t.Fatal("opened a repository git refuses")
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, "lazy supports") || strings.Contains(msg, "\n") {
				t.Fatalf("refusal %q: want one line naming %q and what lazy supports", msg, c.want)
			}
		})
	}
}

// TestFormatAsksGitForExtensions: a repository at version 1 with an
// extension git knows and lazy can live with is git's call, and opens.
func TestFormatAsksGitForExtensions(t *testing.T) {
	dir := testrepo.New(t)
	testrepo.Git(t, dir, "config", "core.repositoryformatversion", "1")
	testrepo.Git(t, dir, "config", "extensions.worktreeConfig", "true")
	repo, err := Discover(dir)
	if err != nil {
		t.Fatalf("a repository git reads refused: %v", err)
	}
	if repo.ObjectFormat != gitrepo.SHA1 {
		t.Fatalf("object format %q, want %q", repo.ObjectFormat, gitrepo.SHA1)
	}
}

// TestPlainFormatNeedsNoProcess: the common case, a version 0 config
// without extensions, is read as git's defaults without asking git.
func TestPlainFormatNeedsNoProcess(t *testing.T) {
	dir := testrepo.New(t)
	t.Setenv("PATH", t.TempDir()) // no git to ask
	repo, err := Discover(dir)
	if err != nil || repo.ObjectFormat != gitrepo.SHA1 {
		t.Fatalf("Discover = %+v, %v; want SHA-1 without git", repo, err)
	}
}
