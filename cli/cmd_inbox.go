package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/lazyorch/lazy/inbox"
	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/render"
)

// InboxCmd lists what waits on a human, from every clone and runner.
type InboxCmd struct {
	JSON  bool `help:"Print the inbox as JSON."`
	Count bool `help:"Print only how many tasks wait on a human."`
}

// Run implements lazy inbox.
func (c *InboxCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	if _, err := a.reconciledList(ctx); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	svc, err := env.Inbox()
	if err != nil {
		return err
	}
	svc.Now = a.now
	res, err := svc.List(ctx)
	if err != nil {
		return err
	}
	switch {
	case c.Count && c.JSON:
		return a.io.printJSON(map[string]int{"count": len(res.Items)})
	case c.Count:
		fmt.Fprintln(a.io.out, len(res.Items))
		return nil
	case c.JSON:
		return a.io.printJSON(res)
	}
	renderInbox(a.io.out, res)
	return nil
}

// renderInbox prints the items oldest first: how long each has waited,
// the task, why, where, and the command that answers it. What a record
// says is escaped for the terminal (the inbox cleaned it already).
func renderInbox(w io.Writer, res *inbox.Result) {
	if len(res.Items) == 0 {
		fmt.Fprintln(w, "Nothing waits on a human (lazy pull brings in what other clones and runners pushed).")
	}
	if len(res.Items) > 0 {
		rows := [][]string{{"WAITING", "TASK", "KIND", "WHERE", "ANSWER WITH"}}
		for _, it := range res.Items {
			rows = append(rows, []string{inbox.Wait(it.WaitingSeconds), it.Slug, string(it.Kind), termsafe.String(render.Cut(it.Where(), 40)), it.Command})
		}
		render.Columns(w, rows)
		fmt.Fprintln(w)
		for _, it := range res.Items {
			fmt.Fprintf(w, "%s: %s\n  %s\n", it.Slug, termsafe.String(render.Cut(it.Title, 80)), termsafe.String(it.Why))
			if len(it.Files) > 0 {
				fmt.Fprintf(w, "  protected: %s\n", termsafe.String(strings.Join(it.Files, ", ")))
			}
		}
	}
	if n := len(res.Unreadable); n > 0 {
		fmt.Fprintf(w, "lazy could not read %s (lazy doctor says why): %s\n", words.Count(n, "task", "tasks"), strings.Join(res.Unreadable, ", "))
	}
}
