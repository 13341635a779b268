package web

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// TestAGroupPageComparesItsAttempts: the page of a task tried two ways
// has the Attempts table lazy show prints (slug linked to the attempt's
// page, agent and model, status, cost, gate, diff stat), a model name
// from a pulled record escaped; an attempt's page leads back to it.
func TestAGroupPageComparesItsAttempts(t *testing.T) {
	s, st, dir := newServer(t)
	group, err := st.Create(task.CreateSpec{Title: "two ways", Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	files := [][]string{{"one.txt"}, {"two.txt", "three.txt"}}
	var ids []string
	for k := 1; k <= 2; k++ {
		spec := task.CreateSpec{Title: "two ways", Slug: fmt.Sprintf("two-ways-a%d", k), AttemptOf: group.Task.ID, Attempt: k, Actor: machine.Human}
		a := startedAs(t, st, dir, spec, files[k-1]...)
		ids = append(ids, a.Task.ID)
	}
	// Attempt 1: claude, a model name with markup, priced, gate passed;
	// attempt 2: codex, tokens only, no gate yet.
	update(t, st, ids[0], func(s *task.Snapshot) {
		s.Session.Agent, s.Session.Model = "claude", "<b>opus</b>"
		s.Task.Usage = &task.Usage{CostUSD: 0.25, InputTokens: 100, OutputTokens: 10}
		s.Task.Gate = &task.GateRecord{}
		s.Task.Gate.AddRun(task.GateRun{ID: "r1", At: time.Now().UTC(), Target: "main", Passed: true})
	})
	update(t, st, ids[1], func(s *task.Snapshot) {
		s.Session.Agent = "codex"
		s.Task.Usage = &task.Usage{InputTokens: 300, OutputTokens: 30}
	})
	update(t, st, group.Task.ID, func(s *task.Snapshot) { s.Task.Attempts = ids })
	h := s.Handler()

	body := page(t, h, "/task/"+group.Task.ID)
	table := regexp.MustCompile(`(?s)<div id="attempts">.*?</div>`).FindString(body)
	if table == "" {
		t.Fatalf("the group's page has no Attempts table:\n%s", body)
	}
	for _, want := range []string{
		"Attempts (2; spent $0.2500",
		`<a href="/task/` + ids[0] + `">two-ways-a1</a>`,
		`<a href="/task/` + ids[1] + `">two-ways-a2</a>`,
		"claude --model &lt;b&gt;opus&lt;/b&gt;", "<td>codex</td>",
		">blocked<", "<td>$0.2500</td>", "<td>unpriced</td>", "<td>passed</td>", "<td>-</td>",
		`<span class="plus">+1</span> <span class="minus">−0</span> in 1 file`,
		`<span class="plus">+2</span> <span class="minus">−0</span> in 2 files`,
		"lazy accept two-ways --attempt K",
	} {
		if !strings.Contains(table, want) {
			t.Fatalf("the Attempts table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(body, "<b>opus</b>") {
		t.Fatal("a model name reached the page unescaped")
	}
	attempt := page(t, h, "/task/"+ids[1])
	if !strings.Contains(attempt, `attempt 2 of <a href="/task/`+group.Task.ID+`">two-ways</a>`) {
		t.Fatalf("the attempt's page does not lead back to its group:\n%s", attempt)
	}
	if strings.Contains(attempt, `<div id="attempts">`) {
		t.Fatal("an attempt's page has an Attempts table of its own")
	}
}

func update(t *testing.T, st *gitstore.Store, id string, f func(*task.Snapshot)) {
	t.Helper()
	if _, _, err := st.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
		f(s)
		return &task.Op{Name: "test", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
}
