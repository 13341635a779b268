package task

import (
	"fmt"
	"math"
	"strconv"
)

// The bounds of a figure lazy believes. A figure outside them (or not a
// finite number) comes from a bug or a hostile record, never from an
// agent CLI: it is flagged and left out of every sum.
const (
	// MaxUSD is the largest amount lazy takes: a budget, or what a
	// task and its turns cost in all.
	MaxUSD = 1e12
	// MaxTurnUSD is the most one agent turn can cost.
	MaxTurnUSD = 1e6
	// MaxTurnTokens is the most tokens of one kind (in, cached, out)
	// one agent turn can report.
	MaxTurnTokens = 10_000_000_000
	// MaxTotalTokens is the most tokens of one kind a task's turns can
	// add up to.
	MaxTotalTokens = 1_000_000_000_000_000
)

// RoundUSD rounds an amount to the micro-dollar. Every sum of money lazy
// keeps or prints goes through it, so 0.1 + 0.2 is 0.3 and a JSON figure
// has at most six decimals.
func RoundUSD(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= 1e15 {
		return v // beyond the micro-dollar's reach in a float; the bounds refuse it first
	}
	return math.Round(v*1e6) / 1e6
}

// CheckUSD checks an amount given as a number (MCP's budget_usd, a
// figure read back): finite, not negative, at most MaxUSD.
func CheckUSD(key string, v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%s is not a number; give an amount in US dollars such as 5 or 12.50", key)
	case v < 0:
		return fmt.Errorf("%s %s is negative; give an amount in US dollars such as 5 or 12.50 (0 allows no spend)", key, FormatUSD(v))
	case v > MaxUSD:
		return fmt.Errorf("%s %s is more than the largest budget lazy takes ($%s); give a smaller amount", key, FormatUSD(v), FormatUSD(MaxUSD))
	}
	return nil
}

// FormatUSD is an amount as a plain decimal, without float noise or an
// exponent: 1.2, 0.000001, 1000000000000. A number out of any bound is
// shortened to its exponent form (1e+308) rather than printed in full.
func FormatUSD(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= 1e15 {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	return strconv.FormatFloat(RoundUSD(v), 'f', -1, 64)
}
