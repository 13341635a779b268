package e2e

import (
	"strings"
	"testing"
)

// TestRepositoryFormatIsAskedOfGit: a repository whose config merely
// mentions sha256 and reftable is a plain SHA-1 repository and lazy
// works in it (the old substring test refused it); repositories git
// itself cannot read, or lazy cannot (reftable), are refused by init,
// create and list with one sentence on what lazy supports, never a panic.
// SHA-256 repositories work: see TestSHA256Repository.
func TestRepositoryFormatIsAskedOfGit(t *testing.T) {
	plain := newRepo(t)
	plain.git("remote", "add", "sha256", "https://example.com/reftable.git")
	plain.git("config", "alias.objectformat", "!echo sha256")
	plain.ok("init")
	plain.create("works in a plain repository")

	refused := map[string]func(t *testing.T) *runner{
		"unknown extension": func(t *testing.T) *runner {
			r := newRepo(t)
			r.git("config", "core.repositoryformatversion", "1")
			r.git("config", "extensions.foo", "bar")
			return r
		},
		"reftable": func(t *testing.T) *runner {
			r := newRepo(t)
			r.git("config", "core.repositoryformatversion", "1")
			r.git("config", "extensions.refStorage", "reftable")
			return r
		},
	}
	for name, mk := range refused {
		t.Run(name, func(t *testing.T) {
			r := mk(t)
			for _, args := range [][]string{{"init"}, {"create", "x"}, {"list"}} {
				msg := strings.TrimSpace(r.fails(1, nil, args...))
				if !strings.Contains(msg, "lazy supports") || strings.Count(msg, "\n") > 0 {
					t.Fatalf("lazy %s: want one line saying what lazy supports, got %q", args[0], msg)
				}
			}
		})
	}
}
