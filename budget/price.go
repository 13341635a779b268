package budget

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/lazyorch/lazy/task"
)

// Price is what a model's tokens cost, in US dollars per million tokens:
// input not served from a cache, cached input (a cache read), output.
type Price struct {
	In, Cached, Out float64
}

// Cost is what tokens cost at p, rounded to the micro-dollar.
func (p Price) Cost(in, cached, out int64) float64 {
	return task.RoundUSD((float64(in)*p.In + float64(cached)*p.Cached + float64(out)*p.Out) / 1e6)
}

// String is "1.25,0.125,10", the form lazy.price takes.
func (p Price) String() string {
	return task.FormatUSD(p.In) + "," + task.FormatUSD(p.Cached) + "," + task.FormatUSD(p.Out)
}

// Where a turn's dollar figure came from.
const (
	// PricedByAgent: the agent CLI reported what the turn cost (Claude
	// Code's total_cost_usd). A reported cost always wins.
	PricedByAgent = "agent"
	// PricedByTable: lazy's price table, from the turn's tokens.
	PricedByTable = "table"
	// PricedByConfig: a lazy.price setting, from the turn's tokens.
	PricedByConfig = "config"
)

// table is lazy's price table: the list prices the vendors published for
// the models Claude Code and Codex run, per million tokens (in, cached
// input, out). It prices a turn whose CLI reported tokens and no cost
// (Codex reports no price; Claude Code does, and its figure wins). A
// model not here is "unpriced" until a lazy.price setting names it. Cache
// writes, which Claude bills above its input price, count as input here.
var table = map[string]Price{
	// Anthropic.
	"claude-opus-4-5":   {5, 0.5, 25},
	"claude-opus-4-1":   {15, 1.5, 75},
	"claude-opus-4":     {15, 1.5, 75},
	"claude-sonnet-4-5": {3, 0.3, 15},
	"claude-sonnet-4":   {3, 0.3, 15},
	"claude-3-7-sonnet": {3, 0.3, 15},
	"claude-haiku-4-5":  {1, 0.1, 5},
	"claude-3-5-haiku":  {0.8, 0.08, 4},
	// OpenAI, as Codex runs them.
	"gpt-5":              {1.25, 0.125, 10},
	"gpt-5-codex":        {1.25, 0.125, 10},
	"gpt-5.1":            {1.25, 0.125, 10},
	"gpt-5.1-codex":      {1.25, 0.125, 10},
	"gpt-5.1-codex-max":  {1.25, 0.125, 10},
	"gpt-5-mini":         {0.25, 0.025, 2},
	"gpt-5.1-codex-mini": {0.25, 0.025, 2},
	"gpt-5-nano":         {0.05, 0.005, 0.4},
	"o3":                 {2, 0.5, 8},
	"o4-mini":            {1.1, 0.275, 4.4},
	"gpt-4.1":            {2, 0.5, 8},
	"gpt-4.1-mini":       {0.4, 0.1, 1.6},
	"codex-mini-latest":  {1.5, 0.375, 6},
}

// Table returns lazy's price table, a copy the caller may change.
func Table() map[string]Price {
	out := make(map[string]Price, len(table))
	for m, p := range table {
		out[m] = p
	}
	return out
}

// Prices is the table with this repository's lazy.price settings over
// it.
type Prices struct {
	config map[string]Price
}

// NewPrices is the table with overrides (model -> price) over it.
func NewPrices(overrides map[string]Price) Prices {
	p := Prices{config: map[string]Price{}}
	for m, pr := range overrides {
		p.config[modelKey(m)] = pr
	}
	return p
}

// dated is a model id's release-date suffix: claude-sonnet-4-5-20250929,
// gpt-4.1-2025-04-14.
var dated = regexp.MustCompile(`-(?:\d{8}|\d{4}-\d{2}-\d{2})$`)

// modelKey is the name a model is priced under: lower case, without
// Claude Code's context-window mark ([1m]).
func modelKey(m string) string {
	m = strings.ToLower(strings.TrimSpace(m))
	if i := strings.IndexByte(m, '['); i > 0 {
		m = m[:i]
	}
	return m
}

// Lookup finds model's price: a lazy.price setting first, then the
// table, each by the exact name and then without a release date. by is
// PricedByConfig or PricedByTable; ok is false for a model neither
// knows (and for "", a model nobody named).
func (p Prices) Lookup(model string) (price Price, by string, ok bool) {
	m := modelKey(model)
	if m == "" {
		return Price{}, "", false
	}
	for _, name := range []string{m, dated.ReplaceAllString(m, "")} {
		if pr, ok := p.config[name]; ok {
			return pr, PricedByConfig, true
		}
		if pr, ok := table[name]; ok {
			return pr, PricedByTable, true
		}
	}
	return Price{}, "", false
}

// ParsePrice reads one lazy.price value: "MODEL IN,CACHED,OUT", US
// dollars per million tokens, such as "gpt-5-codex 1.25,0.125,10". The
// model comes first in the value because model names hold dots, which a
// git config key cannot carry.
func ParsePrice(v string) (model string, p Price, err error) {
	bad := func(why string) error {
		return fmt.Errorf("%s; give a model and its dollars per million tokens in, cached and out, such as 'gpt-5-codex 1.25,0.125,10'", why)
	}
	fields := strings.Fields(v)
	if len(fields) != 2 {
		return "", Price{}, bad("it is not a model and three prices")
	}
	model = modelKey(fields[0])
	parts := strings.Split(fields[1], ",")
	if len(parts) != 3 {
		return "", Price{}, bad("it does not give three prices (in, cached, out)")
	}
	var f [3]float64
	for i, s := range parts {
		x, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(s), "$"), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > task.MaxTurnUSD || strings.ContainsAny(s, "xXpP_") {
			return "", Price{}, bad(fmt.Sprintf("%q is not a price", s))
		}
		f[i] = x
	}
	return model, Price{In: f[0], Cached: f[1], Out: f[2]}, nil
}
