package cost

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
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
	OutcomeAccepted = gitstore.OutcomeAccepted
	OutcomeRejected = gitstore.OutcomeRejected
	OutcomeClosed   = gitstore.OutcomeClosed
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
	Summary gitstore.Summary
	// Turns are its agent turns that recorded usage, when the query
	// needs them (Fetch reads them only then).
	Turns []gitstore.Turn
}

// Totals are what a group spent. Turns is nil when the report read no
// turn records (by task and by outcome, without --since).
type Totals struct {
	CostUSD           float64 `json:"cost_usd"`
	InputTokens       int64   `json:"input_tokens"`
	CachedInputTokens int64   `json:"cached_input_tokens"`
	OutputTokens      int64   `json:"output_tokens"`
	// Turns counts the agent turns that recorded a cost or tokens.
	Turns *int `json:"turns,omitempty"`
	// Tasks counts the tasks that spent something in the group.
	Tasks int `json:"tasks"`

	tasks map[string]bool
}

func (t *Totals) add(u gitstore.Usage) {
	t.CostUSD += u.CostUSD
	t.InputTokens += u.InputTokens
	t.CachedInputTokens += u.CachedInputTokens
	t.OutputTokens += u.OutputTokens
}

func (t *Totals) addTurn(u gitstore.Usage, withTurns bool) {
	t.add(u)
	if withTurns {
		if t.Turns == nil {
			t.Turns = new(int)
		}
		*t.Turns++
	}
}

func (t *Totals) task(id string) {
	if t.tasks == nil {
		t.tasks = map[string]bool{}
	}
	if !t.tasks[id] {
		t.tasks[id] = true
		t.Tasks++
	}
}

// Usage is the totals as a usage record.
func (t Totals) Usage() gitstore.Usage {
	return gitstore.Usage{CostUSD: t.CostUSD, InputTokens: t.InputTokens, CachedInputTokens: t.CachedInputTokens, OutputTokens: t.OutputTokens}
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
}

// OutcomeOf is the outcome group of a task.
func OutcomeOf(s *gitstore.Summary) string {
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
// same records give the same report.
func Aggregate(recs []Record, q Query) Report {
	rep := Report{By: q.By, Rows: []Row{}}
	if !q.Since.IsZero() {
		rep.Since = q.Since.In(q.loc()).Format("2006-01-02")
	}
	sums := make([]*gitstore.Summary, len(recs))
	for i := range recs {
		sums[i] = &recs[i].Summary
	}
	tree := treeOf(sums)
	withTurns := q.NeedsTurns()
	covered := map[string]bool{}
	if q.Task != "" {
		for _, id := range tree.Under(q.Task) {
			covered[id] = true
		}
		if s, ok := tree.Summary(q.Task); ok {
			rep.Task = s.Slug
		}
	}
	// spent is what each task spent in the query's window: its turns
	// when they were read, its summary's total otherwise.
	spent := map[string]gitstore.Usage{}
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
		id := rec.Summary.ID
		if q.Task != "" && !covered[id] {
			continue
		}
		if _, dup := spent[id]; dup {
			continue
		}
		var u gitstore.Usage
		if withTurns {
			for _, tn := range rec.Turns {
				if tn.Usage == nil || (!q.Since.IsZero() && tn.At.Before(q.Since)) {
					continue
				}
				u.Add(*tn.Usage)
				rep.Total.addTurn(*tn.Usage, true)
				var key string
				switch q.By {
				case ByAgent:
					key = orElse(tn.Agent, UnrecordedAgent)
				case ByModel:
					key = orElse(tn.Model, UnreportedModel)
				case ByDay:
					key = tn.At.In(q.loc()).Format("2006-01-02")
				case ByTask:
					key = id
				case ByOutcome:
					key = OutcomeOf(&rec.Summary)
				}
				r := group(key)
				r.addTurn(*tn.Usage, true)
				r.task(id)
			}
		} else if rec.Summary.Usage != nil {
			u = *rec.Summary.Usage
			rep.Total.add(u)
			key := id
			if q.By == ByOutcome {
				key = OutcomeOf(&rec.Summary)
			}
			r := group(key)
			r.add(u)
			r.task(id)
		}
		spent[id] = u
		if !zero(u) {
			rep.Total.task(id)
		}
	}
	for _, r := range groups {
		if q.By == ByTask {
			s, _ := tree.Summary(r.Key)
			r.ID, r.Key, r.Title, r.Status, r.Outcome, r.Parent = s.ID, s.Slug, s.Title, s.Status, OutcomeOf(s), s.Parent
			if tree.HasSubtasks(s.ID) {
				var w Totals
				for _, n := range tree.Under(s.ID) {
					if !zero(spent[n]) {
						w.add(spent[n])
						w.task(n)
					}
				}
				if w.Tasks > 1 {
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

func zero(u gitstore.Usage) bool { return u == gitstore.Usage{} }

func orElse(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// sortRows orders a report: days in order, outcomes from accepted to
// open, everything else by what it cost, most first.
func sortRows(rows []Row, by By) {
	rank := map[string]int{}
	for i, o := range outcomes {
		rank[o] = i
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		switch by {
		case ByDay:
			return a.Key < b.Key
		case ByOutcome:
			return rank[a.Key] < rank[b.Key]
		}
		if a.CostUSD != b.CostUSD {
			return a.CostUSD > b.CostUSD
		}
		if ta, tb := a.InputTokens+a.CachedInputTokens+a.OutputTokens, b.InputTokens+b.CachedInputTokens+b.OutputTokens; ta != tb {
			return ta > tb
		}
		return a.Key < b.Key
	})
}
