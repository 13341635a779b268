// Package budget decides how much an agent turn may still spend: the
// budgets that apply to a task (its own, each ancestor's, this machine's
// day), and what this machine's turns spent each day, in a host-local
// ledger. It also holds the price table that turns token counts into
// dollars (price.go) and reads budgets as people write them; the bounds
// a dollar or token figure must keep to be believed, and the
// micro-dollar rounding of every sum, belong to the records' figures
// (package task). It reads and writes no task record: the capabilities gather the
// figures.
package budget

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lazyorch/lazy/task"
)

// Scope names of the budgets.
const (
	ScopeTask = "task"
	ScopeDay  = "day"
)

// Line is one budget that applies to a turn: what it allows and what
// was spent against it so far. A budget of 0 allows nothing.
type Line struct {
	// Scope is "task", "parent <slug>" or "day".
	Scope    string
	LimitUSD float64
	SpentUSD float64
}

// Left is what the line still allows (negative once overspent).
func (l Line) Left() float64 { return task.RoundUSD(l.LimitUSD - l.SpentUSD) }

// Over reports whether nothing is left. A cent's fraction left is
// nothing: no turn can run on it.
func (l Line) Over() bool { return l.Left() < 0.0001 }

// String is "$4.02 spent of $0.50 (task budget)", and a budget of 0
// says it allows no spend.
func (l Line) String() string {
	if l.LimitUSD == 0 {
		return fmt.Sprintf("$%.2f spent of $0 (%s budget: no spend allowed)", l.SpentUSD, l.Scope)
	}
	return fmt.Sprintf("$%.2f spent of $%.2f (%s budget)", l.SpentUSD, l.LimitUSD, l.Scope)
}

// Spent says what stops a turn under the line: "is spent", or, for a
// budget of 0, "allows no spend".
func (l Line) Spent() string {
	if l.LimitUSD == 0 {
		return "allows no spend"
	}
	return "is spent"
}

// Tightest returns the line with the least left, and false when no
// budget applies (no line). Every line is a budget: one of 0 allows no
// spend; "no budget" is a budget that is not set, and has no line.
func Tightest(lines []Line) (Line, bool) {
	var best Line
	found := false
	for _, l := range lines {
		if !found || l.Left() < best.Left() {
			best, found = l, true
		}
	}
	return best, found
}

// None is how a flag clears a budget (lazy create/edit --budget none).
const None = "none"

// ParseUSD reads a budget as a user writes it: "5", "5.50", "$5". 0 is
// a budget that allows no spend. key names the setting or flag in the
// error, which says what to give instead.
func ParseUSD(key, s string) (float64, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "$")
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || strings.ContainsAny(t, "xXpP_") || math.IsNaN(v) || math.IsInf(v, 0) {
		// ParseFloat takes hex floats and underscores; a person writes
		// neither.
		return 0, fmt.Errorf("%s %q is not an amount in US dollars; give one such as 5 or 12.50 (0 allows no spend)", key, s)
	}
	if err := task.CheckUSD(key, v); err != nil {
		return 0, err
	}
	return v, nil
}

// ParseLimit reads a budget flag that may also clear the budget: "none"
// (no budget: nil), else ParseUSD's amount.
func ParseLimit(key, s string) (*float64, error) {
	if strings.EqualFold(strings.TrimSpace(s), None) {
		return nil, nil
	}
	v, err := ParseUSD(key, s)
	if err != nil {
		return nil, fmt.Errorf("%w, or %s to clear it", err, None)
	}
	return &v, nil
}

// ParseRaise reads lazy unblock --budget: "+N" raises a budget by N, "N"
// sets it to N.
func ParseRaise(s string) (add bool, usd float64, err error) {
	s = strings.TrimSpace(s)
	add = strings.HasPrefix(s, "+")
	usd, err = ParseUSD("--budget", strings.TrimPrefix(s, "+"))
	if err == nil && usd == 0 {
		// Unblocking to a budget of 0 would refuse the very turn it asks
		// for.
		err = fmt.Errorf("--budget %q raises nothing; give an amount such as +5 (more) or 20 (the new budget)", s)
	}
	return add, usd, err
}
