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

// TestAsLazyWinsOverTheEnvironment: a commit made AsLazy is lazy's,
// author and committer, even when the user's environment names someone
// else (git lets GIT_AUTHOR_* win over any -c user.name) and sets the
// dates; a plain command keeps the user's identity.
func TestAsLazyWinsOverTheEnvironment(t *testing.T) {
	dir := testrepo.New(t)
	t.Setenv("GIT_AUTHOR_NAME", "Env Author")
	t.Setenv("GIT_AUTHOR_EMAIL", "author@env.invalid")
	t.Setenv("GIT_COMMITTER_NAME", "Env Committer")
	t.Setenv("GIT_COMMITTER_EMAIL", "committer@env.invalid")
	t.Setenv("GIT_AUTHOR_DATE", "2001-01-01T00:00:00Z")
	t.Setenv("GIT_COMMITTER_DATE", "2001-01-01T00:00:00Z")
	ctx := context.Background()
	if err := New(dir, "commit", "-q", "--allow-empty", "-m", "lazy's").AsLazy().Run(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := New(dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%ad").String(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := LazyName + " <" + LazyEmail + ">|" + LazyName + " <" + LazyEmail + ">|"
	if !strings.HasPrefix(got, want) || strings.Contains(got, "2001") {
		t.Fatalf("lazy's commit reads %q, want %q and today's date", got, want)
	}
	if err := New(dir, "commit", "-q", "--allow-empty", "-m", "the user's").Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := New(dir, "log", "-1", "--format=%an|%cn").String(ctx); got != "Env Author|Env Committer" {
		t.Fatalf("a plain commit reads %q; the user's environment should decide it", got)
	}
}
