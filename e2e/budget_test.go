package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/mockapi"
)

// budgetShow is what these tests read of lazy show --json.
type budgetShow struct {
	Status    string  `json:"status"`
	Live      string  `json:"live_substate"`
	BudgetUSD float64 `json:"budget_usd"`
	Usage     *struct {
		CostUSD      float64 `json:"cost_usd"`
		InputTokens  int64   `json:"input_tokens"`
		OutputTokens int64   `json:"output_tokens"`
	} `json:"usage"`
	Hold *struct {
		Kind     string    `json:"kind"`
		Reason   string    `json:"reason"`
		Until    time.Time `json:"until"`
		Scope    string    `json:"scope"`
		LimitUSD float64   `json:"limit_usd"`
		SpentUSD float64   `json:"spent_usd"`
	} `json:"hold"`
	TurnList []struct {
		Seq              int       `json:"seq"`
		Role             string    `json:"role"`
		Actor            string    `json:"actor"`
		Kind             string    `json:"kind"`
		Content          string    `json:"content"`
		At               time.Time `json:"at"`
		FeedbackDelivery string    `json:"feedback_delivery"`
		FailureClass     string    `json:"failure_class"`
		Agent            string    `json:"agent"`
		Model            string    `json:"model"`
		Usage            *struct {
			CostUSD float64 `json:"cost_usd"`
		} `json:"usage"`
	} `json:"turn_list"`
	Session *struct {
		ConsecutiveInterruptions int `json:"consecutive_interruptions"`
	} `json:"session"`
}

func (r *runner) budgetShow(name string) budgetShow {
	r.t.Helper()
	var s budgetShow
	out := r.ok("show", "--json", name)
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		r.t.Fatalf("show: %v\n%s", err, out)
	}
	return s
}

// The real Claude Code, given lazy's budget as --max-budget-usd, stops
// itself when a model call costs more than is left: the task parks
// blocked and held with the budget's figures; a plain unblock is refused
// without losing its message; --budget +N raises it and the agent
// carries on; every cost the CLI reported is on the task.
func TestRealClaudeBudgetParksTheTask(t *testing.T) {
	r, srv := withRealAgents(t, newRepo(t), []mockapi.Reply{
		// 200k input tokens: about $0.82 as the CLI prices its default
		// model (a full context would make it compact the conversation).
		{When: "Write the report", Text: "spent a lot", InputTokens: 200000, OutputTokens: 1000},
		{When: "Carry on", Text: "finished cheaply"},
	}, nil)
	r.git("config", "lazy.budget.task", "0.25")
	tk := r.create("costly report", "-m", "Write the report.")
	r.ok("start", tk.Slug, "--agent", "claude")
	r.waitStatus(tk.Slug, "blocked")
	s := r.budgetShow(tk.Slug)
	if s.Hold == nil || s.Hold.Kind != "budget" || s.Hold.Scope != "task" || s.Hold.LimitUSD != 0.25 || s.Hold.SpentUSD < 0.8 {
		t.Fatalf("hold %+v, want a task budget of $0.25 with about $0.82 spent", s.Hold)
	}
	if !strings.Contains(s.Live, "over budget") {
		t.Fatalf("the held task's substate %q does not say it is over budget", s.Live)
	}
	last := s.TurnList[len(s.TurnList)-1]
	if last.FailureClass != "budget" || last.Agent != "claude" || last.Model == "" || last.Usage == nil || last.Usage.CostUSD < 0.8 {
		t.Fatalf("the agent turn %+v", last)
	}
	// The CLI got what was left of the budget.
	if bodies := srv.Bodies("anthropic"); len(bodies) != 1 {
		t.Fatalf("%d model calls, want 1: the CLI stopped itself at its budget", len(bodies))
	}
	// The CLI's own words say what it was given.
	if out := r.ok("show", tk.Slug); !strings.Contains(out, "Reached maximum budget ($0.25)") || !strings.Contains(out, "Held:") || !strings.Contains(out, "--budget +5") || !strings.Contains(out, "lazy unblock "+tk.Slug+" --budget +N") {
		t.Fatalf("show does not show the agent's stop, the hold and how to go on:\n%s", out)
	}
	if last.Content != "spent a lot" {
		t.Fatalf("the agent turn's text %q is not the agent's last words", last.Content)
	}
	if out := r.ok("list"); !strings.Contains(out, "over budget") {
		t.Fatalf("list does not show the hold:\n%s", out)
	}

	// A plain unblock is refused, and its message is kept.
	out := r.fails(1, nil, "unblock", tk.Slug, "-m", "keep the tables short")
	if !strings.Contains(out, "over budget") || !strings.Contains(out, "--budget") {
		t.Fatalf("unblock over budget: %s", out)
	}
	s = r.budgetShow(tk.Slug)
	if s.Status != "blocked" || s.Hold == nil || s.Hold.Kind != "budget" {
		t.Fatalf("after a refused unblock: %s %+v", s.Status, s.Hold)
	}
	kept := s.TurnList[len(s.TurnList)-1]
	if kept.Content != "keep the tables short" || kept.FeedbackDelivery != "pending" {
		t.Fatalf("the refused unblock's message %+v is not kept pending", kept)
	}
	if calls := srv.Calls("anthropic"); calls != 1 {
		t.Fatalf("a refused turn called the model (%d calls)", calls)
	}

	// Raised by $5 over what was spent, the agent carries on, and gets
	// the message that waited.
	r.ok("unblock", tk.Slug, "--budget", "+5")
	s = r.waitStatus(tk.Slug, "blocked").budget(r, tk.Slug)
	if s.Hold != nil || s.BudgetUSD < 5.8 {
		for n, b := range srv.Bodies("anthropic") {
			i := max(strings.LastIndex(b, `"role":"user"`), 0)
			t.Logf("call %d: carry=%v lastuser=%q", n, strings.Contains(b, "Carry on"), b[i:min(len(b), i+600)])
		}
		t.Fatalf("after the raise: hold %+v budget %v", s.Hold, s.BudgetUSD)
	}
	if last := s.TurnList[len(s.TurnList)-1]; last.Content != "finished cheaply" || last.FailureClass != "" {
		t.Fatalf("the turn after the raise: %+v", last)
	}
	bodies := srv.Bodies("anthropic")
	if lastBody := bodies[len(bodies)-1]; !strings.Contains(lastBody, "keep the tables short") || !strings.Contains(lastBody, "Carry on") {
		t.Fatal("the turn after the raise did not get the message that waited")
	}
	// What the CLI reported, turn by turn, is what the task says it cost.
	sum := 0.0
	for _, tn := range s.TurnList {
		if tn.Usage != nil {
			sum += tn.Usage.CostUSD
		}
	}
	if s.Usage == nil || math.Abs(s.Usage.CostUSD-sum) > 1e-9 || sum < 0.8 {
		t.Fatalf("task usage %+v, turns sum to %v", s.Usage, sum)
	}
	// And the tokens are those the mock API reported, call by call:
	// 200000 in and 1000 out, then the default 12 in and 7 out.
	if s.Usage.InputTokens != 200000+12 || s.Usage.OutputTokens != 1000+7 {
		t.Fatalf("task tokens %+v, want 200012 in and 1007 out as the mock reported", s.Usage)
	}
}

