package deploy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestEmbeddedWorkflowIsTheRecipe: what lazy init --actions writes is
// the file the other tests lint, byte for byte, not a second copy.
func TestEmbeddedWorkflowIsTheRecipe(t *testing.T) {
	src, err := os.ReadFile(workflowFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(Workflow, src) {
		t.Fatal("deploy.Workflow differs from " + workflowFile)
	}
	if got := WorkflowSchedule(); got != "*/30 * * * *" {
		t.Errorf("WorkflowSchedule() = %q, want the recipe's cron line", got)
	}
}

// TestWriteWorkflow: a fresh checkout gets the file; the same file again
// is left alone; a different one is kept unless forced; a link where the
// file or its directories go is refused, and nothing is written through it.
func TestWriteWorkflow(t *testing.T) {
	top := t.TempDir()
	file := filepath.Join(top, WorkflowPath)
	w, err := WriteWorkflow(top, false)
	if err != nil || !w.Written || w.Replaced || w.Path != WorkflowPath {
		t.Fatalf("first write: %+v, %v", w, err)
	}
	if b, err := os.ReadFile(file); err != nil || !bytes.Equal(b, Workflow) {
		t.Fatalf("the written file: %v, same %v", err, bytes.Equal(b, Workflow))
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the written file's mode: %v, %v", fi.Mode(), err)
	}
	if w, err := WriteWorkflow(top, false); err != nil || w.Written {
		t.Errorf("writing the same file again: %+v, %v; want left alone", w, err)
	}

	mine := []byte("name: mine\n")
	if err := os.WriteFile(file, mine, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteWorkflow(top, false); !errors.Is(err, ErrWorkflowDiffers) {
		t.Errorf("over a different file without force: %v, want ErrWorkflowDiffers", err)
	}
	if b, _ := os.ReadFile(file); !bytes.Equal(b, mine) {
		t.Error("a refused write changed the file")
	}
	if w, err := WriteWorkflow(top, true); err != nil || !w.Written || !w.Replaced {
		t.Errorf("with force: %+v, %v", w, err)
	}
	if b, _ := os.ReadFile(file); !bytes.Equal(b, Workflow) {
		t.Error("force did not write the recipe")
	}
	if ents, _ := os.ReadDir(filepath.Dir(file)); len(ents) != 1 {
		t.Errorf("the workflows directory holds %d entries; want the workflow alone (no temporary file left)", len(ents))
	}

	// A hostile checkout: the file is a link to a file outside it.
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, file); err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		if _, err := WriteWorkflow(top, force); err == nil {
			t.Errorf("force %v: wrote over a symbolic link", force)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep\n" {
		t.Error("lazy wrote through the link")
	}

	// .github itself a link to a directory outside the checkout.
	top2 := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(top2, ".github")); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteWorkflow(top2, true); err == nil {
		t.Error("wrote through a linked .github")
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("lazy created %v through the link", ents)
	}
}
