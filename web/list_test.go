package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/marks"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

const testAddr = "127.0.0.1:7777"

func newServer(tb testing.TB) (*Server, *gitstore.Store, string) {
	tb.Helper()
	dir := testrepo.New(tb)
	repo, err := gitrepo.Discover(dir)
	if err != nil {
		tb.Fatal(err)
	}
	st := gitstore.Open(repo, gitstore.WithHost("test-host"))
	return &Server{Store: st, Marks: &marks.Marks{LazyDir: repo.LazyDir(), Host: "test-host"}, RepoDir: dir, LazyDir: repo.LazyDir(), Token: "tok", Addr: testAddr,
		Env: func() *wire.Env { return wire.New(st, session.Env{RepoDir: dir}) }}, st, dir
}

func create(tb testing.TB, st *gitstore.Store, title, parent string) string {
	tb.Helper()
	sn, err := st.Create(task.CreateSpec{Title: title, Goal: "goal of " + title, Parent: parent, Actor: machine.Human})
	if err != nil {
		tb.Fatal(err)
	}
	return sn.Task.ID
}

func page(tb testing.TB, h http.Handler, path string) string {
	tb.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	req := httptest.NewRequest(http.MethodGet, "http://"+testAddr+path+sep+"token=tok", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestListIsATreeBoardFilteredSearchedAndPaged(t *testing.T) {
	s, st, _ := newServer(t)
	parent := create(t, st, "Parent feature", "")
	create(t, st, "Child step one", parent)
	for i := 0; i < 4; i++ {
		create(t, st, fmt.Sprintf("Other work %d", i), "")
	}
	s.PageSize = 3
	h := s.Handler()

	body := page(t, h, "/")
	if !strings.Contains(body, "page 1 of 2") || !strings.Contains(body, `href="/?page=2"`) {
		t.Fatalf("6 tasks at 3 a page should be two pages:\n%s", body)
	}
	// Newest first, but a child stays under its parent, indented.
	full := page(t, h, "/?q=step")
	if !strings.Contains(full, "child-step-one") || strings.Contains(full, "other-work") {
		t.Fatalf("the search for step:\n%s", full)
	}
	s.PageSize = 100
	tree := page(t, h, "/")
	pi, ci := strings.Index(tree, ">parent-feature<"), strings.Index(tree, ">child-step-one<")
	if pi < 0 || ci < pi || !strings.Contains(tree[pi-200:ci], "</tr>") || !strings.Contains(tree[ci-120:ci], "└") {
		t.Fatalf("the child is not right under its parent:\n%s", tree)
	}
	board := page(t, h, "/?view=board")
	for _, c := range categories {
		if !strings.Contains(board, `data-col="`+string(c)+`"`) {
			t.Fatalf("the board lacks the %s column:\n%s", c, board)
		}
	}
	if none := page(t, h, "/?status=working"); !strings.Contains(none, "No task matches") {
		t.Fatalf("a filter nothing matches:\n%s", none)
	}
	if got := page(t, h, "/?status=backlog&q=other"); strings.Count(got, `class="task"`) != 4 {
		t.Fatalf("backlog tasks titled other: %d rows", strings.Count(got, `class="task"`))
	}
	if hostile := page(t, h, `/?q=%3Cscript%3E&page=-3&view=%22x`); strings.Contains(hostile, "<script>") {
		t.Fatal("the search box echoes markup")
	}
}

func TestListPageCSPAllowsOnlyOwnScript(t *testing.T) {
	s, _, _ := newServer(t)
	req := httptest.NewRequest(http.MethodGet, "http://"+testAddr+"/?token=tok", nil)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	csp := rec.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-eval") {
		t.Fatalf("CSP %q", csp)
	}
	if strings.Contains(rec.Body.String(), "<script>") {
		t.Fatal("the page has an inline script")
	}
}

// seed makes a repository of n tasks (a tenth of them subtasks).
func seed(b *testing.B, n int) (*Server, string) {
	b.Helper()
	s, st, dir := newServer(b)
	var last string
	for i := 0; i < n; i++ {
		parent := ""
		if i%10 == 9 {
			parent = last
		}
		id := create(b, st, fmt.Sprintf("seeded task %d", i), parent)
		if parent == "" {
			last = id
		}
	}
	testrepo.Git(b, dir, "gc", "-q")
	if _, err := st.List(); err != nil { // the cache, as any earlier list leaves it
		b.Fatal(err)
	}
	return s, dir
}

// BenchmarkWebFirstPage10000 renders the first list page of a
// 10,000-task repository, as a browser asks for it; compare with
// BenchmarkListJSON10000, the work of one lazy list --json.
func BenchmarkWebFirstPage10000(b *testing.B) {
	s, _ := seed(b, 10000)
	h := s.Handler()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st := gitstore.Open(s.Store.(*gitstore.Store).Repo(), gitstore.WithHost("test-host")) // no in-memory state, as a fresh request
		s.Store, s.Env = st, func() *wire.Env { return wire.New(st, session.Env{RepoDir: s.RepoDir}) }
		if body := page(b, h, "/"); !strings.Contains(body, "page 1 of 100") {
			b.Fatal("not paged")
		}
	}
}

// BenchmarkListJSON10000 is what lazy list --json does past process
// start and its reconcile pass: list from the cache, decode and encode
// every summary.
func BenchmarkListJSON10000(b *testing.B) {
	s, _ := seed(b, 10000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st := gitstore.Open(s.Store.(*gitstore.Store).Repo(), gitstore.WithHost("test-host"))
		entries, err := st.List()
		if err != nil {
			b.Fatal(err)
		}
		out := make([]*task.Summary, 0, len(entries))
		for j := range entries {
			sum, err := entries[j].Summary()
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, sum)
		}
		if err := json.NewEncoder(io.Discard).Encode(out); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLiveStreamLooksOnlyAtShownTasks(t *testing.T) {
	s, st, _ := newServer(t)
	a, b := create(t, st, "Shown task", ""), create(t, st, "Elsewhere task", "")
	seen := map[string]taskState{}
	shown := map[string]bool{a: true}
	first := s.states("", true, seen, shown)
	if len(first) != 1 || first[0].ID != a || first[0].Status != machine.Backlog {
		t.Fatalf("first look: %+v", first)
	}
	for _, x := range first {
		seen[x.ID] = x
	}
	if again := s.states("", false, seen, shown); len(again) != 0 {
		t.Fatalf("nothing moved, yet: %+v", again)
	}
	if _, _, err := st.Update(context.Background(), b, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Title = "Elsewhere, renamed"
		return &task.Op{Name: "edit", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	s.recent = nil // streams share a list for under a second; this look is later
	moved := s.states("", false, seen, shown)
	if len(moved) != 1 || moved[0].ID != b || moved[0].Live != "" || moved[0].Turns != 0 {
		t.Fatalf("a task off the page moved: %+v, want it reported bare", moved)
	}
}
