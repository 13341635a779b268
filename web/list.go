package web

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/tasktree"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/pool"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
)

// overlaps is the overlap check of every active task (review's Overlaps),
// keyed by task id, through the server's cache: a page costs git only
// for branches that moved since the last one. A check that cannot be
// made shows none.
func (s *Server) overlaps(ctx context.Context, entries []task.Entry) map[string]review.TaskOverlaps {
	env := s.Env()
	ov, err := env.Review().OverlapsOf(ctx, entries, &s.overlapCache)
	if err != nil {
		return nil
	}
	return ov
}

// row is one task on the list page.
type row struct {
	task.Summary
	Live  string
	Depth int
	// Overlaps is the task's overlaps in brief (review.TaskOverlaps.Brief):
	// other active tasks and new commits on its target that changed its
	// files too. "" for none.
	Overlaps string
}

// column is one board column: a status category.
type column struct {
	Category machine.Category
	Rows     []row
	Total    int
}

// listQuery is the list page's GET parameters, so a filtered view is a
// link, and works without JavaScript.
type listQuery struct {
	View   string // tree (default) or board
	Status string // a status or a category name; empty: all
	Q      string // case-insensitive substring of slug, title or id
	Page   int    // 1-based
}

func parseListQuery(r *http.Request) listQuery {
	v := r.URL.Query()
	q := listQuery{View: v.Get("view"), Status: v.Get("status"), Q: strings.TrimSpace(v.Get("q"))}
	if q.View != "board" {
		q.View = "tree"
	}
	q.Page, _ = strconv.Atoi(v.Get("page"))
	if q.Page < 1 {
		q.Page = 1
	}
	if len(q.Q) > 200 {
		q.Q = q.Q[:200]
	}
	return q
}

