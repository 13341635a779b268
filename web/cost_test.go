package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// spent gives task id an agent turn at at that cost u, as the
// reconciler records one, and optionally ends the task.
func spent(t *testing.T, st *gitstore.Store, id string, at time.Time, model string, u task.Usage, end machine.Status, outcome string) {
	t.Helper()
	if _, _, err := st.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
		s.AddTurn(task.Turn{Role: task.RoleAgent, Kind: "agent", At: at, Agent: "claude", Model: model, Usage: &u})
		total := u
		if s.Task.Usage != nil {
			total.Add(*s.Task.Usage)
		}
		s.Task.Usage = &total
		if end != "" {
			s.Task.Status, s.Task.Outcome = end, outcome
		}
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestCostPageShowsTheBreakdownsAndADayChart(t *testing.T) {
	s, st, _ := newServer(t)
	h := s.Handler()
	if body := page(t, h, "/"); !strings.Contains(body, `href="/cost"`) {
		t.Fatal("the list page does not link the cost page")
	}
	if body := page(t, h, "/cost"); !strings.Contains(body, "No agent turn has recorded a cost or tokens") || strings.Contains(body, "<svg") {
		t.Fatalf("an empty repository's cost page:\n%s", body)
	}
	day1 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.Local)
	parent := create(t, st, "Parent <b>feature</b>", "")
	child := create(t, st, "Thrown away try", parent)
	other := create(t, st, "Other work", "")
	spent(t, st, parent, day1, "claude-opus-4-1", task.Usage{CostUSD: 3, InputTokens: 1000, OutputTokens: 10}, "", "")
	spent(t, st, child, day1.AddDate(0, 0, 2), "<script>x</script>", task.Usage{CostUSD: 0.5, InputTokens: 50, OutputTokens: 5}, machine.Abandoned, task.OutcomeRejected)
	spent(t, st, other, day1.AddDate(0, 0, 2), "", task.Usage{CostUSD: 0.25, InputTokens: 20, OutputTokens: 2}, "", "")

	body := page(t, h, "/cost")
	for _, want := range []string{
		`<a href="/task/` + parent + `">parent-b-feature-b</a>`, "$3.0000", "$3.5000 (2 tasks)", // with its subtask
		"<th>TOTAL</th>", "<th>$3.7500</th>", "<th>3</th>", // tasks
		`<a href="/cost?by=outcome"`, `<svg id="chart"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the cost page lacks %q:\n%s", want, body)
		}
	}
	// A bar per day from the first to the last, the empty day included,
	// each named on hover; the tallest is the whole height.
	bars := regexp.MustCompile(`<rect class="bar" [^>]*height="([0-9.]+)"[^>]*><title>([^<]*)</title>`).FindAllStringSubmatch(body, -1)
	if len(bars) != 3 || bars[0][1] != "160.0" || bars[1][1] != "0.0" || !strings.HasPrefix(bars[2][2], "2026-05-03: $0.7500") {
		t.Fatalf("bars %q", bars)
	}

	body = page(t, h, "/cost?by=model")
	if !strings.Contains(body, "&lt;script&gt;x&lt;/script&gt;") || strings.Contains(body, "<script>x") || !strings.Contains(body, "(unreported)") || !strings.Contains(body, "<th>Turns</th>") {
		t.Fatalf("by model, escaped:\n%s", body)
	}
	body = page(t, h, "/cost?by=outcome&since=2026-05-02")
	if !strings.Contains(body, "since 2026-05-02") || !strings.Contains(body, "<td>rejected</td><td>$0.5000</td>") || !strings.Contains(body, "<th>$0.7500</th>") {
		t.Fatalf("by outcome since the 2nd:\n%s", body)
	}
	body = page(t, h, "/cost?by=day&task=parent-b-feature-b")
	if !strings.Contains(body, "<td>2026-05-01</td><td>$3.0000</td>") || !strings.Contains(body, "<th>$3.5000</th>") || strings.Contains(body, "$0.2500") {
		t.Fatalf("one task by day:\n%s", body)
	}

	for path, want := range map[string]string{
		"/cost?by=colour":     `by "colour" is not a breakdown; give one of task, agent, model, day, outcome`,
		"/cost?since=someday": `since "someday" is not a day; give one such as 2026-05-01`,
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://"+testAddr+path+"&token=tok", nil))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s: %d %q", path, rec.Code, rec.Body.String())
		}
	}
}
