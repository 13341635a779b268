package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/deploy"
)

// TestInitActionsWritesTheRunnerWorkflow: lazy init --actions, run from
// a subdirectory, writes the embedded recipe at the top of the checkout,
// says what it wrote and what to do next; run again it leaves the file;
// a file of the user's is kept unless --force; --json reports it.
func TestInitActionsWritesTheRunnerWorkflow(t *testing.T) {
	l := newLazy(t)
	sub := filepath.Join(l.dir, "src")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(l.dir, ".github", "workflows", "lazy-runner.yml")
	l.fails(2, []string{"init", "--force"}, "--force goes with --actions")
	if _, err := os.Stat(file); err == nil {
		t.Fatal("lazy init --force wrote the workflow")
	}

	out := l.in(sub).ok("init", "--actions")
	for _, want := range []string{
		"Wrote .github/workflows/lazy-runner.yml: lazy runner --once on workflow_dispatch and on the schedule \"*/30 * * * *\"",
		"Next: commit and push it (git add .github/workflows/lazy-runner.yml",
		"gh secret set ANTHROPIC_API_KEY",
		"gh workflow run lazy-runner.yml",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lazy init --actions does not say %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(file); err != nil || !bytes.Equal(b, deploy.Workflow) {
		t.Fatalf("the workflow lazy wrote: %v (same as the recipe: %v)", err, bytes.Equal(b, deploy.Workflow))
	}
	if _, err := os.Stat(filepath.Join(sub, ".github")); err == nil {
		t.Error("lazy init --actions wrote into the subdirectory, not the top of the checkout")
	}
	if out := l.ok("init", "--actions"); !strings.Contains(out, "already lazy's runner workflow; left as it is") {
		t.Errorf("lazy init --actions again:\n%s", out)
	}

	mine := []byte("name: mine\non: push\njobs: {}\n")
	if err := os.WriteFile(file, mine, 0o644); err != nil {
		t.Fatal(err)
	}
	l.fails(1, []string{"init", "--actions"}, "a different file is already there", "lazy init --actions --force")
	if b, _ := os.ReadFile(file); !bytes.Equal(b, mine) {
		t.Fatal("a refused lazy init --actions changed the user's file")
	}
	var res struct {
		HostID  string `json:"host_id"`
		Actions *struct {
			Path     string `json:"path"`
			Written  bool   `json:"written"`
			Replaced bool   `json:"replaced"`
		} `json:"actions"`
	}
	l.json(&res, "init", "--actions", "--force", "--json")
	if res.HostID == "" || res.Actions == nil || res.Actions.Path != ".github/workflows/lazy-runner.yml" || !res.Actions.Written || !res.Actions.Replaced {
		t.Errorf("lazy init --actions --force --json: %+v %+v", res, res.Actions)
	}
	if b, _ := os.ReadFile(file); !bytes.Equal(b, deploy.Workflow) {
		t.Error("--force did not write the recipe")
	}
	var plain map[string]any
	l.json(&plain, "init", "--json")
	if _, ok := plain["actions"]; ok {
		t.Errorf("lazy init --json without --actions reports actions: %v", plain)
	}
	if help := l.ok("init", "--help"); !strings.Contains(help, "lazy init --actions") || !strings.Contains(help, "--force") {
		t.Errorf("lazy init --help has no --actions example:\n%s", help)
	}
}
