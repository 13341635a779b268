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
