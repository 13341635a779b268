package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/cost"
	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// costRecords are an accepted task with a rejected subtask, an abandoned
// one run by Codex (no price, no model) and an open one, over two days.
func costRecords() []cost.Record {
	day := func(d, h int) time.Time { return time.Date(2026, 5, d, h, 0, 0, 0, time.UTC) }
	u := func(c float64, in, cached, out int64) *task.Usage {
		return &task.Usage{CostUSD: c, InputTokens: in, CachedInputTokens: cached, OutputTokens: out}
	}
	tn := func(agent, model string, at time.Time, us *task.Usage) task.Turn {
		return task.Turn{Role: task.RoleAgent, Agent: agent, Model: model, At: at, Usage: us}
	}
	return []cost.Record{
		{Spending: task.Spending{ID: "aaaa1111", Slug: "fix-login", Status: machine.Complete, Outcome: task.OutcomeAccepted, Usage: u(4.0213, 1000012, 20000, 1007)},
			Turns: []task.Turn{tn("claude", "claude-opus-4-1", day(1, 10), u(3, 900000, 20000, 900)), tn("claude", "claude-sonnet-4-5", day(2, 10), u(1.0213, 100012, 0, 107))}},
		{Spending: task.Spending{ID: "bbbb2222", Slug: "cover-logout", Parent: "aaaa1111", Status: machine.Abandoned, Outcome: task.OutcomeRejected, Usage: u(0.75, 5000, 0, 300)},
			Turns: []task.Turn{tn("claude", "claude-opus-4-1", day(2, 11), u(0.75, 5000, 0, 300))}},
		{Spending: task.Spending{ID: "cccc3333", Slug: "port-\x1b[31mred", Status: machine.Abandoned, Outcome: task.OutcomeClosed, Usage: u(0, 42000, 0, 512)},
			Turns: []task.Turn{tn("codex", "", day(1, 9), u(0, 42000, 0, 512))}},
		{Spending: task.Spending{ID: "dddd4444", Slug: "release-notes", Status: machine.Blocked, Usage: u(0.1, 800, 0, 90)},
			Turns: []task.Turn{tn("claude", "claude-sonnet-4-5", day(2, 12), u(0.1, 800, 0, 90))}},
	}
}

func TestCostTableGolden(t *testing.T) {
	var b bytes.Buffer
	for _, by := range cost.Breakdowns {
		q := cost.Query{By: by, Loc: time.UTC}
		b.WriteString("$ lazy cost --by " + string(by) + "\n")
		if err := costTable(&b, cost.Aggregate(costRecords(), q)); err != nil {
			t.Fatal(err)
		}
		b.WriteString("\n")
	}
	since := time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC)
	b.WriteString("$ lazy cost --since 2026-05-03\n")
	if err := costTable(&b, cost.Aggregate(costRecords(), cost.Query{By: cost.ByTask, Since: since, Loc: time.UTC})); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Fatal("a record's escape sequence reached the terminal")
	}
	golden(t, "cost.golden", b.Bytes())
}

