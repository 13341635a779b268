// Package budget decides how much an agent turn may still spend: the
// budgets that apply to a task (its own, each ancestor's, this machine's
// day), and what this machine's turns spent each day, in a host-local
// ledger. It reads and writes no task record: ops gathers the figures.
package budget

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Scope names of the budgets.
const (
	ScopeTask = "task"
	ScopeDay  = "day"
)

// Line is one budget that applies to a turn: what it allows and what
// was spent against it so far.
type Line struct {
	// Scope is "task", "parent <slug>" or "day".
	Scope    string
	LimitUSD float64
	SpentUSD float64
}

// Left is what the line still allows (negative once overspent).
func (l Line) Left() float64 { return l.LimitUSD - l.SpentUSD }

// Over reports whether nothing is left. A cent's fraction left is
// nothing: no turn can run on it.
func (l Line) Over() bool { return l.Left() < 0.0001 }

// String is "$4.02 spent of $0.50 (task budget)".
func (l Line) String() string {
	return fmt.Sprintf("$%.2f spent of $%.2f (%s budget)", l.SpentUSD, l.LimitUSD, l.Scope)
}

// Tightest returns the line with the least left, and false when no
// budget applies (every limit 0: unlimited).
func Tightest(lines []Line) (Line, bool) {
	var best Line
	found := false
	for _, l := range lines {
		if l.LimitUSD <= 0 {
			continue
		}
		if !found || l.Left() < best.Left() {
			best, found = l, true
		}
	}
	return best, found
}

// ParseUSD reads a budget as a user writes it: "5", "5.50", "$5". 0 is
// no budget. key names the setting or flag in the error.
func ParseUSD(key, s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(s), "$"), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%s %q is not an amount in US dollars; give one such as 5 or 12.50 (0 means no budget)", key, s)
	}
	return v, nil
}

// ParseRaise reads lazy unblock --budget: "+N" raises a budget by N, "N"
// sets it to N.
func ParseRaise(s string) (add bool, usd float64, err error) {
	s = strings.TrimSpace(s)
	add = strings.HasPrefix(s, "+")
	usd, err = ParseUSD("--budget", strings.TrimPrefix(s, "+"))
	if err == nil && usd == 0 {
		err = fmt.Errorf("--budget %q raises nothing; give an amount such as +5 (more) or 20 (the new budget)", s)
	}
	return add, usd, err
}
