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
	if _, ok := Tightest([]Line{{Scope: "task"}, {Scope: "day"}}); ok {
		t.Fatal("no limit set must mean no budget")
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
	for in, want := range map[string]float64{"5": 5, "$12.50": 12.5, " 0 ": 0} {
		if got, err := ParseUSD("lazy.budget.task", in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "five", "-1", "NaN", "Inf", "1e400"} {
		if _, err := ParseUSD("lazy.budget.task", bad); err == nil || !strings.Contains(err.Error(), "lazy.budget.task") {
			t.Errorf("%q: %v", bad, err)
		}
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
	_, _ = f.WriteString(`{"task":"t","sess`)
	_ = f.Close()
	if got, err := l.Day(day); err != nil || got != 20*0.25+0.25 {
		t.Fatalf("day: %v %v, want 5.25", got, err)
	}
	if got, _ := l.Day(day.AddDate(0, 0, 1)); got != 7 {
		t.Fatalf("tomorrow: %v", got)
	}
}
