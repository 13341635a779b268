package cost

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// By is what a report groups by.
type By string

// The breakdowns. Task and outcome read the listing only; agent, model
// and day read each task's turns.
const (
	ByTask    By = "task"
	ByAgent   By = "agent"
	ByModel   By = "model"
	ByDay     By = "day"
	ByOutcome By = "outcome"
)

// Breakdowns are the groupings, in the order help lists them.
var Breakdowns = []By{ByTask, ByAgent, ByModel, ByDay, ByOutcome}

// Outcome groups: a finished task's outcome, or open.
const (
	OutcomeAccepted = task.OutcomeAccepted
	OutcomeRejected = task.OutcomeRejected
	OutcomeClosed   = task.OutcomeClosed
	OutcomeOpen     = "open"
)

// outcomes are the outcome groups in the order a report lists them:
// what landed, then what was thrown away, then what is still going.
var outcomes = []string{OutcomeAccepted, OutcomeRejected, OutcomeClosed, OutcomeOpen}

// Keys of work that did not say who or what ran it.
const (
	// UnreportedModel is a turn whose CLI named no model (Codex).
	UnreportedModel = "(unreported)"
	// UnrecordedAgent is a turn recorded before lazy kept the agent.
	UnrecordedAgent = "(unrecorded)"
)

// ParseBy reads --by.
func ParseBy(s string) (By, error) {
	for _, b := range Breakdowns {
		if strings.EqualFold(strings.TrimSpace(s), string(b)) {
			return b, nil
		}
	}
	names := make([]string, len(Breakdowns))
	for i, b := range Breakdowns {
		names[i] = string(b)
	}
	return "", fmt.Errorf("--by %q is not a breakdown; give one of %s", s, strings.Join(names, ", "))
}

var daysAgo = regexp.MustCompile(`^([0-9]{1,4})d$`)

// ParseSince reads --since: a day (2026-05-01), "today", "yesterday" or
// a number of days back (7d: the last seven days, today included). It
// is the start of that day in loc.
func ParseSince(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	now = now.In(loc)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	switch s {
	case "today":
		return today, nil
	case "yesterday":
		return today.AddDate(0, 0, -1), nil
	}
	if m := daysAgo.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		if n > 0 {
			return today.AddDate(0, 0, 1-n), nil
		}
	}
	if t, err := time.ParseInLocation("2006-01-02", s, loc); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q is not a day; give one such as 2026-05-01, today, yesterday or 7d (the last seven days)", s)
}

// Query is what a report covers and how it groups it.
type Query struct {
	By By
	// Since, when set, counts only turns at or after it.
	Since time.Time
	// Task, when set, is the id of the only task covered, with its
	// subtasks.
	Task string
	// Loc is the time zone of the days (nil: local time).
	Loc *time.Location
}

// NeedsTurns reports whether the report reads turn records: a breakdown
// by who ran a turn or when, or a cut by day. Task and outcome totals
// come from the listing alone.
func (q Query) NeedsTurns() bool {
	return q.By == ByAgent || q.By == ByModel || q.By == ByDay || !q.Since.IsZero()
}

func (q Query) loc() *time.Location {
	if q.Loc == nil {
		return time.Local
	}
	return q.Loc
}

// Record is one task as a report reads it.
type Record struct {
	Spending task.Spending
	// Turns are its agent turns that recorded usage, when the query
	// needs them (Fetch reads them only then).
	Turns []task.Turn
}

// Totals are what a group spent. Turns is nil when the report read no
// turn records (by task and by outcome, without --since). Dollars are
// summed to the micro-dollar (task.RoundUSD), so the JSON has at most
// six decimals and 0.1 + 0.2 is 0.3.
type Totals struct {
	CostUSD           float64 `json:"cost_usd"`
	InputTokens       int64   `json:"input_tokens"`
	CachedInputTokens int64   `json:"cached_input_tokens"`
	OutputTokens      int64   `json:"output_tokens"`
	// Unpriced counts the turns whose tokens no price reached: CostUSD
	// leaves them out.
	Unpriced int64 `json:"unpriced_turns,omitempty"`
	// Turns counts the agent turns that recorded a cost or tokens.
	Turns *int `json:"turns,omitempty"`
	// Tasks counts the tasks that spent something in the group.
	Tasks int `json:"tasks"`

	// last is the task counted last: a task's turns are added one after
	// another, and no task twice, so a change of id is a new task.
	last string
}

func (t *Totals) add(u task.Usage) {
	sum := t.Usage()
	sum.Add(u)
	t.CostUSD, t.InputTokens, t.CachedInputTokens, t.OutputTokens, t.Unpriced = sum.CostUSD, sum.InputTokens, sum.CachedInputTokens, sum.OutputTokens, sum.Unpriced
}

func (t *Totals) addTurn(u task.Usage, withTurns bool) {
	t.add(u)
	if withTurns {
		if t.Turns == nil {
			t.Turns = new(int)
		}
		*t.Turns++
	}
}

func (t *Totals) task(id string) {
	if t.Tasks == 0 || t.last != id {
		t.last = id
		t.Tasks++
	}
}

