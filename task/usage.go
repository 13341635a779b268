package task

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
)

// Usage is cost and tokens as agent CLIs report them (Codex reports
// tokens only; lazy prices them from its table, see budget.Prices): a
// turn's, or the total of a task's turns.
//
// Figures come from records a remote or an agent could have written, so
// they are checked at the door: decoding a usage that is not finite, is
// negative, or is beyond the bounds of budget (MaxUSD, MaxTotalTokens;
// a turn's MaxTurnUSD and MaxTurnTokens) reads as no figures and Flagged
// says why. A flagged usage is left out of every sum (Add), of budgets
// and of lazy cost, and it is written back as the flag alone, never as a
// number anything adds up.
type Usage struct {
	CostUSD           float64 `json:"cost_usd,omitempty"`
	InputTokens       int64   `json:"input_tokens,omitempty"`
	CachedInputTokens int64   `json:"cached_input_tokens,omitempty"`
	OutputTokens      int64   `json:"output_tokens,omitempty"`
	// Unpriced counts the turns that reported tokens that no price
	// turned into dollars (a model neither its CLI nor lazy's price
	// table priced): CostUSD is then short of what they cost.
	Unpriced int64 `json:"unpriced_turns,omitempty"`
	// Flagged says why the recorded figures were not believed.
	Flagged string `json:"flagged,omitempty"`
}

// Valid reports whether u holds figures to count: it is there and not
// flagged.
func (u *Usage) Valid() bool { return u != nil && u.Flagged == "" }

// Tokens is every token the usage counts.
func (u *Usage) Tokens() int64 {
	return satAdd(satAdd(u.InputTokens, u.CachedInputTokens), u.OutputTokens)
}

// String renders cost and tokens: "$0.4210, 12.3k in (+40.1k cached) /
// 2.1k out tokens". Tokens no price reached are "unpriced", never $0.
func (u *Usage) String() string {
	if u.Flagged != "" {
		return "figures left out (" + u.Flagged + ")"
	}
	var parts []string
	switch {
	case u.CostUSD > 0 && u.Unpriced > 0:
		parts = append(parts, fmt.Sprintf("$%.4f + %s", u.CostUSD, words.Count(int(u.Unpriced), "unpriced turn", "unpriced turns")))
	case u.CostUSD > 0:
		parts = append(parts, fmt.Sprintf("$%.4f", u.CostUSD))
	case u.Tokens() > 0:
		parts = append(parts, "unpriced")
	}
	tokens := tokenCount(u.InputTokens) + " in"
	if u.CachedInputTokens > 0 {
		tokens += " (+" + tokenCount(u.CachedInputTokens) + " cached)"
	}
	parts = append(parts, tokens+" / "+tokenCount(u.OutputTokens)+" out tokens")
	return strings.Join(parts, ", ")
}

func tokenCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// Add adds o to u: dollars to the micro-dollar, tokens without
// overflow. A flagged o adds nothing, and a flagged u stays as it is:
// neither is a figure.
func (u *Usage) Add(o Usage) {
	if o.Flagged != "" || u.Flagged != "" {
		return
	}
	u.CostUSD = RoundUSD(u.CostUSD + o.CostUSD)
	u.InputTokens = satAdd(u.InputTokens, o.InputTokens)
	u.CachedInputTokens = satAdd(u.CachedInputTokens, o.CachedInputTokens)
	u.OutputTokens = satAdd(u.OutputTokens, o.OutputTokens)
	u.Unpriced = satAdd(u.Unpriced, o.Unpriced)
}

// satAdd adds two counts that are not negative, stopping at the largest
// int64 rather than wrapping round to a negative one.
func satAdd(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// CheckTurn flags u when its figures are beyond what one turn can
// spend; it reports whether u is still valid.
func (u *Usage) CheckTurn() bool {
	if u.Flagged != "" {
		return false
	}
	if why := u.check(MaxTurnUSD, MaxTurnTokens, "a turn"); why != "" {
		*u = Usage{Flagged: why}
		return false
	}
	return true
}

// CheckTotal flags u when its figures are beyond what a task's turns
// can add up to; it reports whether u is still valid.
func (u *Usage) CheckTotal() bool {
	if u.Flagged != "" {
		return false
	}
	if why := u.check(MaxUSD, MaxTotalTokens, "a task"); why != "" {
		*u = Usage{Flagged: why}
		return false
	}
	return true
}

func (u *Usage) check(maxUSD float64, maxTokens int64, of string) string {
	switch v := u.CostUSD; {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "cost_usd is not a number"
	case v < 0:
		return "cost_usd " + FormatUSD(v) + " is negative"
	case v > maxUSD:
		return fmt.Sprintf("cost_usd %s is above the $%s %s can cost", FormatUSD(v), FormatUSD(maxUSD), of)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"input_tokens", u.InputTokens}, {"cached_input_tokens", u.CachedInputTokens}, {"output_tokens", u.OutputTokens}} {
		switch {
		case f.v < 0:
			return fmt.Sprintf("%s %d is negative", f.name, f.v)
		case f.v > maxTokens:
			return fmt.Sprintf("%s %d is above the %d %s can use", f.name, f.v, maxTokens, of)
		}
	}
	if u.Unpriced < 0 || u.Unpriced > maxTokens {
		return fmt.Sprintf("unpriced_turns %d is not a count of turns", u.Unpriced)
	}
	return ""
}