// URL is the list page for this query with some fields changed.
func (q listQuery) URL(page int) string {
	v := url.Values{}
	if q.View != "tree" {
		v.Set("view", q.View)
	}
	if q.Status != "" {
		v.Set("status", q.Status)
	}
	if q.Q != "" {
		v.Set("q", q.Q)
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	if len(v) == 0 {
		return "/"
	}
	return "/?" + v.Encode()
}

// statusMatches filters by a status or a category name.
func statusMatches(filter string, st machine.Status) bool {
	return filter == "" || string(st) == filter || string(st.Category()) == filter
}

// categories are the board's columns, in the order a person scans them.
var categories = []machine.Category{machine.CategoryActive, machine.CategoryBlocked, machine.CategoryResting, machine.CategoryTerminal}

func (s *Server) pageSize() int {
	if s.PageSize > 0 {
		return s.PageSize
	}
	return 100
}

// listPage is everything the list template shows.
type listPage struct {
	// Queues are this machine's merge queues with an entry in them.
	Queues []queue.View
	// Pools are the runner pools as last fetched, a line each.
	Pools    []string
	Query    listQuery
	Rows     []row
	Columns  []column
	Counts   map[machine.Status]int
	Statuses []machine.Status
	Total    int // tasks that match the filter
	All      int // tasks in the repository
	Page     int
	Pages    int
	Prev     string
	Next     string
	Now      time.Time
	Took     time.Duration
	Token    string
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	p, err := s.listData(r.Context(), parseListQuery(r))
	if err != nil {
		fail(w, http.StatusInternalServerError, "lazy could not list the tasks: "+err.Error())
		return
	}
	p.Took = time.Since(start).Round(100 * time.Microsecond)
	s.render(w, "list.html", p)
}

// listData builds one page of the list from the derived list cache: it
// filters and orders on the cache's own fields and decodes only the
// summaries it shows (or all of them when searching titles), so a page
// of a 10,000-task repository costs about one cached list.
func (s *Server) listData(ctx context.Context, q listQuery) (*listPage, error) {
	entries, err := s.Store.List()
	if err != nil {
		return nil, err
	}
	ov := s.overlaps(ctx, entries)
	p := &listPage{Query: q, Counts: map[machine.Status]int{}, All: len(entries), Now: time.Now()}
	if remotes, err := pool.Fetched(ctx, s.RepoDir); err == nil {
		for _, r := range remotes {
			if line, err := pool.Brief(ctx, s.RepoDir, r, p.Now); err == nil {
				p.Pools = append(p.Pools, line)
			}
		}
	}
	for _, v := range s.Env().Queue().Queues() {
		if len(v.Entries) > 0 {
			p.Queues = append(p.Queues, v)
		}
	}
	titles := map[string]*task.Summary{}
	var keep []*task.Entry
	for i := range entries {
		e := &entries[i]
		if e.Err != nil {
			continue
		}
		p.Counts[e.Status]++
		if !statusMatches(q.Status, e.Status) {
			continue
		}
		if q.Q != "" {
			sum, err := e.Summary()
			if err != nil || !matchesSearch(sum, q.Q) {
				continue
			}
			titles[e.ID] = sum
		}
		keep = append(keep, e)
	}
	for st := range p.Counts {
		p.Statuses = append(p.Statuses, st)
	}
	sort.Slice(p.Statuses, func(i, j int) bool { return p.Statuses[i] < p.Statuses[j] })
	p.Total = len(keep)
	size := s.pageSize()
	p.Pages = max(1, (len(keep)+size-1)/size)
	p.Page = min(q.Page, p.Pages)
	lo, hi := (p.Page-1)*size, min(p.Page*size, len(keep))
	summary := func(e *task.Entry, depth int) (row, bool) {
		sum := titles[e.ID]
		if sum == nil {
			var err error
			if sum, err = e.Summary(); err != nil {
				return row{}, false
			}
		}
		r := row{Summary: *sum, Live: s.Marks.Substate(sum), Depth: depth, Overlaps: ov[e.ID].Brief()}
		if sum.Gate != nil {
			// A gate run is this machine's only if its own record says so.
			g := *sum.Gate
			s.Env().Landing().Gates().VerifyGateSummary(e.ID, &g)
			r.Gate = &g
		}
		return r, true
	}
	if q.View == "board" {
		by := map[machine.Category][]*task.Entry{}
		for _, e := range keep {
			by[e.Status.Category()] = append(by[e.Status.Category()], e)
		}
		p.Pages = 1
		for _, c := range categories {
			p.Pages = max(p.Pages, (len(by[c])+size-1)/size)
		}
		p.Page = min(q.Page, p.Pages)
		for _, c := range categories {
			list := by[c]
			sortEntries(list)
			col := column{Category: c, Total: len(list)}
			for _, e := range list[min((p.Page-1)*size, len(list)):min(p.Page*size, len(list))] {
				if r, ok := summary(e, 0); ok {
					col.Rows = append(col.Rows, r)
				}
			}
			p.Columns = append(p.Columns, col)
		}
	} else {
		ordered := treeOrder(keep)
		for _, t := range ordered[lo:hi] {
			if r, ok := summary(t.Item, min(t.Depth, maxDepth)); ok {
				p.Rows = append(p.Rows, r)
			}
		}
	}
	if p.Page > 1 {
		p.Prev = q.URL(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.Next = q.URL(p.Page + 1)
	}
	return p, nil
}

func matchesSearch(sum *task.Summary, q string) bool {
	q = strings.ToLower(q)
	return strings.Contains(strings.ToLower(sum.Title), q) || strings.Contains(strings.ToLower(sum.Slug), q) || strings.HasPrefix(sum.ID, q)
}

// sortEntries puts unfinished tasks first, then newest first: the work a
// person looks at, on top.
func sortEntries(list []*task.Entry) {
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.Status.IsTerminal() != b.Status.IsTerminal() {
			return !a.Status.IsTerminal()
		}
		if a.Created != b.Created {
			return a.Created > b.Created
		}
		return a.ID < b.ID
	})
}

// maxDepth caps a subtask's indentation: deeper ones line up at it, so
// a deep chain of subtasks cannot push its rows off the page.
const maxDepth = 8

// treeOrder lays the tasks out depth-first, each subtask under its
// parent, siblings newest first with finished tasks last.
func treeOrder(keep []*task.Entry) []tasktree.Row[*task.Entry] {
	sortEntries(keep)
	return tasktree.Order(keep, func(e *task.Entry) string { return e.ID }, func(e *task.Entry) string { return e.TreeParent() })
}
