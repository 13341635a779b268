package task

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestUsageString(t *testing.T) {
	u := &Usage{CostUSD: 0.42101, InputTokens: 12345, CachedInputTokens: 40100, OutputTokens: 2100}
	if got := u.String(); got != "$0.4210, 12.3k in (+40.1k cached) / 2.1k out tokens" {
		t.Fatalf("%q", got)
	}
	// Tokens no price reached are unpriced, never $0.
	if got := (&Usage{InputTokens: 12, OutputTokens: 7}).String(); got != "unpriced, 12 in / 7 out tokens" {
		t.Fatalf("%q", got)
	}
	if got := (&Usage{CostUSD: 1, InputTokens: 12, Unpriced: 2}).String(); got != "$1.0000 + 2 unpriced turns, 12 in / 0 out tokens" {
		t.Fatalf("%q", got)
	}
	var total Usage
	total.Add(*u)
	total.Add(Usage{CostUSD: 1, OutputTokens: 1})
	if total.OutputTokens != 2101 || total.CostUSD != 1.42101 {
		t.Fatalf("%+v", total)
	}
}

// Money adds up to the micro-dollar, so JSON carries no float noise.
func TestUsageAddIsExact(t *testing.T) {
	var sum Usage
	sum.Add(Usage{CostUSD: 0.1})
	sum.Add(Usage{CostUSD: 0.2})
	b, _ := json.Marshal(sum)
	if string(b) != `{"cost_usd":0.3}` {
		t.Fatalf("0.1+0.2: %s", b)
	}
	sum = Usage{}
	for range 3 {
		sum.Add(Usage{CostUSD: 0.4})
	}
	if b, _ := json.Marshal(sum); string(b) != `{"cost_usd":1.2}` {
		t.Fatalf("3 x 0.4: %s", b)
	}
	// Counts stop at the largest int64 instead of wrapping negative.
	big := Usage{InputTokens: math.MaxInt64 - 1}
	big.Add(Usage{InputTokens: 5})
	if big.InputTokens != math.MaxInt64 {
		t.Fatalf("saturating add: %d", big.InputTokens)
	}
}

// A figure lazy cannot believe flags the usage, whatever form it takes,
// without failing the record that carries it; a flagged usage adds
// nothing and is written back as the flag alone.
func TestUsageDecodeFlagsHostileFigures(t *testing.T) {
	for in, want := range map[string]string{
		`{"cost_usd":1e308}`:                           "cost_usd 1e+308 is above the $1000000000000 a task can cost",
		`{"cost_usd":-1e308}`:                          "cost_usd -1e+308 is negative",
		`{"cost_usd":"NaN"}`:                           `cost_usd "NaN" is not a number`,
		`{"cost_usd":1e999}`:                           "cost_usd 1e999 is not a number",
		`{"input_tokens":1e30}`:                        "input_tokens 1e30 is not a whole number",
		`{"output_tokens":-5}`:                         "output_tokens -5 is negative",
		`{"cached_input_tokens":99999999999999999999}`: "cached_input_tokens 99999999999999999999 is not a whole number",
		`{"input_tokens":2000000000000000}`:            "input_tokens 2000000000000000 is above the 1000000000000000 a task can use",
		`{"flagged":"sent by a friend"}`:               "sent by a friend",
		`[1,2]`:                                        "the usage is not an object of figures",
	} {
		var u Usage
		if err := json.Unmarshal([]byte(in), &u); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if u.Flagged != want || u.CostUSD != 0 || u.InputTokens != 0 || u.Valid() {
			t.Errorf("%s: %+v, want flagged %q", in, u, want)
		}
		var sum Usage
		sum.Add(u)
		if sum != (Usage{}) {
			t.Errorf("%s: a flagged usage added %+v", in, sum)
		}
		b, _ := json.Marshal(u)
		if strings.Contains(string(b), `"cost_usd":`) || !strings.Contains(string(b), `"flagged"`) {
			t.Errorf("%s: written back as %s", in, b)
		}
	}
	// A turn is held to what one turn can spend; a task total is not.
	var tn Turn
	if err := json.Unmarshal([]byte(`{"seq":3,"usage":{"cost_usd":2000000}}`), &tn); err != nil || tn.Usage.Valid() || !strings.Contains(tn.Usage.Flagged, "a turn can cost") {
		t.Fatalf("a $2M turn: %+v %v", tn.Usage, err)
	}
	var task Task
	if err := json.Unmarshal([]byte(`{"id":"x","usage":{"cost_usd":2000000,"input_tokens":12}}`), &task); err != nil || !task.Usage.Valid() || task.Usage.CostUSD != 2e6 {
		t.Fatalf("a $2M task: %+v %v", task.Usage, err)
	}
	// An unknown figure is ignored, as encoding/json would.
	var u Usage
	if err := json.Unmarshal([]byte(`{"cost_usd":0.5,"reasoning_tokens":3}`), &u); err != nil || !u.Valid() || u.CostUSD != 0.5 {
		t.Fatalf("%+v %v", u, err)
	}
}

