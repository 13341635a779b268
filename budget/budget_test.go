package budget

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTightest(t *testing.T) {
	if _, ok := Tightest(nil); ok {
		t.Fatal("no line must mean no budget")
	}
	// A budget of 0 is a budget, and it allows nothing.
	if l, ok := Tightest([]Line{{Scope: "task"}, {Scope: "day", LimitUSD: 5}}); !ok || l.Scope != "task" || !l.Over() {
		t.Fatalf("a budget of 0: %+v %v", l, ok)
	}
	l, ok := Tightest([]Line{{Scope: "task", LimitUSD: 10, SpentUSD: 2}, {Scope: "parent p", LimitUSD: 5, SpentUSD: 4}, {Scope: "day", LimitUSD: 100, SpentUSD: 99.5}})
	if !ok || l.Scope != "day" || l.Left() != 0.5 || l.Over() {
		t.Fatalf("%+v", l)
	}
	if l := (Line{LimitUSD: 1, SpentUSD: 1.2}); !l.Over() || l.String() != "$1.20 spent of $1.00 ( budget)" {
		t.Fatalf("%v %q", l.Over(), l.String())
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]float64{"5": 5, "$12.50": 12.5, " 0 ": 0, "1e12": 1e12} {
		if got, err := ParseUSD("lazy.budget.task", in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "five", "-1", "NaN", "Inf", "1e400", "1e308", "1000000000001", "0x10", "1_0", "-0.01"} {
		_, err := ParseUSD("lazy.budget.task", bad)
		if err == nil || !strings.Contains(err.Error(), "lazy.budget.task") || !strings.Contains(err.Error(), "give") {
			t.Errorf("%q: %v", bad, err)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("%q: a figure printed in full: %v", bad, err)
		}
	}
	if v, err := ParseLimit("--budget", "none"); err != nil || v != nil {
		t.Errorf("none: %v %v", v, err)
	}
	if v, err := ParseLimit("--budget", "0"); err != nil || v == nil || *v != 0 {
		t.Errorf("0: %v %v", v, err)
	}
	if _, err := ParseLimit("--budget", "-3"); err == nil || !strings.Contains(err.Error(), "or none to clear it") {
		t.Errorf("-3: %v", err)
	}
	if _, _, err := ParseRaise("0"); err == nil {
		t.Error("--budget 0 on unblock would refuse the turn it asks for")
	}
	if add, v, err := ParseRaise("+5"); err != nil || !add || v != 5 {
		t.Errorf("+5: %v %v %v", add, v, err)
	}
	if add, v, err := ParseRaise("20"); err != nil || add || v != 20 {
		t.Errorf("20: %v %v %v", add, v, err)
	}
	if _, _, err := ParseRaise("+0"); err == nil {
		t.Error("+0 raises nothing")
	}
}

// The price table prices by model, dated ids and Claude Code's context
// mark included; a setting beats it; an unknown model is not priced.
func TestPrices(t *testing.T) {
	p := NewPrices(nil)
	for model, want := range map[string]float64{
		"gpt-5-codex": 0.099, "GPT-5-Codex": 0.099, "claude-sonnet-4-5-20250929": 0.216, "claude-sonnet-4-5[1m]": 0.216, "gpt-4.1-2025-04-14": 0.1392,
	} {
		pr, by, ok := p.Lookup(model)
		if !ok || by != PricedByTable || pr.Cost(60000, 0, 2400) != want {
			t.Errorf("%s: %+v %s %v = %v, want %v", model, pr, by, ok, pr.Cost(60000, 0, 2400), want)
		}
	}
	for _, unknown := range []string{"", "gpt-9", "sonnet", "gpt-5-codex-ultra"} {
		if _, _, ok := p.Lookup(unknown); ok {
			t.Errorf("%q is priced", unknown)
		}
	}
	m, pr, err := ParsePrice("My-Model 2,0.5,$20")
	if err != nil || m != "my-model" || pr != (Price{2, 0.5, 20}) || pr.String() != "2,0.5,20" {
		t.Fatalf("parse: %q %+v %v", m, pr, err)
	}
	p = NewPrices(map[string]Price{m: pr, "gpt-5-codex": {1, 0.1, 8}})
	if pr, by, ok := p.Lookup("my-model"); !ok || by != PricedByConfig || pr.Cost(1e6, 1e6, 1e6) != 22.5 {
		t.Fatalf("override: %+v %s %v", pr, by, ok)
	}
	if _, by, _ := p.Lookup("gpt-5-codex"); by != PricedByConfig {
		t.Fatalf("an override of a listed model: %s", by)
	}
	for _, bad := range []string{"", "gpt-5", "gpt-5 1,2", "gpt-5 1,2,x", "gpt-5 1,-2,3", "gpt-5 1,2,NaN", "a b c"} {
		if _, _, err := ParsePrice(bad); err == nil || !strings.Contains(err.Error(), "gpt-5-codex 1.25,0.125,10") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// The ledger counts a turn once however often it is written, days apart
// stay apart, concurrent writers lose nothing, and a torn line is skipped.
func TestLedger(t *testing.T) {
	l := Ledger{Dir: filepath.Join(t.TempDir(), "spend")}
	day := time.Date(2026, 12, 6, 12, 0, 0, 0, time.Local)
	if got, err := l.Day(day); err != nil || got != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Add(Entry{Task: "t", Session: "s", Seq: i, At: day, CostUSD: 0.25}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	must := func(e Entry) {
		if err := l.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	must(Entry{Task: "t", Session: "s", Seq: 3, At: day, CostUSD: 0.5})                 // rewritten: the newest counts
	must(Entry{Task: "t", Session: "s", Seq: 99, At: day.AddDate(0, 0, 1), CostUSD: 7}) // tomorrow
	f, err := os.OpenFile(l.dayFile(day), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Lines no turn could cost are skipped too.
	_, _ = f.WriteString(`{"task":"t","session":"s","seq":500,"cost_usd":1e308}` + "\n" + `{"task":"t","session":"s","seq":501,"cost_usd":-7}` + "\n")
	_, _ = f.WriteString(`{"task":"t","sess`)
	_ = f.Close()
	if got, err := l.Day(day); err != nil || got != 20*0.25+0.25 {
		t.Fatalf("day: %v %v, want 5.25", got, err)
	}
	if got, _ := l.Day(day.AddDate(0, 0, 1)); got != 7 {
		t.Fatalf("tomorrow: %v", got)
	}
}
