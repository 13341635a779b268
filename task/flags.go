package task

import (
	"fmt"

	"github.com/lazyorch/lazy/internal/sanitize"
)

// Flag is a figure of a task record lazy does not believe (see Usage): a
// cost or token count that is not a finite number, is negative, or is
// beyond the bounds of budget, or a budget out of those bounds. The
// figure is left out of every sum, budget and report; pull and doctor
// name it with this.
type Flag struct {
	// TaskID and Task (its slug) name the record.
	TaskID string `json:"task_id"`
	Task   string `json:"task"`
	// Turn is the turn whose usage is flagged; 0 for the task's own
	// figures (its usage total, its budget, its hold).
	Turn int `json:"turn,omitempty"`
	// What names the figure: "usage", "budget_usd" or "hold".
	What   string `json:"what"`
	Reason string `json:"reason"`
}

// String is the flag as pull and doctor print it: "task fix-login turn
// 3: usage left out: cost_usd -1e+308 is negative".
func (f Flag) String() string {
	where := "task " + f.Task
	if f.Turn > 0 {
		where += fmt.Sprintf(" turn %d", f.Turn)
	}
	what := f.What + " left out"
	if f.What == "budget_usd" {
		what = "budget ignored"
	}
	return sanitize.Field(where + ": " + what + ": " + f.Reason)
}

// OwnFlags are the flags of a task's own figures: its usage total, its
// budget and the figures of its budget hold.
func OwnFlags(t *Task) []Flag {
	var out []Flag
	add := func(what, why string) {
		out = append(out, Flag{TaskID: t.ID, Task: t.Slug, What: what, Reason: why})
	}
	if u := t.Usage; u != nil && u.Flagged != "" {
		add("usage", u.Flagged)
	}
	if _, _, why := t.OwnBudget(); why != "" {
		add("budget_usd", why)
	}
	if h := t.Hold; h != nil && h.Kind == HoldBudget {
		for _, f := range []struct {
			name string
			v    float64
		}{{"limit_usd", h.LimitUSD}, {"spent_usd", h.SpentUSD}} {
			if err := CheckUSD(f.name, f.v); err != nil {
				add("hold", err.Error())
				break
			}
		}
	}
	return out
}

// TurnFlags are the flags of turns' usages.
func TurnFlags(t *Task, turns []Turn) []Flag {
	var out []Flag
	for i := range turns {
		if u := turns[i].Usage; u != nil && u.Flagged != "" {
			out = append(out, Flag{TaskID: t.ID, Task: t.Slug, Turn: turns[i].Seq, What: "usage", Reason: u.Flagged})
		}
	}
	return out
}
