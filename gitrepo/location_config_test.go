package gitrepo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestRepoConfigIsReadOncePerChange: a Repo keeps the configuration it
// read (every later call gives the same one, without reading the files
// again), and reads it afresh once git config changes a value, in the
// repository's file or in a file the global one includes; a copy of the
// Repo shares what it read.
func TestRepoConfigIsReadOncePerChange(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	dir := testrepo.New(t)
	inc := filepath.Join(home, "lazy.inc")
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[include]\n\tpath = lazy.inc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inc, []byte("[lazy]\n\tagent = codex\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Config()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := first.Get("lazy.agent"); v != "codex" {
		t.Fatalf("lazy.agent = %q from the included file", v)
	}
	again, _ := r.Config()
	copied := *r
	fromCopy, _ := copied.Config()
	if again != first || fromCopy != first {
		t.Error("an unchanged configuration was read again")
	}
	testrepo.Git(t, dir, "config", "lazy.budget", "5")
	changed, _ := r.Config()
	if changed == first {
		t.Fatal("git config changed the repository's file and the old configuration was kept")
	}
	if v, _ := changed.Get("lazy.budget"); v != "5" {
		t.Errorf("lazy.budget = %q after git config", v)
	}
	testrepo.Git(t, dir, "config", "--file", inc, "lazy.agent", "claude")
	if c, _ := r.Config(); c == changed {
		t.Error("the included file changed and the old configuration was kept")
	} else if v, _ := c.Get("lazy.agent"); v != "claude" {
		t.Errorf("lazy.agent = %q after the included file changed", v)
	}
}
