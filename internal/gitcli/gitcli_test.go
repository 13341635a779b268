package gitcli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

func TestPathsFollowDoubleDash(t *testing.T) {
	argv, err := New(".", "add").Paths("--force", "-rf").Argv()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(argv, " ") != "add -- --force -rf" {
		t.Fatalf("argv %q", argv)
	}
}

func TestRefusesNUL(t *testing.T) {
	if _, err := New(".", "log", "a\x00b").Argv(); err == nil {
		t.Fatal("NUL in argument accepted")
	}
	if _, err := New(".", "add").Paths("x\x00y").Argv(); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("NUL in path: %v", err)
	}
}

func TestAFileNamedLikeAnOptionIsAFile(t *testing.T) {
	dir := testrepo.New(t)
	if err := os.WriteFile(filepath.Join(dir, "--force"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := New(dir, "add").Paths("--force").Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, err := New(dir, "diff", "--cached", "--name-only").String(context.Background())
	if err != nil || out != "--force" {
		t.Fatalf("staged %q, %v", out, err)
	}
}

func TestErrorsCarryStderr(t *testing.T) {
	dir := testrepo.New(t)
	err := New(dir, "rev-parse", "--verify", "nope").Run(context.Background())
	var ge *Error
	if !errors.As(err, &ge) || ge.ExitCode() == 0 || !strings.Contains(err.Error(), "rev-parse") {
		t.Fatalf("error %v", err)
	}
}

// capWriter keeps at most max bytes and refuses the write past them.
type capWriter struct {
	got []byte
	max int
}

var errFull = errors.New("full")

func (c *capWriter) Write(p []byte) (int, error) {
	if len(c.got)+len(p) > c.max {
		return 0, errFull
	}
	c.got = append(c.got, p...)
	return len(p), nil
}

// TestStreamStopsGitAtTheCallersBound checks that a writer's refusal
// ends git and is what Stream returns, that a full read returns nil, and
// that git's own failure still carries its stderr.
func TestStreamStopsGitAtTheCallersBound(t *testing.T) {
	ctx := context.Background()
	dir := testrepo.New(t)
	big := strings.Repeat("0123456789abcdef", 1<<19) // 8 MiB
	if err := os.WriteFile(filepath.Join(dir, "big"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "add", "big")
	testrepo.Git(t, dir, "commit", "-q", "-m", "big")

	w := &capWriter{max: 64 << 10}
	if err := New(dir, "cat-file", "blob", "HEAD:big").Stream(ctx, w); !errors.Is(err, errFull) {
		t.Fatalf("a refused write: %v, want the writer's error", err)
	}
	if len(w.got) > 64<<10 || !strings.HasPrefix(big, string(w.got)) {
		t.Fatalf("kept %d bytes past the bound, or the wrong ones", len(w.got))
	}

	all := &capWriter{max: 16 << 20}
	if err := New(dir, "cat-file", "blob", "HEAD:big").Stream(ctx, all); err != nil || string(all.got) != big {
		t.Fatalf("a full read: %d bytes, %v", len(all.got), err)
	}

	var ge *Error
	if err := New(dir, "cat-file", "blob", "HEAD:none").Stream(ctx, &capWriter{max: 1}); !errors.As(err, &ge) || !strings.Contains(err.Error(), "none") {
		t.Fatalf("a failing git: %v", err)
	}
}
