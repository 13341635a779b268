package supervise

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// copyFiles copies regular files only, keeps what the worktree has, and
// never writes outside the worktree, whatever the patterns or the
// branch's symlinks say.
func TestCopyMatches(t *testing.T) {
	from, to, outside := t.TempDir(), t.TempDir(), t.TempDir()
	for name, text := range map[string]string{".env": "A=1\n", "conf/local.yml": "x: 1\n", "link/secret": "s\n", "keep.txt": "main\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(from, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(from, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(from, "passwd")); err != nil {
		t.Fatal(err)
	}
	// The worktree tracks link/ as a symlink out of it.
	if err := os.Symlink(outside, filepath.Join(to, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(to, "keep.txt"), []byte("branch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".env", "conf/*.yml", "link/secret", "passwd", "keep.txt", "nothing*"} {
		if err := copyMatches(io.Discard, from, to, p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	for _, p := range []string{"../x", "/etc/passwd", "a/../../x"} {
		if err := copyMatches(io.Discard, from, to, p); err == nil {
			t.Errorf("%s was accepted", p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(to, ".env")); err != nil || string(b) != "A=1\n" {
		t.Fatalf(".env: %q %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(to, ".env")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf(".env mode: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(to, "conf", "local.yml")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err == nil {
		t.Fatal("a copy went out of the worktree through a symlink")
	}
	if _, err := os.Lstat(filepath.Join(to, "passwd")); err == nil {
		t.Fatal("a symlink was copied")
	}
	if b, _ := os.ReadFile(filepath.Join(to, "keep.txt")); string(b) != "branch\n" {
		t.Fatalf("a file of the branch was overwritten: %q", b)
	}
}