// budget re-reads the task for the budget fields.
func (s showFull) budget(r *runner, name string) budgetShow { return r.budgetShow(name) }

// A day budget spent refuses a new start, with the setting to raise.
func TestDayBudgetRefusesAStart(t *testing.T) {
	r, _ := withRealAgents(t, newRepo(t), []mockapi.Reply{{Text: "spent", InputTokens: 300000, OutputTokens: 1000}}, nil)
	r.git("config", "lazy.budget.day", "1")
	a := r.create("first")
	r.ok("start", a.Slug, "--agent", "claude")
	s := r.waitStatus(a.Slug, "blocked").budget(r, a.Slug)
	if s.Hold == nil || s.Hold.Scope != "day" {
		t.Fatalf("hold %+v, want the day budget", s.Hold)
	}
	b := r.create("second")
	out := r.fails(1, nil, "start", b.Slug, "--agent", "claude")
	if !strings.Contains(out, "day budget is spent") || !strings.Contains(out, "lazy.budget.day") || !strings.Contains(out, "nothing was started") {
		t.Fatalf("start over the day budget: %s", out)
	}
	if got := r.show(b.Slug).Status; got != "backlog" {
		t.Fatalf("a refused start left the task %s", got)
	}
	r.git("config", "lazy.budget.day", "banana")
	out = r.fails(1, nil, "start", b.Slug, "--agent", "claude")
	if !strings.Contains(out, "lazy.budget.day") || !strings.Contains(out, "banana") {
		t.Fatalf("a bad budget setting: %s", out)
	}
	r.ok("list") // a command that needs no budget is unaffected
}