// UnmarshalJSON reads a usage without ever failing on its figures: one
// that is not a number lazy can believe (a string, 1e308, a negative
// count, a fraction of a token) flags the usage instead, so one hostile
// figure neither breaks the record that carries it nor reaches a sum.
// The task total's bounds apply here; a turn's are tighter (see
// Turn.UnmarshalJSON).
func (u *Usage) UnmarshalJSON(b []byte) error {
	*u = decodeUsage(b, false)
	return nil
}

// decodeUsage reads a usage as UnmarshalJSON does, held to a turn's
// bounds when turn is set, else to a task total's.
func decodeUsage(b []byte, turn bool) Usage {
	var u Usage
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return Usage{Flagged: "the usage is not an object of figures"}
	}
	var why string
	flag := func(w string) {
		if why == "" {
			why = w
		}
	}
	for key, v := range raw {
		switch key {
		case "cost_usd":
			f, ok := jsonFloat(v)
			if !ok {
				flag("cost_usd " + quoteFigure(v) + " is not a number")
			}
			u.CostUSD = f
		case "input_tokens", "cached_input_tokens", "output_tokens", "unpriced_turns":
			n, ok := jsonCount(v)
			if !ok {
				flag(key + " " + quoteFigure(v) + " is not a whole number")
			}
			switch key {
			case "input_tokens":
				u.InputTokens = n
			case "cached_input_tokens":
				u.CachedInputTokens = n
			case "output_tokens":
				u.OutputTokens = n
			default:
				u.Unpriced = n
			}
		case "flagged":
			var s string
			if json.Unmarshal(v, &s) != nil || strings.TrimSpace(s) == "" {
				s = "flagged by the record"
			}
			flag(clipFlag(s))
		}
	}
	if why != "" {
		return Usage{Flagged: why}
	}
	if turn {
		u.CheckTurn()
	} else {
		u.CheckTotal()
	}
	return u
}

// jsonFloat reads a JSON number as a float64; anything else (a string,
// a number beyond float64) is not one.
func jsonFloat(v json.RawMessage) (float64, bool) {
	s := string(bytes.TrimSpace(v))
	if s == "" || s[0] == '"' || !json.Valid(v) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// jsonCount reads a JSON integer as an int64.
func jsonCount(v json.RawMessage) (int64, bool) {
	s := string(bytes.TrimSpace(v))
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// quoteFigure is a figure as a flag names it: its JSON text, cut short
// (a record could hold a megabyte there).
func quoteFigure(v json.RawMessage) string {
	s := strings.TrimSpace(string(v))
	if len(s) > 24 {
		s = strings.ToValidUTF8(s[:24], "") + "..."
	}
	return sanitize.Field(s)
}

// clipFlag bounds a flag a record brought.
func clipFlag(s string) string {
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return sanitize.Field(s)
}

// UnmarshalJSON reads a turn, with its usage held to what one turn can
// spend.
func (t *Turn) UnmarshalJSON(b []byte) error {
	type plain Turn
	aux := struct {
		*plain
		// Shadows plain's usage, so its figures are read once, by the
		// turn's bounds.
		Usage json.RawMessage `json:"usage"`
	}{plain: (*plain)(t)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	t.Usage = nil
	if len(aux.Usage) > 0 && !bytes.Equal(bytes.TrimSpace(aux.Usage), []byte("null")) {
		u := decodeUsage(aux.Usage, true)
		t.Usage = &u
	}
	return nil
}

// OwnBudget is the task's own budget: ok is false when it has none.
// A budget a record brought that is out of bounds (negative, above
// MaxUSD) is no budget, and flag says why.
func (t *Task) OwnBudget() (usd float64, ok bool, flag string) {
	return ownBudget(t.BudgetUSD)
}

// OwnBudget is the summarized task's own budget, as Task.OwnBudget.
func (s *Summary) OwnBudget() (usd float64, ok bool, flag string) {
	return ownBudget(s.BudgetUSD)
}

func ownBudget(v *float64) (float64, bool, string) {
	if v == nil {
		return 0, false, ""
	}
	if err := CheckUSD("budget_usd", *v); err != nil {
		return 0, false, "its budget_usd " + FormatUSD(*v) + " is out of bounds, so it has none"
	}
	return *v, true, ""
}

// TurnReader reads a task's turns: what SumTurns needs of a Store.
type TurnReader interface {
	Turns(sn *Snapshot) ([]Turn, error)
}

// SumTurns adds up the usage of sn's turns that lazy believes (Valid):
// what the task's total is when the recorded one is flagged. Turns beyond
// a read's bounds are not read, so the sum can fall short of the truth,
// never above it.
func SumTurns(st TurnReader, sn *Snapshot) (Usage, error) {
	turns, err := st.Turns(sn)
	if err != nil {
		return Usage{}, err
	}
	var sum Usage
	for i := range turns {
		if u := turns[i].Usage; u.Valid() {
			sum.Add(*u)
		}
	}
	return sum, nil
}