// Out-of-bounds budgets and hold figures are flagged, and a hold does
// not print them.
func TestTaskFlags(t *testing.T) {
	huge, neg := 1e308, -1.0
	task := &Task{ID: "i", Slug: "s", BudgetUSD: &huge, Usage: &Usage{Flagged: "x"},
		Hold: &Hold{Kind: HoldBudget, Scope: "task", LimitUSD: 1e308, SpentUSD: 2}}
	flags := OwnFlags(task)
	if len(flags) != 3 || flags[0].What != "usage" || flags[1].What != "budget_usd" || flags[2].What != "hold" {
		t.Fatalf("%+v", flags)
	}
	if _, ok, why := task.OwnBudget(); ok || !strings.Contains(why, "1e+308") {
		t.Fatalf("own budget: %v %q", ok, why)
	}
	task.BudgetUSD = &neg
	if _, ok, _ := task.OwnBudget(); ok {
		t.Fatal("a negative budget counted")
	}
	if s := task.Hold.String(); strings.Contains(s, "000000") || !strings.Contains(s, "out of bounds") {
		t.Fatalf("hold: %q", s)
	}
	if s := (Flag{Task: "s", Turn: 3, What: "usage", Reason: "cost_usd -1e+308 is negative"}).String(); s != "task s turn 3: usage left out: cost_usd -1e+308 is negative" {
		t.Fatalf("%q", s)
	}
}

// turnsOf is a TurnReader serving fixed turns, or an error.
type turnsOf struct {
	turns []Turn
	err   error
}

func (r turnsOf) Turns(*Snapshot) ([]Turn, error) { return r.turns, r.err }

// TestSumTurnsCountsOnlyBelievedTurns: a flagged turn (a hostile
// 1e308, say) and a turn with no figures add nothing; a read's error is
// the sum's.
func TestSumTurnsCountsOnlyBelievedTurns(t *testing.T) {
	turns := []Turn{
		{Usage: &Usage{CostUSD: 0.25, InputTokens: 100, OutputTokens: 10}},
		{Usage: &Usage{CostUSD: 1e308, Flagged: "cost_usd out of range"}},
		{},
		{Usage: &Usage{CostUSD: 0.5, InputTokens: 50, Unpriced: 1}},
	}
	sum, err := SumTurns(turnsOf{turns: turns}, &Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{CostUSD: 0.75, InputTokens: 150, OutputTokens: 10, Unpriced: 1}); sum != want {
		t.Errorf("SumTurns = %+v, want %+v", sum, want)
	}
	boom := errors.New("read failed")
	if _, err := SumTurns(turnsOf{err: boom}, &Snapshot{}); !errors.Is(err, boom) {
		t.Errorf("a failed read: %v", err)
	}
}
