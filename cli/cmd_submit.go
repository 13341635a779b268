package cli

import (
	"io"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/submission"
	"github.com/lazyorch/lazy/task"

	"context"
	"fmt"
)

// SubmitCmd pushes a task's branch and opens or updates its pull request.
type SubmitCmd struct {
	Task   string `arg:"" help:"Slug or id prefix." predictor:"task"`
	Draft  bool   `help:"Open the pull request as a draft."`
	Remote string `help:"The remote to push to (default: the earlier submission's, lazy.forge.remote, or origin)." placeholder:"NAME"`
	JSON   bool   `help:"Print the task as JSON."`
}

// Run implements lazy submit.
func (c *SubmitCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	res, err := env.Submission().Submit(ctx, c.Task, submission.SubmitOptions{Draft: c.Draft, Remote: c.Remote})
	if err != nil {
		return err
	}
	// The daemon's forge sync follows the pull request from here.
	a.daemonAfterLaunch(ctx)
	if c.JSON {
		return a.io.printJSON(toJSON(&res.Snapshot.Task))
	}
	verb := "opened"
	if res.Updated {
		verb = "updated"
	}
	fmt.Fprintf(a.io.out, "Submitted %s: %s pull request #%d %s\n", res.Snapshot.Task.Slug, verb, res.PR.Number, res.PR.URL)
	return nil
}

// printPRs lists the pull requests of submitted and forge-merging tasks,
// for lazy status.
func printPRs(w io.Writer, entries []task.Entry) {
	var rows [][]string
	for _, e := range entries {
		if e.Err != nil || (e.Status != machine.Submitted && e.Status != machine.Merging) {
			continue
		}
		s, err := e.Summary()
		if err != nil || render.PRBrief(s) == "" {
			continue
		}
		if rows == nil {
			rows = [][]string{{"SUBMITTED", "PULL REQUEST", "URL"}}
		}
		rows = append(rows, []string{s.Slug, render.PRBrief(s), sanitize.Field(s.PR.URL)})
	}
	if rows != nil {
		fmt.Fprintln(w)
		render.Columns(w, rows)
	}
}
