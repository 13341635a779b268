package gitstore

import "testing"

func TestUsageString(t *testing.T) {
	u := &Usage{CostUSD: 0.42101, InputTokens: 12345, CachedInputTokens: 40100, OutputTokens: 2100}
	if got := u.String(); got != "$0.4210, 12.3k in (+40.1k cached) / 2.1k out tokens" {
		t.Fatalf("%q", got)
	}
	// Codex reports no price.
	if got := (&Usage{InputTokens: 12, OutputTokens: 7}).String(); got != "12 in / 7 out tokens" {
		t.Fatalf("%q", got)
	}
	var total Usage
	total.Add(*u)
	total.Add(Usage{CostUSD: 1, OutputTokens: 1})
	if total.OutputTokens != 2101 || total.CostUSD < 1.421 || total.CostUSD > 1.4211 {
		t.Fatalf("%+v", total)
	}
}
