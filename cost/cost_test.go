package cost

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

func usage(cost float64, in, cached, out int64) *task.Usage {
	return &task.Usage{CostUSD: cost, InputTokens: in, CachedInputTokens: cached, OutputTokens: out}
}

var utc = time.UTC

func at(day string, hour int) time.Time {
	t, _ := time.ParseInLocation("2006-01-02", day, utc)
	return t.Add(time.Duration(hour) * time.Hour)
}

func turn(agent, model string, when time.Time, u *task.Usage) task.Turn {
	return task.Turn{Role: task.RoleAgent, Agent: agent, Model: model, At: when, Usage: u}
}

// records are four tasks: an accepted parent with a rejected subtask, a
// closed one and an open one, spread over two days and two agents.
func records() []Record {
	sum := func(id, slug, parent string, st machine.Status, outcome string, u *task.Usage) task.Spending {
		return task.Spending{ID: id, Slug: slug, Title: "title " + slug, Parent: parent, Status: st, Outcome: outcome, Usage: u, UpdatedAt: "2026-05-02T12:00:00Z"}
	}
	return []Record{
		{Spending: sum("p1", "parent", "", machine.Complete, task.OutcomeAccepted, usage(3, 300, 30, 3)), Turns: []task.Turn{
			turn("claude", "claude-opus-4", at("2026-05-01", 10), usage(1, 100, 10, 1)),
			turn("claude", "claude-sonnet-4", at("2026-05-02", 10), usage(2, 200, 20, 2)),
		}},
		{Spending: sum("c1", "child", "p1", machine.Abandoned, task.OutcomeRejected, usage(0.5, 50, 0, 5)), Turns: []task.Turn{
			turn("claude", "claude-opus-4", at("2026-05-02", 23), usage(0.5, 50, 0, 5)),
		}},
		{Spending: sum("x1", "thrown", "", machine.Abandoned, task.OutcomeClosed, usage(0, 1000, 0, 10)), Turns: []task.Turn{
			turn("codex", "", at("2026-05-01", 9), usage(0, 1000, 0, 10)),
		}},
		{Spending: sum("o1", "going", "", machine.Blocked, "", usage(0.25, 10, 0, 1)), Turns: []task.Turn{
			turn("", "", at("2026-05-02", 8), usage(0.25, 10, 0, 1)),
		}},
		{Spending: sum("n1", "idle", "", machine.Backlog, "", nil)},
	}
}

type rowWant struct {
	key   string
	cost  float64
	in    int64
	turns int // -1: none read
	tasks int
}

func TestAggregateGroupsByEachBreakdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    Query
		want []rowWant
		tot  rowWant
	}{
		{"task", Query{By: ByTask}, []rowWant{{"parent", 3, 300, -1, 1}, {"child", 0.5, 50, -1, 1}, {"going", 0.25, 10, -1, 1}, {"thrown", 0, 1000, -1, 1}},
			rowWant{"", 3.75, 1360, -1, 4}},
		{"outcome", Query{By: ByOutcome}, []rowWant{{"accepted", 3, 300, -1, 1}, {"rejected", 0.5, 50, -1, 1}, {"closed", 0, 1000, -1, 1}, {"open", 0.25, 10, -1, 1}},
			rowWant{"", 3.75, 1360, -1, 4}},
		{"agent", Query{By: ByAgent, Loc: utc}, []rowWant{{"claude", 3.5, 350, 3, 2}, {UnrecordedAgent, 0.25, 10, 1, 1}, {"codex", 0, 1000, 1, 1}},
			rowWant{"", 3.75, 1360, 5, 4}},
		{"model", Query{By: ByModel, Loc: utc}, []rowWant{{"claude-sonnet-4", 2, 200, 1, 1}, {"claude-opus-4", 1.5, 150, 2, 2}, {UnreportedModel, 0.25, 1010, 2, 2}},
			rowWant{"", 3.75, 1360, 5, 4}},
		{"day", Query{By: ByDay, Loc: utc}, []rowWant{{"2026-05-01", 1, 1100, 2, 2}, {"2026-05-02", 2.75, 260, 3, 3}},
			rowWant{"", 3.75, 1360, 5, 4}},
		// A day in another zone: 23:00 UTC is the next day in Berlin.
		{"day in local time", Query{By: ByDay, Loc: time.FixedZone("CEST", 2*3600)}, []rowWant{{"2026-05-01", 1, 1100, 2, 2}, {"2026-05-02", 2.25, 210, 2, 2}, {"2026-05-03", 0.5, 50, 1, 1}},
			rowWant{"", 3.75, 1360, 5, 4}},
		// Since cuts turns, so outcome reads them.
		{"outcome since", Query{By: ByOutcome, Since: at("2026-05-02", 0), Loc: utc}, []rowWant{{"accepted", 2, 200, 1, 1}, {"rejected", 0.5, 50, 1, 1}, {"closed", 0, 0, 0, 0}, {"open", 0.25, 10, 1, 1}},
			rowWant{"", 2.75, 260, 3, 3}},
		// One task covers its subtasks.
		{"one task", Query{By: ByOutcome, Task: "p1"}, []rowWant{{"accepted", 3, 300, -1, 1}, {"rejected", 0.5, 50, -1, 1}, {"closed", 0, 0, -1, 0}, {"open", 0, 0, -1, 0}},
			rowWant{"", 3.5, 350, -1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Aggregate(records(), tc.q)
			if len(rep.Rows) != len(tc.want) {
				t.Fatalf("rows %+v, want %d", rep.Rows, len(tc.want))
			}
			for i, w := range tc.want {
				check(t, rep.Rows[i].Key, rep.Rows[i].Totals, w)
			}
			check(t, "TOTAL", rep.Total, tc.tot)
		})
	}
}

func check(t *testing.T, key string, got Totals, w rowWant) {
	t.Helper()
	turns := -1
	if got.Turns != nil {
		turns = *got.Turns
	}
	if (w.key != "" && key != w.key) || got.CostUSD != w.cost || got.InputTokens != w.in || turns != w.turns || got.Tasks != w.tasks {
		t.Errorf("row %s: cost %v in %d turns %d tasks %d, want %+v", key, got.CostUSD, got.InputTokens, turns, got.Tasks, w)
	}
}

