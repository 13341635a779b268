package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lazyorch/lazy/cost"
	"github.com/lazyorch/lazy/internal/words"
)

// costQuery is the cost page's GET parameters (lazy cost's flags).
type costQuery struct {
	By    cost.By
	Since string // as given
	Task  string // as given
}

// URL is the cost page grouped by another breakdown, the rest kept.
func (q costQuery) URL(by cost.By) string {
	v := url.Values{}
	if by != cost.ByTask {
		v.Set("by", string(by))
	}
	if q.Since != "" {
		v.Set("since", q.Since)
	}
	if q.Task != "" {
		v.Set("task", q.Task)
	}
	if len(v) == 0 {
		return "/cost"
	}
	return "/cost?" + v.Encode()
}

// costPage is everything the cost template shows.
type costPage struct {
	Query      costQuery
	Breakdowns []cost.By
	Report     cost.Report
	Rows       []costRow
	Total      costRow
	Turns      bool // the report counted turns
	// Flagged says how many recorded figures the report left out.
	Flagged string
	Heading string
	Chart   chart
	Now     time.Time
	Took    time.Duration
}

// costRow is a report row with its figures formatted.
type costRow struct {
	Key, ID, Outcome, Cost, In, Cached, Out, Turns, Tasks, WithSubtasks string
}

// chart is the per-day bar chart, laid out here and drawn as inline SVG
// by the template: no script, nothing fetched.
type chart struct {
	Width, Height, Base int
	Bars                []chartBar
	Unit                string // what the bars measure
	Max                 string // the tallest bar's value
	Days                int
	Cut                 int // days before the first shown that had spending
}

type chartBar struct {
	X, Y, W, H string
	Label      string // the day, under every few bars
	LabelX     string
	Title      string // the day and its figures, on hover
}

// chartDays is how many days the chart shows at most.
const chartDays = 60

func (s *Server) costPage(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	v := r.URL.Query()
	q := costQuery{By: cost.ByTask, Since: strings.TrimSpace(v.Get("since")), Task: strings.TrimSpace(v.Get("task"))}
	query := cost.Query{Loc: time.Local}
	if b := v.Get("by"); b != "" {
		by, err := cost.ParseBy(b)
		if err != nil {
			fail(w, http.StatusBadRequest, strings.Replace(err.Error(), "--by", "by", 1))
			return
		}
		q.By = by
	}
	query.By = q.By
	if q.Since != "" {
		since, err := cost.ParseSince(q.Since, time.Now(), time.Local)
		if err != nil {
			fail(w, http.StatusBadRequest, strings.Replace(err.Error(), "--since", "since", 1))
			return
		}
		query.Since = since
	}
	if q.Task != "" {
		id, err := s.Store.Resolve(q.Task)
		if err != nil {
			fail(w, http.StatusNotFound, err.Error())
			return
		}
		query.Task = id
	}
	// One read serves both the breakdown and the chart by day.
	fetch := query
	fetch.By = cost.ByDay
	recs, unreadable, err := cost.Fetch(s.Store, fetch)
	if err != nil {
		fail(w, http.StatusInternalServerError, "lazy could not read what the tasks cost: "+err.Error())
		return
	}
	rep := cost.Aggregate(recs, query)
	rep.Unreadable = unreadable
	p := &costPage{Query: q, Breakdowns: cost.Breakdowns, Report: rep, Turns: rep.Total.Turns != nil, Now: time.Now(),
		Heading: strings.ToUpper(string(q.By[:1])) + string(q.By[1:])}
	if n := len(rep.Flagged); n > 0 {
		p.Flagged = words.Count(n, "recorded figure is", "recorded figures are")
	}
	for _, row := range rep.Rows {
		key := row.Key
		if row.Attempts > 0 {
			key += fmt.Sprintf(" (%d attempts)", row.Attempts)
		}
		p.Rows = append(p.Rows, formatRow(key, row.Totals, row))
	}
	p.Total = formatRow("TOTAL", rep.Total, cost.Row{})
	p.Chart = dayChart(cost.Aggregate(recs, fetch))
	p.Took = time.Since(start).Round(100 * time.Microsecond)
	s.render(w, "cost.html", p)
}

func formatRow(key string, t cost.Totals, r cost.Row) costRow {
	c := costRow{Key: key, ID: r.ID, Outcome: r.Outcome, Cost: t.Cell(), In: fmt.Sprint(t.InputTokens), Cached: fmt.Sprint(t.CachedInputTokens),
		Out: fmt.Sprint(t.OutputTokens), Tasks: fmt.Sprint(t.Tasks)}
	if t.Turns != nil {
		c.Turns = fmt.Sprint(*t.Turns)
	}
	if w := r.WithSubtasks; w != nil {
		c.WithSubtasks = fmt.Sprintf("%s (%d tasks)", w.Cell(), w.Tasks)
	}
	return c
}

// dayChart lays out a bar per day from the first day with spending (at
// most chartDays back) to the last, days without spending included.
// Bars measure cost; when nothing recorded a price (Codex), tokens.
func dayChart(days cost.Report) chart {
	c := chart{Width: 1000, Height: 200, Base: 170, Unit: "cost (US dollars)"}
	if len(days.Rows) == 0 {
		return c
	}
	byTokens := days.Total.CostUSD == 0
	if byTokens {
		c.Unit = "tokens (in + cached + out)"
	}
	value := func(t cost.Totals) float64 {
		if byTokens {
			return float64(t.InputTokens + t.CachedInputTokens + t.OutputTokens)
		}
		return t.CostUSD
	}
	byDay := map[string]cost.Row{}
	for _, r := range days.Rows {
		byDay[r.Key] = r
	}
	first, _ := time.ParseInLocation("2006-01-02", days.Rows[0].Key, time.Local)
	last, _ := time.ParseInLocation("2006-01-02", days.Rows[len(days.Rows)-1].Key, time.Local)
	if lo := last.AddDate(0, 0, 1-chartDays); first.Before(lo) {
		for _, r := range days.Rows {
			if r.Key < lo.Format("2006-01-02") {
				c.Cut++
			}
		}
		first = lo
	}
	var keys []string
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		keys = append(keys, d.Format("2006-01-02"))
	}
	c.Days = len(keys)
	top := 0.0
	for _, k := range keys {
		top = max(top, value(byDay[k].Totals))
	}
	const left = 10
	// A slot of at least a fortnight's width: a few days' bars stay bars.
	slot := float64(c.Width-2*left) / float64(max(len(keys), 14))
	every := max(1, (len(keys)+11)/12)
	for i, k := range keys {
		t := byDay[k].Totals
		h := 0.0
		if top > 0 {
			h = value(t) / top * float64(c.Base-10)
		}
		x := left + float64(i)*slot
		b := chartBar{X: fmt.Sprintf("%.1f", x+slot*0.1), W: fmt.Sprintf("%.1f", slot*0.8), Y: fmt.Sprintf("%.1f", float64(c.Base)-h), H: fmt.Sprintf("%.1f", h),
			Title: fmt.Sprintf("%s: $%.4f, %d in, %d cached, %d out tokens", k, t.CostUSD, t.InputTokens, t.CachedInputTokens, t.OutputTokens)}
		if i%every == 0 || i == len(keys)-1 {
			b.Label, b.LabelX = k[5:], fmt.Sprintf("%.1f", x+slot/2)
		}
		c.Bars = append(c.Bars, b)
	}
	if byTokens {
		c.Max = fmt.Sprintf("%.0f tokens", top)
	} else {
		c.Max = fmt.Sprintf("$%.4f", top)
	}
	return c
}