// Usage is the totals as a usage record.
func (t Totals) Usage() task.Usage {
	return task.Usage{CostUSD: t.CostUSD, InputTokens: t.InputTokens, CachedInputTokens: t.CachedInputTokens, OutputTokens: t.OutputTokens, Unpriced: t.Unpriced}
}

// Cell is what the totals cost as a table shows it (lazy cost, the web
// view's cost page): "$0.0990"; tokens no price reached are "unpriced",
// never $0.0000, and a sum short of them says so ("$1.2000 +
// unpriced").
func (t Totals) Cell() string {
	switch {
	case t.Priced():
		return fmt.Sprintf("$%.4f", t.CostUSD)
	case t.CostUSD == 0:
		return "unpriced"
	}
	return fmt.Sprintf("$%.4f + unpriced", t.CostUSD)
}

// Priced reports whether every turn of the totals had a price: false
// when some had tokens and no price (unpriced turns, or tokens with no
// dollars at all, as records of an older lazy have them).
func (t Totals) Priced() bool {
	return t.Unpriced == 0 && (t.CostUSD > 0 || t.InputTokens+t.CachedInputTokens+t.OutputTokens == 0)
}

// Row is one group of a report.
type Row struct {
	// Key names the group: a task's slug, an agent, a model, a day
	// (YYYY-MM-DD) or an outcome.
	Key string `json:"key"`
	Totals
	// By task only: the task, and what it spent with its subtasks when
	// it has any.
	ID           string         `json:"id,omitempty"`
	Title        string         `json:"title,omitempty"`
	Status       machine.Status `json:"status,omitempty"`
	Outcome      string         `json:"outcome,omitempty"`
	Parent       string         `json:"parent,omitempty"`
	WithSubtasks *Totals        `json:"with_subtasks,omitempty"`
	// Attempts, by task, on an attempt group's row: how many of its
	// attempts spent, rolled up into the row (lazy cost GROUP lists
	// them one by one).
	Attempts int `json:"attempts,omitempty"`

	self bool // by task: the row's own task spent
}

// Report is a breakdown with its total.
type Report struct {
	By    By     `json:"by"`
	Since string `json:"since,omitempty"` // YYYY-MM-DD
	// Task is the slug of the task (and subtasks) covered, if only one.
	Task  string `json:"task,omitempty"`
	Rows  []Row  `json:"rows"`
	Total Totals `json:"total"`
	// Unreadable counts records that could not be read, and so are not
	// in the figures.
	Unreadable int `json:"unreadable,omitempty"`
	// Flagged are the figures of the covered tasks lazy did not believe
	// (out of bounds, not numbers): left out of every row and the total.
	Flagged []task.Flag `json:"flagged,omitempty"`
}

// OutcomeOf is the outcome group of a task.
func OutcomeOf(s *task.Spending) string {
	if !s.Status.IsTerminal() {
		return OutcomeOpen
	}
	switch s.Outcome {
	case OutcomeAccepted, OutcomeRejected, OutcomeClosed:
		return s.Outcome
	}
	if s.Status == machine.Complete {
		return OutcomeAccepted
	}
	return OutcomeClosed
}

