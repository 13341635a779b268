// Package deploy holds the recipes that run `lazy runner` on infrastructure
// people already operate (github-actions/: a GitHub Actions workflow;
// kubernetes/: a Deployment, a Job, a KEDA ScaledJob and the image they
// run), the tests that validate them with the fields' own tools
// (actionlint, and the upstream Kubernetes API types decoded strictly),
// and the one piece lazy itself uses: the workflow lazy init --actions
// writes, embedded from the recipe.
package deploy

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// Workflow is the GitHub Actions recipe (github-actions/lazy-runner.yml),
// embedded so lazy init --actions writes the very file the tests lint.
//
//go:embed github-actions/lazy-runner.yml
var Workflow []byte

var cronLine = regexp.MustCompile(`(?m)^\s*- cron: "([^"]+)"`)

// WorkflowSchedule is the cron line the workflow runs on, as a person
// reads it in the file ("*/30 * * * *").
func WorkflowSchedule() string {
	if m := cronLine.FindSubmatch(Workflow); m != nil {
		return string(m[1])
	}
	return ""
}

// WorkflowPath is where lazy init --actions writes Workflow, relative to
// the top of the checkout.
const WorkflowPath = ".github/workflows/lazy-runner.yml"

// ErrWorkflowDiffers is returned by WriteWorkflow when a different file
// is already at WorkflowPath and force is off.
var ErrWorkflowDiffers = errors.New("a different file is already there")

// WorkflowWrite says what WriteWorkflow did.
type WorkflowWrite struct {
	// Path is the file, relative to the top of the checkout.
	Path string `json:"path"`
	// Written says lazy wrote it; false when the same recipe was there.
	Written bool `json:"written"`
	// Replaced says a different file was there and --force replaced it.
	Replaced bool `json:"replaced,omitempty"`
}

// WriteWorkflow writes Workflow to WorkflowPath under the checkout top.
// A file already there with the same content is left alone; a different
// one is replaced only with force. The path's directories and the file
// itself must not be symbolic links (a checkout's content is anyone's:
// a link would make lazy write outside it), and the file is written to
// a temporary file beside it and renamed over, so a reader never sees
// half of it.
func WriteWorkflow(top string, force bool) (WorkflowWrite, error) {
	res := WorkflowWrite{Path: WorkflowPath}
	dir := top
	for _, part := range []string{".github", "workflows"} {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(dir, 0o755); err != nil {
				return res, fmt.Errorf("create %s: %w", dir, err)
			}
		case err != nil:
			return res, fmt.Errorf("look at %s: %w", dir, err)
		case !fi.IsDir():
			return res, fmt.Errorf("%s is not a directory (a symbolic link or a file); lazy writes the workflow only into a real .github/workflows directory: %w", dir, fs.ErrExist)
		}
	}
	file := filepath.Join(top, WorkflowPath)
	fi, err := os.Lstat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return res, fmt.Errorf("look at %s: %w", file, err)
	case !fi.Mode().IsRegular():
		return res, fmt.Errorf("%s is not a regular file (a symbolic link?); remove it, then run lazy init --actions again: %w", file, fs.ErrExist)
	default:
		old, err := os.ReadFile(file)
		if err != nil {
			return res, fmt.Errorf("read %s: %w", file, err)
		}
		if bytes.Equal(old, Workflow) {
			return res, nil
		}
		if !force {
			return res, fmt.Errorf("%s: %w; keep yours, or run lazy init --actions --force to replace it with lazy's recipe", WorkflowPath, ErrWorkflowDiffers)
		}
		res.Replaced = true
	}
	tmp, err := os.CreateTemp(dir, ".lazy-runner-*.yml")
	if err != nil {
		return res, fmt.Errorf("write the workflow: %w", err)
	}
	// Gone after the rename; this removes a failed write's leftover.
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, err = tmp.Write(Workflow)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return res, fmt.Errorf("write %s: %w", file, err)
	}
	res.Written = true
	return res, nil
}