// TestCostCommand runs lazy cost on a repository's records: the JSON's
// field names, one task with its subtasks, and bad input.
func TestCostCommand(t *testing.T) {
	dir := testrepo.New(t)
	repo, err := gitrepo.Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := gitstore.Open(repo, gitstore.WithHost("h"))
	ids := map[string]string{}
	for _, r := range costRecords() {
		parent := ids[r.Spending.Parent]
		sn, err := st.Create(task.CreateSpec{Title: r.Spending.Slug, Slug: strings.ReplaceAll(r.Spending.Slug, "\x1b[31m", ""), Parent: parent, Actor: machine.Human})
		if err != nil {
			t.Fatal(err)
		}
		ids[r.Spending.ID] = sn.Task.ID
		path := map[machine.Status][]machine.Status{machine.Complete: {machine.Working, machine.Blocked, machine.Merging, machine.Complete},
			machine.Blocked: {machine.Working, machine.Blocked}, machine.Abandoned: {machine.Abandoned}}[r.Spending.Status]
		for i, to := range path {
			if _, _, err := st.Update(context.Background(), sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
				if s.Session == nil {
					s.Session = &task.Session{ID: "s1", Number: 1, Host: "h"}
					s.Task.Sessions = 1
				}
				if i == 0 {
					for _, tn := range r.Turns {
						s.AddTurn(tn)
					}
					s.Task.Usage = r.Spending.Usage
				}
				s.Task.Status, s.Task.Outcome = to, r.Spending.Outcome
				return &task.Op{Name: "test", Actor: machine.System}, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, errs, code := runCLI(t, "-C", dir, "cost", "--by", "outcome", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		By   string `json:"by"`
		Rows []struct {
			Key     string  `json:"key"`
			CostUSD float64 `json:"cost_usd"`
			Tasks   int     `json:"tasks"`
		} `json:"rows"`
		Total struct {
			CostUSD      float64 `json:"cost_usd"`
			InputTokens  int64   `json:"input_tokens"`
			Cached       int64   `json:"cached_input_tokens"`
			OutputTokens int64   `json:"output_tokens"`
			Tasks        int     `json:"tasks"`
		} `json:"total"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.By != "outcome" || len(rep.Rows) != 4 || rep.Rows[1].Key != "rejected" || rep.Rows[1].CostUSD != 0.75 || rep.Total.Tasks != 4 || rep.Total.InputTokens != 1047812 || rep.Total.Cached != 20000 {
		t.Fatalf("report: %+v", rep)
	}
	out, errs, code = runCLI(t, "-C", dir, "cost", "--by", "model", "fix-login")
	if code != 0 || !strings.Contains(out, "claude-opus-4-1    $3.7500") || strings.Contains(out, "release-notes") || !strings.HasPrefix(strings.Split(out, "\n")[3], "TOTAL") {
		t.Fatalf("by model of fix-login (exit %d, %s):\n%s", code, errs, out)
	}
	for args, want := range map[string]string{
		"cost --by colour":         `lazy: --by "colour" is not a breakdown; give one of task, agent, model, day, outcome`,
		"cost --since last-week":   `lazy: --since "last-week" is not a day; give one such as 2026-05-01, today, yesterday or 7d (the last seven days)`,
		"cost no-such-task --json": "no-such-task",
	} {
		_, errs, code := runCLI(t, append([]string{"-C", dir}, strings.Fields(args)...)...)
		if code == 0 || !strings.Contains(errs, want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("lazy %s: exit %d, stderr %q; want one line with %q", args, code, errs, want)
		}
	}
}

// What a person reads of a group tried two ways, a Codex turn the table
// priced, one nothing priced and a figure left out: the attempts under
// their group, "unpriced" for tokens without a price, never $0.0000, and
// the flagged figure named on stderr, not summed.
func TestCostTableAttemptsUnpricedAndFlagged(t *testing.T) {
	u := func(c float64, in, out int64, unpriced int64) *task.Usage {
		return &task.Usage{CostUSD: c, InputTokens: in, OutputTokens: out, Unpriced: unpriced}
	}
	recs := []cost.Record{
		{Spending: task.Spending{ID: "g", Slug: "fix-login", Status: machine.Backlog, Attempts: 2}},
		{Spending: task.Spending{ID: "a1", Slug: "fix-login-a1", AttemptOf: "g", Status: machine.Blocked, Usage: u(0.099, 60000, 2400, 0)}},
		{Spending: task.Spending{ID: "a2", Slug: "fix-login-a2", AttemptOf: "g", Status: machine.Blocked, Usage: u(0, 1000, 10, 1)}},
		{Spending: task.Spending{ID: "h", Slug: "hostile", Status: machine.Blocked, Usage: &task.Usage{Flagged: "cost_usd 1e+308 is above the $1000000000000 a task can cost"}}},
	}
	var out bytes.Buffer
	rep := cost.Aggregate(recs, cost.Query{By: cost.ByTask})
	if err := costTable(&out, rep); err != nil {
		t.Fatal(err)
	}
	want := "TASK                    OUTCOME  COST                IN     CACHED  OUT  WITH SUBTASKS\n" +
		"fix-login (2 attempts)  open     $0.0990 + unpriced  61.0k  0       2410\n" +
		"TOTAL                            $0.0990 + unpriced  61.0k  0       2410  2 tasks\n"
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	var note bytes.Buffer
	flaggedNote(&note, rep.Flagged)
	if note.String() != "note: 1 recorded figure is out of bounds and not counted (lazy doctor names them all):\n  task hostile: usage left out: cost_usd 1e+308 is above the $1000000000000 a task can cost\n" {
		t.Fatalf("note: %q", note.String())
	}
	out.Reset()
	if err := costTable(&out, cost.Aggregate(recs, cost.Query{By: cost.ByTask, Task: "g"})); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"\nfix-login-a1  open     $0.0990             60.0k  0       2400\n", "\nfix-login-a2  open     unpriced            1000   0       10\n", "\nTOTAL                  $0.0990 + unpriced  61.0k  0       2410  2 tasks\n"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("lazy cost fix-login lacks %q:\n%s", line, out.String())
		}
	}
	if strings.Contains(out.String(), "$0.0000") {
		t.Errorf("an unpriced turn shows as $0.0000:\n%s", out.String())
	}
}