func TestAggregateByTaskRollsUpSubtasks(t *testing.T) {
	rep := Aggregate(records(), Query{By: ByTask})
	p := rep.Rows[0]
	if p.Key != "parent" || p.ID != "p1" || p.Outcome != OutcomeAccepted || p.WithSubtasks == nil || p.WithSubtasks.CostUSD != 3.5 || p.WithSubtasks.Tasks != 2 {
		t.Fatalf("parent row %+v (with subtasks %+v)", p, p.WithSubtasks)
	}
	if c := rep.Rows[1]; c.Key != "child" || c.Parent != "p1" || c.WithSubtasks != nil || c.Outcome != OutcomeRejected {
		t.Fatalf("child row %+v", c)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"by":"task"`, `"key":"parent"`, `"cost_usd":3`, `"input_tokens":300`, `"cached_input_tokens":30`, `"output_tokens":3`, `"tasks":1`, `"with_subtasks":{`, `"total":{"cost_usd":3.75`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("JSON lacks %s: %s", field, b)
		}
	}
	if strings.Contains(string(b), `"turns"`) {
		t.Errorf("a report that read no turns claims a turn count: %s", b)
	}
	if rep := Aggregate(nil, Query{By: ByDay}); rep.Rows == nil || rep.Total.Turns == nil || *rep.Total.Turns != 0 {
		t.Fatalf("an empty report: %+v", rep)
	}
}

func TestTreeSubtreeAndCycles(t *testing.T) {
	tr := treeOf([]*task.Spending{
		{ID: "a", Usage: usage(1, 10, 0, 1)},
		{ID: "b", Parent: "a", Usage: usage(2, 20, 0, 2)},
		{ID: "c", Parent: "b", Usage: usage(4, 40, 0, 4)},
		{ID: "x", Parent: "y", Usage: usage(8, 0, 0, 0)},
		{ID: "y", Parent: "x", Usage: usage(16, 0, 0, 0)},
	})
	if got := tr.Subtree("a"); got.CostUSD != 7 || got.InputTokens != 70 || got.OutputTokens != 7 {
		t.Fatalf("subtree of a: %+v", got)
	}
	tr.SetOwn("a", usage(100, 0, 0, 0))
	if got := tr.Subtree("a").CostUSD; got != 106 {
		t.Fatalf("a fresher own usage: %v", got)
	}
	if got := tr.Subtree("x").CostUSD; got != 24 {
		t.Fatalf("a parent cycle is walked once: %v", got)
	}
	if tr.Parent("c") != "b" || !tr.HasSubtasks("b") || tr.HasSubtasks("c") {
		t.Fatal("parents and children")
	}
}

func TestTrailers(t *testing.T) {
	for _, tc := range []struct {
		u    task.Usage
		want string
	}{
		{task.Usage{CostUSD: 4.02134, InputTokens: 1000012, OutputTokens: 1007}, "Lazy-Cost: $4.0213\nLazy-Tokens: 1000012 in, 0 cached, 1007 out\n"},
		{task.Usage{InputTokens: 5, CachedInputTokens: 7, OutputTokens: 1}, "Lazy-Tokens: 5 in, 7 cached, 1 out\n"},
		{task.Usage{CostUSD: 0.5}, "Lazy-Cost: $0.5000\n"},
		{task.Usage{}, ""},
	} {
		if got := Trailers(tc.u); got != tc.want {
			t.Errorf("Trailers(%+v) = %q, want %q", tc.u, got, tc.want)
		}
	}
}

func TestParseByAndSince(t *testing.T) {
	if b, err := ParseBy("Model"); err != nil || b != ByModel {
		t.Fatalf("ParseBy(Model) = %q, %v", b, err)
	}
	if _, err := ParseBy("colour"); err == nil || err.Error() != `--by "colour" is not a breakdown; give one of task, agent, model, day, outcome` {
		t.Fatalf("ParseBy(colour): %v", err)
	}
	now := at("2026-05-10", 15)
	for in, want := range map[string]string{"2026-05-01": "2026-05-01", "today": "2026-05-10", "yesterday": "2026-05-09", "7d": "2026-05-04", "1d": "2026-05-10"} {
		got, err := ParseSince(in, now, utc)
		if err != nil || got.Format("2006-01-02 15:04") != want+" 00:00" {
			t.Errorf("ParseSince(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"last week", "2026-13-01", "0d", "-3d", ""} {
		if _, err := ParseSince(bad, now, utc); err == nil || !strings.Contains(err.Error(), "give one such as 2026-05-01") {
			t.Errorf("ParseSince(%q): %v", bad, err)
		}
	}
}

// counting is a Source that counts the turn reads.
type counting struct {
	*gitstore.Store
	loads int
}

func (c *counting) Load(id string) (*task.Snapshot, error) {
	c.loads++
	return c.Store.Load(id)
}

func TestFetchReadsTurnsOnlyWhenTheBreakdownNeedsThem(t *testing.T) {
	repo, err := gitrepo.Discover(testrepo.New(t))
	if err != nil {
		t.Fatal(err)
	}
	st := gitstore.Open(repo, gitstore.WithHost("h"))
	ctx := context.Background()
	mk := func(title, parent string, u *task.Usage) string {
		sn, err := st.Create(task.CreateSpec{Title: title, Parent: parent, Actor: machine.Human})
		if err != nil {
			t.Fatal(err)
		}
		if u == nil {
			return sn.Task.ID
		}
		_, _, err = st.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			s.AddTurn(task.Turn{Role: task.RoleHuman, Kind: "start", Content: "go", At: at("2026-05-01", 9)})
			s.AddTurn(task.Turn{Role: task.RoleAgent, Kind: "agent", Content: "done", At: at("2026-05-01", 10), Agent: "claude", Model: "m1", Usage: u})
			s.Task.Usage = u
			return &task.Op{Name: "turn", Actor: machine.System}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return sn.Task.ID
	}
	parent := mk("Parent", "", usage(1, 10, 0, 1))
	mk("Child", parent, usage(2, 20, 0, 2))
	mk("Other", "", usage(4, 40, 0, 4))
	mk("Idle", "", nil)

	src := &counting{Store: st}
	recs, bad, err := Fetch(src, Query{By: ByOutcome})
	if err != nil || bad != 0 || len(recs) != 4 || src.loads != 0 {
		t.Fatalf("by outcome: %d records, %d unreadable, %d loads, %v", len(recs), bad, src.loads, err)
	}
	recs, _, err = Fetch(src, Query{By: ByModel, Task: parent})
	if err != nil || len(recs) != 2 || src.loads != 2 {
		t.Fatalf("by model of one task: %d records, %d loads, %v", len(recs), src.loads, err)
	}
	rep := Aggregate(recs, Query{By: ByModel, Task: parent})
	if len(rep.Rows) != 1 || rep.Rows[0].Key != "m1" || rep.Rows[0].CostUSD != 3 || *rep.Rows[0].Turns != 2 || rep.Task != "parent" {
		t.Fatalf("report %+v", rep)
	}
	// Records last changed before --since are not opened.
	src.loads = 0
	if _, _, err := Fetch(src, Query{By: ByDay, Since: time.Now().Add(time.Hour)}); err != nil || src.loads != 0 {
		t.Fatalf("since the future: %d loads, %v", src.loads, err)
	}
}

// An attempt group's row holds its attempts' spending, rolled up; the
// report of the group itself lists each attempt and their total.
func TestAggregateRollsAttemptsUpUnderTheirGroup(t *testing.T) {
	recs := []Record{
		{Spending: task.Spending{ID: "g", Slug: "fix", Status: machine.Backlog, Attempts: 2}},
		{Spending: task.Spending{ID: "a1", Slug: "fix-a1", AttemptOf: "g", Status: machine.Blocked, Usage: usage(1.5, 100, 0, 10)}},
		{Spending: task.Spending{ID: "a2", Slug: "fix-a2", AttemptOf: "g", Status: machine.Blocked, Usage: usage(0.25, 50, 0, 5)}},
		{Spending: task.Spending{ID: "o", Slug: "other", Status: machine.Blocked, Usage: usage(1, 1, 0, 1)}},
	}
	rep := Aggregate(recs, Query{By: ByTask})
	if len(rep.Rows) != 2 {
		t.Fatalf("rows %+v", rep.Rows)
	}
	g := rep.Rows[0]
	if g.Key != "fix" || g.ID != "g" || g.CostUSD != 1.75 || g.InputTokens != 150 || g.Attempts != 2 || g.Tasks != 2 || g.WithSubtasks != nil {
		t.Fatalf("group row %+v", g)
	}
	if rep.Total.CostUSD != 2.75 || rep.Total.Tasks != 3 {
		t.Fatalf("total %+v", rep.Total)
	}
	rep = Aggregate(recs, Query{By: ByTask, Task: "g"})
	if len(rep.Rows) != 2 || rep.Rows[0].Key != "fix-a1" || rep.Rows[1].Key != "fix-a2" || rep.Rows[0].Attempts != 0 || rep.Total.CostUSD != 1.75 || rep.Task != "fix" {
		t.Fatalf("the group's report %+v", rep)
	}
	// One attempt's report is its own.
	rep = Aggregate(recs, Query{By: ByTask, Task: "a2"})
	if len(rep.Rows) != 1 || rep.Rows[0].Key != "fix-a2" || rep.Total.CostUSD != 0.25 {
		t.Fatalf("an attempt's report %+v", rep)
	}
	// By outcome the group's attempts count as open work.
	rep = Aggregate(recs, Query{By: ByOutcome})
	if rep.Rows[3].Key != OutcomeOpen || rep.Rows[3].CostUSD != 2.75 {
		t.Fatalf("outcome rows %+v", rep.Rows)
	}
}

// A flagged figure (out of bounds, or not a number) is in no row and no
// total, whichever breakdown reads it, and the report names it.
func TestAggregateLeavesFlaggedFiguresOut(t *testing.T) {
	bad := func(why string) *task.Usage { return &task.Usage{Flagged: why} }
	recs := []Record{
		{Spending: task.Spending{ID: "p", Slug: "parent", Status: machine.Blocked, Usage: usage(2, 10, 0, 1)}, Turns: []task.Turn{
			turn("claude", "m", at("2026-05-01", 1), usage(2, 10, 0, 1)),
		}},
		{Spending: task.Spending{ID: "c", Slug: "canceller", Parent: "p", Status: machine.Blocked, Usage: bad("cost_usd -1e+308 is negative")}, Turns: []task.Turn{
			{Seq: 2, Agent: "codex", At: at("2026-05-01", 2), Usage: bad("cost_usd -1e+308 is negative")},
			{Seq: 3, Agent: "codex", At: at("2026-05-01", 3), Usage: usage(0.5, 1, 0, 1)},
		}},
		{Spending: task.Spending{ID: "h", Slug: "hog", Parent: "p", Status: machine.Blocked, Usage: bad("cost_usd 1e+308 is above")}},
	}
	rep := Aggregate(recs, Query{By: ByTask})
	if len(rep.Rows) != 1 || rep.Rows[0].Key != "parent" || rep.Total.CostUSD != 2 || rep.Rows[0].WithSubtasks != nil || len(rep.Flagged) != 2 {
		t.Fatalf("by task: rows %+v total %+v flagged %+v", rep.Rows, rep.Total, rep.Flagged)
	}
	// Reading turns, the canceller's believable turn counts; its hostile
	// one does not.
	rep = Aggregate(recs, Query{By: ByAgent, Loc: utc})
	if rep.Total.CostUSD != 2.5 || len(rep.Flagged) != 3 || rep.Flagged[1].Turn != 2 {
		t.Fatalf("by agent: total %+v flagged %+v", rep.Total, rep.Flagged)
	}
	b, _ := json.Marshal(rep)
	if !strings.Contains(string(b), `"total":{"cost_usd":2.5,`) || !strings.Contains(string(b), `"flagged":[{"task_id":"c","task":"canceller","what":"usage","reason":"cost_usd -1e+308 is negative"}`) {
		t.Fatalf("JSON: %s", b)
	}
}

// Money in the JSON has no float noise: 0.1 + 0.2 is 0.3.
func TestReportMoneyIsExact(t *testing.T) {
	recs := []Record{
		{Spending: task.Spending{ID: "a", Slug: "a", Status: machine.Blocked, Usage: usage(0.1, 1, 0, 1)}},
		{Spending: task.Spending{ID: "b", Slug: "b", Status: machine.Blocked, Usage: usage(0.2, 1, 0, 1)}},
		{Spending: task.Spending{ID: "c", Slug: "c", Status: machine.Blocked, Usage: usage(0.4, 1, 0, 1)}},
		{Spending: task.Spending{ID: "d", Slug: "d", Status: machine.Blocked, Usage: usage(0.4, 1, 0, 1)}},
		{Spending: task.Spending{ID: "e", Slug: "e", Status: machine.Blocked, Usage: usage(0.4, 1, 0, 1)}},
	}
	b, _ := json.Marshal(Aggregate(recs[:2], Query{By: ByOutcome}))
	if !strings.Contains(string(b), `"total":{"cost_usd":0.3,`) {
		t.Fatalf("0.1+0.2: %s", b)
	}
	b, _ = json.Marshal(Aggregate(recs[2:], Query{By: ByOutcome}))
	if !strings.Contains(string(b), `"total":{"cost_usd":1.2,`) {
		t.Fatalf("3 x 0.4: %s", b)
	}
}

// Tokens no price reached are unpriced: the cell says so, never $0.
func TestTotalsCell(t *testing.T) {
	for _, tc := range []struct {
		t    Totals
		want string
	}{
		{Totals{CostUSD: 0.099, InputTokens: 60000, OutputTokens: 2400}, "$0.0990"},
		{Totals{InputTokens: 60000, OutputTokens: 2400, Unpriced: 1}, "unpriced"},
		{Totals{InputTokens: 60000, OutputTokens: 2400}, "unpriced"},
		{Totals{CostUSD: 1.2, InputTokens: 60000, Unpriced: 2}, "$1.2000 + unpriced"},
		{Totals{}, "$0.0000"},
	} {
		if got := tc.t.Cell(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.t, got, tc.want)
		}
	}
}
