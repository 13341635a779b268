package render

import (
	"fmt"
	"io"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/task"
)

// AttemptsHeading is "Attempts (N; spent X in all)" over the table.
func AttemptsHeading(av *attempts.Comparison) string {
	h := fmt.Sprintf("Attempts (%d", len(av.Attempts))
	if av.Usage != nil {
		h += "; spent " + av.Usage.String() + " in all"
	}
	return h + ")"
}

// AttemptTable is the attempts' table of show, diff --attempts and
// watch, its cells worded by package attempts (the web view's are the same).
func AttemptTable(w io.Writer, av *attempts.Comparison) {
	rows := [][]string{{"  K", "SLUG", "AGENT", "STATUS", "COST", "GATE", "DIFF"}}
	for _, at := range av.Attempts {
		k := fmt.Sprintf("  %d", at.K)
		if at.Missing {
			rows = append(rows, []string{k, "(missing: " + ShortID(at.ID) + ")", "-", "-", "-", "-", "-"})
			continue
		}
		rows = append(rows, []string{k, at.Slug, sanitize.Field(at.AgentCell()), at.StatusCell(), at.CostCell(), at.GateCell(), at.DiffCell()})
	}
	Columns(w, rows)
	if av.PickLine != "" {
		fmt.Fprintf(w, "  %s\n", sanitize.Field(av.PickLine))
	}
}

// GateMark flags a task whose newest merge-gate run failed.
func GateMark(g *task.GateSummary) string {
	if g != nil && g.Origin == task.GateRemote && g.State == task.GatePassed {
		return "  ? gate: " + task.GateRemote
	}
	if g == nil || g.State != task.GateFailed {
		return ""
	}
	return "  ✗ gate: " + termsafe.String(g.Failed)
}