// Aggregate groups the records' spending as q asks. It is pure: the
// same records give the same report. By task, an attempt's spending is
// its group's row (Row.Attempts), unless the report is of that group
// (lazy cost GROUP), which lists its attempts. A flagged figure is in no
// row and no total; the report lists it (Report.Flagged).
func Aggregate(recs []Record, q Query) Report {
	rep := Report{By: q.By, Rows: []Row{}}
	if !q.Since.IsZero() {
		rep.Since = q.Since.In(q.loc()).Format("2006-01-02")
	}
	// The tree serves a report of one task and the rows by task; the
	// other breakdowns of every task need none of it.
	var tree *Tree
	if q.Task != "" || q.By == ByTask {
		sums := make([]*task.Spending, len(recs))
		for i := range recs {
			sums[i] = &recs[i].Spending
		}
		tree = treeOf(sums)
	}
	withTurns := q.NeedsTurns()
	var covered map[string]bool
	if q.Task != "" {
		covered = map[string]bool{}
		for _, id := range tree.Under(q.Task) {
			covered[id] = true
		}
		if s, ok := tree.Spending(q.Task); ok {
			rep.Task = s.Slug
		}
	}
	// rowOf is the task whose row a task's spending goes to, by task:
	// an attempt's group, but for a report of the group itself.
	rowOf := func(s *task.Spending) string {
		if q.By != ByTask {
			return s.ID
		}
		if g := s.AttemptOf; g != "" && g != q.Task && g != s.ID && (covered == nil || covered[g]) {
			if _, ok := tree.Spending(g); ok {
				return g
			}
		}
		return s.ID
	}
	// spent is what each task spent in the query's window: its turns
	// when they were read, its summary's total otherwise (each task
	// counted once, should a record come twice).
	spent := make(map[string]task.Usage, len(recs))
	groups := map[string]*Row{}
	group := func(key string) *Row {
		r := groups[key]
		if r == nil {
			r = &Row{Key: key}
			groups[key] = r
		}
		return r
	}
	if q.By == ByOutcome {
		for _, o := range outcomes {
			group(o)
		}
	}
	for i := range recs {
		rec := &recs[i]
		sp := &rec.Spending
		id := sp.ID
		if covered != nil && !covered[id] {
			continue
		}
		if _, dup := spent[id]; dup {
			continue
		}
		if u := sp.Usage; u != nil && u.Flagged != "" {
			rep.Flagged = append(rep.Flagged, task.Flag{TaskID: id, Task: sp.Slug, What: "usage", Reason: u.Flagged})
		}
		var u task.Usage
		if withTurns {
			for _, tn := range rec.Turns {
				if tn.Usage == nil || (!q.Since.IsZero() && tn.At.Before(q.Since)) {
					continue
				}
				if !tn.Usage.Valid() {
					rep.Flagged = append(rep.Flagged, task.Flag{TaskID: id, Task: sp.Slug, Turn: tn.Seq, What: "usage", Reason: tn.Usage.Flagged})
					continue
				}
				tu := turnUsage(&tn)
				u.Add(tu)
				rep.Total.addTurn(tu, true)
				var key string
				switch q.By {
				case ByAgent:
					key = orElse(tn.Agent, UnrecordedAgent)
				case ByModel:
					key = orElse(tn.Model, UnreportedModel)
				case ByDay:
					key = tn.At.In(q.loc()).Format("2006-01-02")
				case ByTask:
					key = rowOf(sp)
				case ByOutcome:
					key = OutcomeOf(sp)
				}
				r := group(key)
				r.addTurn(tu, true)
				r.task(id)
				r.self = r.self || key == id
			}
		} else if sp.Usage.Valid() && !zero(*sp.Usage) {
			u = *sp.Usage
			if u.CostUSD == 0 && u.Unpriced == 0 && u.Tokens() > 0 {
				u.Unpriced = 1 // recorded before lazy priced turns: at least one
			}
			rep.Total.add(u)
			key := rowOf(sp)
			if q.By == ByOutcome {
				key = OutcomeOf(sp)
			}
			r := group(key)
			r.add(u)
			r.task(id)
			r.self = r.self || key == id
		}
		spent[id] = u
		if !zero(u) {
			rep.Total.task(id)
		}
	}
	for _, r := range groups {
		if q.By == ByTask {
			s, _ := tree.Spending(r.Key)
			r.ID, r.Key, r.Title, r.Status, r.Outcome, r.Parent = s.ID, s.Slug, s.Title, s.Status, OutcomeOf(s), s.Parent
			r.Attempts = r.Tasks
			if r.self {
				r.Attempts--
			}
			if tree.HasSubtasks(s.ID) {
				var w Totals
				for _, n := range tree.Under(s.ID) {
					if !zero(spent[n]) {
						w.add(spent[n])
						w.task(n)
					}
				}
				if w.Tasks > r.Tasks {
					r.WithSubtasks = &w
				}
			}
		}
		if withTurns && r.Turns == nil {
			r.Turns = new(int)
		}
		rep.Rows = append(rep.Rows, *r)
	}
	if withTurns && rep.Total.Turns == nil {
		rep.Total.Turns = new(int)
	}
	sortRows(rep.Rows, q.By)
	return rep
}

// turnUsage is a turn's usage as a report counts it: a turn with tokens
// and no dollars that nothing priced (recorded before lazy priced turns)
// is an unpriced turn.
func turnUsage(tn *task.Turn) task.Usage {
	u := *tn.Usage
	if u.CostUSD == 0 && u.Unpriced == 0 && tn.PricedBy == "" && u.Tokens() > 0 {
		u.Unpriced = 1
	}
	return u
}

func zero(u task.Usage) bool { return u == task.Usage{} }

func orElse(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// sortRows orders a report: days in order, outcomes from accepted to
// open, everything else by what it cost, most first. It sorts pointers
// and moves each row once: rows are large, and a report by task has one
// per task that spent.
func sortRows(rows []Row, by By) {
	rank := map[string]int{}
	for i, o := range outcomes {
		rank[o] = i
	}
	ptrs := make([]*Row, len(rows))
	for i := range rows {
		ptrs[i] = &rows[i]
	}
	// Every row has a key of its own, and the id breaks what a slug
	// shared could leave, so the order is total and needs no stable sort.
	slices.SortFunc(ptrs, func(a, b *Row) int {
		switch by {
		case ByDay:
			return strings.Compare(a.Key, b.Key)
		case ByOutcome:
			return rank[a.Key] - rank[b.Key]
		}
		if a.CostUSD != b.CostUSD {
			if a.CostUSD > b.CostUSD {
				return -1
			}
			return 1
		}
		if ta, tb := a.InputTokens+a.CachedInputTokens+a.OutputTokens, b.InputTokens+b.CachedInputTokens+b.OutputTokens; ta != tb {
			if ta > tb {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	sorted := make([]Row, len(rows))
	for i, p := range ptrs {
		sorted[i] = *p
	}
	copy(rows, sorted)
}