// The real Claude Code, logged in to a plan, hits its 5-hour limit: its
// rate_limit_event says when it resets. The task parks as waiting for
// that time, not failed and not interrupted; the daemon resumes the same
// session after it with no human, and the circuit breaker is untouched.
func TestRealClaudeLimitWaitsForItsReset(t *testing.T) {
	r, srv := withRealAgents(t, newRepo(t), []mockapi.Reply{
		{Text: "first part done"},
		{Status: 429, Message: "limit", LimitResetIn: 6 * time.Second},
		{Text: "second part done"},
	}, nil)
	// A plan login instead of an API key: only then does Claude Code read
	// its plan's limits.
	r = r.with("ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=dummy")
	tk := r.create("long job", "-m", "Do it in two parts.")
	r.ok("start", tk.Slug, "--agent", "claude")
	r.waitStatus(tk.Slug, "blocked")
	r.ok("unblock", tk.Slug, "-m", "now the second part")
	s := r.waitStatus(tk.Slug, "blocked").budget(r, tk.Slug)
	if s.Hold == nil || s.Hold.Kind != "limit" || s.Hold.Until.Before(time.Now().Add(-time.Minute)) {
		t.Fatalf("hold %+v, want a limit until about now+6s; turns %+v", s.Hold, s.TurnList)
	}
	reset := s.Hold.Until
	if !strings.Contains(s.Live, "waiting for the limit to reset at") {
		t.Fatalf("substate %q", s.Live)
	}
	if n := s.Session.ConsecutiveInterruptions; n != 0 {
		t.Fatalf("a limit counted as %d interruption(s)", n)
	}
	// No human acts: the daemon resumes it after the reset.
	deadline := time.Now().Add(60 * time.Second)
	for {
		s = r.budgetShow(tk.Slug)
		if s.Status == "blocked" && s.Hold == nil && len(s.TurnList) > 0 && s.TurnList[len(s.TurnList)-1].Content == "second part done" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not resumed after the reset: %s hold %+v turns %+v", s.Status, s.Hold, s.TurnList)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, tn := range s.TurnList {
		if tn.Kind == "resume" && tn.Actor == "system" && tn.At.Before(reset) {
			t.Fatalf("resumed at %s, before the limit reset at %s", tn.At, reset)
		}
	}
	var resumed bool
	for _, tn := range s.TurnList {
		if tn.Kind == "resume" && tn.Actor == "system" && strings.Contains(tn.Content, "usage limit reset") {
			resumed = true
		}
	}
	if !resumed || s.Session.ConsecutiveInterruptions != 0 {
		t.Fatalf("no system resume turn (%v) or the breaker moved (%d): %+v", resumed, s.Session.ConsecutiveInterruptions, s.TurnList)
	}
	// The same conversation: the resumed call carries the first part and
	// the human's message that the limit cut off.
	bodies := srv.Bodies("anthropic")
	if last := bodies[len(bodies)-1]; !strings.Contains(last, "first part done") || !strings.Contains(last, "now the second part") {
		t.Fatal("the resumed turn is not the same session, or lost the message the limit cut off")
	}
}

// The real Codex hitting its usage limit names the time it lifts, to the
// minute and in local time: the task parks held until the minute after,
// not failed, and a human may still carry on before it.
func TestRealCodexLimitParksUntilItsReset(t *testing.T) {
	reset := time.Now().Add(90 * time.Minute).Truncate(time.Second)
	r, srv := withRealAgents(t, newRepo(t), nil, []mockapi.Reply{
		{Text: "first part done"},
		{Status: 429, ErrorBody: fmt.Sprintf(`{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":%d}}`, reset.Unix())},
		{Text: "carried on early"},
	})
	tk := r.create("codex job")
	r.ok("start", tk.Slug, "--agent", "codex")
	r.waitStatus(tk.Slug, "blocked")
	r.ok("unblock", tk.Slug, "-m", "the second part")
	s := r.waitStatus(tk.Slug, "blocked").budget(r, tk.Slug)
	// Codex says the minute; lazy waits for the minute after it.
	if s.Hold == nil || s.Hold.Kind != "limit" || s.Hold.Until.Before(reset.Truncate(time.Minute)) || s.Hold.Until.After(reset.Add(2*time.Minute)) {
		t.Fatalf("hold %+v, want a limit until about %s", s.Hold, reset)
	}
	if !strings.Contains(s.Hold.Reason, "usage limit") || s.Session.ConsecutiveInterruptions != 0 {
		t.Fatalf("hold reason %q, breaker %d", s.Hold.Reason, s.Session.ConsecutiveInterruptions)
	}
	if calls := srv.Calls("openai"); calls != 2 {
		t.Fatalf("%d model calls: the limited turn was retried in place instead of parked", calls)
	}
	// A human need not wait.
	r.ok("unblock", tk.Slug, "-m", "go on now")
	s = r.waitStatus(tk.Slug, "blocked").budget(r, tk.Slug)
	if s.Hold != nil || s.TurnList[len(s.TurnList)-1].Content != "carried on early" {
		t.Fatalf("after an early unblock: hold %+v, turns %+v", s.Hold, s.TurnList)
	}
}
