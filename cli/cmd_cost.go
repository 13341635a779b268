package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lazyorch/lazy/cost"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/task"
)

// CostCmd reports what agent work cost, grouped one way.
type CostCmd struct {
	By    string `help:"Group by task (the default), agent, model, day (local time) or outcome (accepted, rejected, closed, open)." default:"task" placeholder:"BY"`
	Since string `help:"Count only turns from this day on (local time): 2026-05-01, today, yesterday or 7d (the last seven days)." placeholder:"DATE"`
	JSON  bool   `help:"Print the report as JSON."`
	Task  string `arg:"" optional:"" help:"Only this task and its subtasks (an attempt group: each of its attempts)." placeholder:"TASK"`
}

// costOptions are what lazy cost consumes (gh's Options): the streams,
// the clock --since reads, and a store opened when the flags are good.
type costOptions struct {
	io    ioStreams
	now   func() time.Time
	store func() (*gitstore.Store, error)
}

// Run implements lazy cost.
func (c *CostCmd) Run(a *app, _ context.Context) error {
	return c.run(costOptions{io: a.io, now: a.now, store: func() (*gitstore.Store, error) {
		if err := a.open(); err != nil {
			return nil, err
		}
		return a.store, nil
	}})
}

// run is lazy cost on what o gives it: fetch the records, aggregate,
// render.
func (c *CostCmd) run(o costOptions) error {
	by, err := cost.ParseBy(c.By)
	if err != nil {
		return usageError{err.Error()}
	}
	q := cost.Query{By: by, Loc: time.Local}
	if c.Since != "" {
		if q.Since, err = cost.ParseSince(c.Since, o.now(), time.Local); err != nil {
			return usageError{err.Error()}
		}
	}
	store, err := o.store()
	if err != nil {
		return err
	}
	if c.Task != "" {
		if q.Task, err = store.Resolve(c.Task); err != nil {
			return err
		}
	}
	recs, unreadable, err := cost.Fetch(store, q)
	if err != nil {
		return err
	}
	rep := cost.Aggregate(recs, q)
	rep.Unreadable = unreadable
	if c.JSON {
		return printCostJSON(o.io.out, rep)
	}
	if unreadable > 0 {
		fmt.Fprintf(o.io.errOut, "note: %s could not be read and %s not counted; lazy doctor looks at them\n", words.Count(unreadable, "task record", "task records"), words.Plural(unreadable, "is", "are"))
	}
	if err := costTable(o.io.out, rep); err != nil {
		return err
	}
	flaggedNote(o.io.errOut, rep.Flagged)
	return nil
}

// printCostJSON prints the report on w as printJSON does, but each row on a
// line of its own, as lazy list --json prints its tasks: a report by
// task has a row for every task that spent, and indenting ten thousand
// of them field by field was a third of the command's time.
func printCostJSON(w io.Writer, rep cost.Report) error {
	rows := rep.Rows
	rep.Rows = nil
	var head bytes.Buffer
	enc := json.NewEncoder(&head)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rep); err != nil {
		return err
	}
	// The envelope's "rows" comes before any text a record wrote, and
	// a quote inside a JSON string is escaped, so the first match is it.
	before, after, ok := bytes.Cut(head.Bytes(), []byte(`"rows": null`))
	if !ok {
		return errors.New("lazy cost: the report has no rows field")
	}
	var body bytes.Buffer
	body.Write(before)
	body.WriteString(`"rows": [`)
	row := json.NewEncoder(&body)
	row.SetEscapeHTML(false)
	for i := range rows {
		if i > 0 {
			body.WriteByte(',')
		}
		body.WriteString("\n    ")
		if err := row.Encode(&rows[i]); err != nil {
			return err
		}
		body.Truncate(body.Len() - 1) // Encode's newline
	}
	if len(rows) > 0 {
		body.WriteString("\n  ")
	}
	body.WriteByte(']')
	body.Write(after)
	_, err := w.Write(body.Bytes())
	return err
}

