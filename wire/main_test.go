package wire

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// template is the repository every real-repository test starts from,
// built once (see TestMain) and copied by env.
var template string

// TestMain builds the template repository once and gives the package one
// XDG_DATA_HOME, set before any test runs and never changed, so tests
// that make scratch worktrees there can run in parallel: each repository
// gets a directory of its own under it (named for its git directory).
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "wire-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if tmp, err = filepath.EvalSymlinks(tmp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	template = filepath.Join(tmp, "template")
	data := filepath.Join(tmp, "data")
	for _, d := range []string{template, data} {
		if err := os.Mkdir(d, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if err := testrepo.Template(template); err != nil {
		fmt.Fprintln(os.Stderr, "template repository:", err)
		return 1
	}
	os.Setenv("XDG_DATA_HOME", data)
	return m.Run()
}
