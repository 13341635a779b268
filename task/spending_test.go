package task

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
)

// spendingCases are summaries as lazy writes them and as a hostile or
// odd record could make them.
var spendingCases = []string{
	`{"id":"a","slug":"s","title":"t","status":"blocked","category":"waiting","parent":"p","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-02T00:00:00Z","sessions":1,"turns":2,"comments":0,"usage":{"cost_usd":1.25,"input_tokens":10,"output_tokens":3}}`,
	`{"id":"a","slug":"s","title":"t","status":"complete","outcome":"accepted","gate":{"status":"passed","commands":["go test ./..."],"tail":"ok \"quoted\" \u003c\u003e"},"pr":{"forge":"github","number":3},"metadata":{"usage":"{"},"usage":{"cost_usd":0.1}}`,
	`{"id":"g","slug":"grp","title":"t","status":"backlog","attempt_ids":["a1","a2"],"budget_usd":0}`,
	`{"id":"a1","slug":"grp-a1","title":"t","status":"working","attempt_of":"g","attempt":1,"budget_usd":12.5,"hold":{"kind":"budget","limit_usd":1,"spent_usd":2,"at":"2026-01-01T00:00:00Z"}}`,
	`{"id":"x","slug":"x","title":"t","status":"blocked","usage":{"cost_usd":-1e308}}`,
	`{"id":"x","slug":"x","title":"t","status":"blocked","usage":{"cost_usd":"NaN"}}`,
	`{"id":"x","slug":"x","title":"t","status":"blocked","usage":{"input_tokens":1e30}}`,
	`{"id":"x","slug":"x","title":"t","status":"blocked","usage":{"flagged":"no"}}`,
	`{"id":"x","slug":"x","title":"t","status":"blocked","usage":null,"budget_usd":null}`,
	`{"id":"x","Slug":"other","title":"t"}`,
	`{"id":"x","slug":"one","slug":"two"}`,
	`{"id":"x","title":"a \"quoted\" title"}`,
	`{"id":"x","budget_usd":1e400}`,
	`{"id":"x","budget_usd":-0.5,"usage":{}}`,
	`{"id":"x","after":[],"allowed_paths":["a/*"],"pool":{"labels":["gpu"]},"extra":[1,{"a":[true,false,null]}]}`,
	`{"id":"x","t":"\q"}`,
	`{"id":"x"} trailing`,
	`[]`,
	``,
}

// The fast scan agrees with decoding the whole summary, on every case
// it takes and on those it leaves to encoding/json.
func TestSpendingAgreesWithSummary(t *testing.T) {
	for _, c := range spendingCases {
		checkSpending(t, []byte(c))
	}
	// The fast path does take lazy's own summaries.
	for _, c := range spendingCases[:4] {
		if _, ok := scanSpending([]byte(c), &Entry{}); !ok {
			t.Errorf("the scan left a summary lazy writes to encoding/json: %s", c)
		}
	}
}

// Summaries lazy writes for tasks with every field a cost report reads.
func TestSpendingOnWrittenSummaries(t *testing.T) {
	b := 7.5
	task := &Task{ID: "0123456789abcdef", Slug: "s", Title: "t", Status: machine.Blocked, Parent: "fedcba9876543210", CreatedAt: time.Unix(1, 0), UpdatedAt: time.Unix(2, 0),
		Usage: &Usage{CostUSD: 0.3, InputTokens: 5, CachedInputTokens: 6, OutputTokens: 7, Unpriced: 1}, BudgetUSD: &b, AttemptOf: "1111222233334444", Attempt: 2,
		Gate: &GateRecord{}, Metadata: map[string]string{"k": "v"}}
	body, err := json.Marshal(NewSummary(task))
	if err != nil {
		t.Fatal(err)
	}
	sp, ok := scanSpending(body, &Entry{ID: "0123456789abcdef", Parent: "fedcba9876543210"})
	if !ok {
		t.Fatalf("not scanned: %s", body)
	}
	checkSpending(t, body)
	if sp.Usage.CostUSD != 0.3 || *sp.BudgetUSD != 7.5 || sp.AttemptOf != "1111222233334444" || sp.Parent != "fedcba9876543210" {
		t.Fatalf("%+v", sp)
	}
}

func checkSpending(t *testing.T, b []byte) {
	t.Helper()
	e := Entry{ID: "x", JSON: b}
	got, gerr := e.Spending()
	var s Summary
	werr := json.Unmarshal(b, &s)
	if werr != nil {
		// A field Spending does not read may be what fails the whole
		// summary; Spending need not fail with it.
		return
	}
	if gerr != nil {
		t.Fatalf("%s: spending error %v where the summary decodes", b, gerr)
	}
	if want := SpendingOf(&s); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v (usage %+v)\nwant %+v (usage %+v)", b, got, got.Usage, want, want.Usage)
	}
}

func FuzzSpending(f *testing.F) {
	for _, c := range spendingCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkSpending(t, b)
	})
}
