package gitrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestDetectFormatSHA256 is asked of git: a repository made with
// --object-format=sha256 is recognised as such.
func TestDetectFormatSHA256(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", "--object-format=sha256", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	format, err := DetectFormat(dir+"/.git", "")
	if err != nil || format != SHA256 {
		t.Fatalf("DetectFormat = %q, %v; want %q", format, err, SHA256)
	}
}

// TestDetectFormatRemembersGitsVerdict: with a cache, git is asked once
// per config content; a changed config is asked again.
func TestDetectFormatRemembersGitsVerdict(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("config", "core.repositoryformatversion", "1")
	git("config", "extensions.worktreeConfig", "true")
	cache := filepath.Join(dir, ".git", "lazy", "format")
	if f, err := DetectFormat(dir+"/.git", cache); err != nil || f != SHA1 {
		t.Fatalf("DetectFormat = %q, %v", f, err)
	}
	t.Setenv("PATH", t.TempDir()) // no git to ask now
	if f, err := DetectFormat(dir+"/.git", cache); err != nil || f != SHA1 {
		t.Fatalf("DetectFormat from the cache = %q, %v", f, err)
	}
	cfg := filepath.Join(dir, ".git", "config")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, "\tfoo = bar\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := DetectFormat(dir+"/.git", cache); err == nil {
		t.Fatal("a changed config was not asked of git again")
	}
}
