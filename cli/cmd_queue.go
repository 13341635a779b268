package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/render"
)

// QueueCmd shows this machine's merge queues.
type QueueCmd struct {
	JSON   bool   `help:"Print the queues as JSON."`
	Remove string `help:"Take a task that waits for its agent's fix out of its queue (it will not re-enter by itself)." placeholder:"TASK" predictor:"task"`
}

// Run implements lazy queue.
func (c *QueueCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	if c.Remove != "" {
		en, err := env.Queue().Dequeue(c.Remove)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.io.out, "Took %s out of the queue of %s; lazy accept %s puts it back\n", en.Slug, en.Target, en.Slug)
		return nil
	}
	queues := env.Queue().Queues()
	if c.JSON {
		if queues == nil {
			queues = []queue.View{}
		}
		return a.io.printJSON(queues)
	}
	renderQueues(a.io.out, queues, a.now())
	return nil
}

// renderQueues prints each target's queue: the entries in order with
// what each is doing, then the newest that left and why.
func renderQueues(w io.Writer, queues []queue.View, now time.Time) {
	if len(queues) == 0 {
		fmt.Fprintln(w, "No merge queue on this machine: lazy accept TASK... forms one per target branch.")
		return
	}
	for i, q := range queues {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Queue into %s: %d waiting or running\n", sanitize.Field(q.Target), len(q.Entries))
		if l := render.Lanes(q.Lanes); l != "" {
			fmt.Fprintln(w, "  "+l)
		}
		for n, en := range q.Entries {
			line := fmt.Sprintf("  %d. %-28s %-8s %s", n+1, sanitize.Field(en.Slug), en.State, ago(now, en.Since))
			if en.Detail != "" {
				line += "  " + sanitize.Field(en.Detail)
			}
			fmt.Fprintln(w, line)
		}
		left := q.Left
		if len(left) > 5 {
			left = left[len(left)-5:]
		}
		if len(left) > 0 {
			fmt.Fprintln(w, "  Recently left:")
		}
		for _, l := range left {
			line := fmt.Sprintf("    %-28s %-8s %s", sanitize.Field(l.Slug), l.Outcome, ago(now, l.At))
			if l.Commit != "" {
				line += "  as " + render.ShortSHA(l.Commit)
			}
			if l.Lane != "" {
				line += "  lane " + sanitize.Field(l.Lane)
			}
			if l.Batch != nil {
				line += "  " + sanitize.Field(l.Batch.String())
			}
			if l.Why != "" {
				if l.Batch != nil {
					line += ";"
				}
				line += "  " + sanitize.Field(clip(l.Why, 160))
			}
			fmt.Fprintln(w, line)
		}
	}
}

// ago says how long ago t was, coarsely.
func ago(now, t time.Time) string {
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String() + " ago"
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