// flaggedNote says which recorded figures a report left out because lazy
// does not believe them, at most a few by name.
func flaggedNote(w io.Writer, flags []task.Flag) {
	if len(flags) == 0 {
		return
	}
	fmt.Fprintf(w, "note: %s out of bounds and not counted (lazy doctor names them all):\n", words.Count(len(flags), "recorded figure is", "recorded figures are"))
	const shown = 5
	for i, f := range flags {
		if i == shown {
			fmt.Fprintf(w, "  and %d more\n", len(flags)-shown)
			break
		}
		fmt.Fprintf(w, "  %s\n", sanitize.Field(f.String()))
	}
}

// costTable renders a report: a row per group, then the TOTAL line.
func costTable(w io.Writer, rep cost.Report) error {
	if rep.Total.Tasks == 0 && rep.By != cost.ByOutcome {
		what := "No agent turn has recorded a cost or tokens"
		if rep.Since != "" {
			what += " since " + rep.Since
		}
		if rep.Task != "" {
			what += " in " + sanitize.Field(rep.Task) + " or its subtasks"
		}
		_, err := fmt.Fprintln(w, what+".")
		return err
	}
	turns := rep.Total.Turns != nil
	head := []string{strings.ToUpper(string(rep.By))}
	if rep.By == cost.ByTask {
		head = append(head, "OUTCOME")
	}
	head = append(head, "COST", "IN", "CACHED", "OUT")
	if turns {
		head = append(head, "TURNS")
	}
	if rep.By != cost.ByTask {
		head = append(head, "TASKS")
	}
	if rep.By == cost.ByTask {
		head = append(head, "WITH SUBTASKS")
	}
	var rows [][]string
	line := func(cells []string) {
		// Trailing empty cells are left out, so a row ends on its last word.
		for len(cells) > 0 && cells[len(cells)-1] == "" {
			cells = cells[:len(cells)-1]
		}
		rows = append(rows, cells)
	}
	line(head)
	figures := func(t cost.Totals) []string {
		cells := []string{costCell(t), tokens(t.InputTokens), tokens(t.CachedInputTokens), tokens(t.OutputTokens)}
		if turns {
			n := 0
			if t.Turns != nil {
				n = *t.Turns
			}
			cells = append(cells, fmt.Sprint(n))
		}
		if rep.By != cost.ByTask {
			cells = append(cells, fmt.Sprint(t.Tasks))
		}
		return cells
	}
	for _, r := range rep.Rows {
		key := outcomeLabel(rep.By, r.Key)
		if r.Attempts > 0 {
			key += fmt.Sprintf(" (%d attempts)", r.Attempts)
		}
		cells := []string{sanitize.Field(key)}
		if rep.By == cost.ByTask {
			cells = append(cells, outcomeLabel(cost.ByOutcome, r.Outcome))
		}
		cells = append(cells, figures(r.Totals)...)
		if rep.By == cost.ByTask {
			sub := ""
			if r.WithSubtasks != nil {
				sub = fmt.Sprintf("%s (%d tasks)", costCell(*r.WithSubtasks), r.WithSubtasks.Tasks)
			}
			cells = append(cells, sub)
		}
		line(cells)
	}
	total := []string{"TOTAL"}
	if rep.By == cost.ByTask {
		total = append(total, "")
	}
	total = append(total, figures(rep.Total)...)
	if rep.By == cost.ByTask {
		total = append(total, fmt.Sprintf("%d tasks", rep.Total.Tasks))
	}
	line(total)
	render.Columns(w, rows)
	return nil
}

// outcomeLabel is how a table names a group: a closed task was abandoned.
func outcomeLabel(by cost.By, key string) string {
	if by == cost.ByOutcome && key == cost.OutcomeClosed {
		return "closed (abandoned)"
	}
	return key
}

// costCell is what a group cost as a table shows it (see Totals.Cell).
func costCell(t cost.Totals) string { return t.Cell() }

// tokens is a token count as a table shows it: 950, 12.3k, 1.2M (the JSON
// has them exact).
func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
