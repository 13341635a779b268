package gitrepo

import (
	"os/exec"
	"testing"
)

// TestDetectFormatSHA256 is asked of git: a repository made with
// --object-format=sha256 is recognised as such.
func TestDetectFormatSHA256(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", "--object-format=sha256", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	format, err := DetectFormat(dir + "/.git")
	if err != nil || format != SHA256 {
		t.Fatalf("DetectFormat = %q, %v; want %q", format, err, SHA256)
	}
}
