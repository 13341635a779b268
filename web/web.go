// Package web is the daemon's read-only web view: the task list with live
// substates and a page per task with its turns, diff stats and status
// changelog. It listens on 127.0.0.1 only, checks the Host header against
// DNS rebinding, and requires the token printed by lazy web.
package web

import (
	"context"
	"crypto/subtle"
	"embed"
	"html/template"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lazyorch/lazy/gitcli"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/mcp"
)

//go:embed templates/*.html
var files embed.FS

// pages parses the templates on first use: every lazy process links this
// package, and only the daemon serves pages.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"short": func(s string) string {
			if len(s) > 8 {
				return s[:8]
			}
			return s
		},
		"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	}).ParseFS(files, "templates/*.html"))
})

// Server renders the pages of one repository.
type Server struct {
	Store   *gitstore.Store
	Marks   *mcp.Marks
	RepoDir string
	Token   string
	// Addr is the address it listens on, for the Host check.
	Addr string
}

const cookieName = "lazy_token"

// Handler returns the web view.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.list)
	mux.HandleFunc("GET /task/{id}", s.task)
	return s.guard(mux)
}

// guard admits requests for this address that carry the token, in the
// query (which sets a cookie) or in that cookie.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, p, err := net.SplitHostPort(r.Host); err == nil {
			if _, ap, err := net.SplitHostPort(s.Addr); err == nil && (h == "127.0.0.1" || h == "localhost") && p == ap {
				host = s.Addr
			}
		}
		if host != s.Addr {
			http.Error(w, "lazy web answers only on "+s.Addr, http.StatusForbidden)
			return
		}
		token := r.URL.Query().Get("token")
		if token == "" {
			if c, err := r.Cookie(cookieName); err == nil {
				token = c.Value
			}
		}
		if subtle.ConstantTimeCompare([]byte(token), []byte(s.Token)) != 1 {
			http.Error(w, "lazy web needs the token in the URL that `lazy web` prints", http.StatusForbidden)
			return
		}
		if r.URL.Query().Get("token") != "" {
			// Not Secure: the view is plain HTTP on 127.0.0.1, where a
			// Secure cookie would never be sent back.
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

type row struct {
	gitstore.Summary
	Live  string
	Depth int
}

func (s *Server) list(w http.ResponseWriter, _ *http.Request) {
	entries, err := s.Store.List()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var rows []row
	counts := map[machine.Status]int{}
	for i := range entries {
		sum, err := entries[i].Summary()
		if err != nil {
			continue
		}
		counts[sum.Status]++
		rows = append(rows, row{Summary: *sum, Live: s.Marks.Substate(sum)})
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Status.IsTerminal() != b.Status.IsTerminal() {
			return !a.Status.IsTerminal()
		}
		return a.Slug < b.Slug
	})
	s.render(w, "list.html", map[string]any{"Rows": rows, "Counts": counts, "Now": time.Now()})
}

func (s *Server) task(w http.ResponseWriter, r *http.Request) {
	id, err := s.Store.Resolve(r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	sn, err := s.Store.Load(id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	goal, _ := sn.Goal()
	turns, _ := s.Store.Turns(sn)
	comments, _ := s.Store.Comments(sn)
	hist, _ := s.Store.History(sn)
	sum := gitstore.NewSummary(&sn.Task)
	s.render(w, "task.html", map[string]any{
		"Task": sum, "Live": s.Marks.Substate(&sum), "Goal": goal, "Session": sn.Session,
		"Turns": turns, "Comments": comments, "History": hist, "Diff": s.diffStat(r.Context(), sn),
		"Pending": sn.Violations.Pending, "Token": s.Token,
	})
}

// diffStat is the task branch's change since the session started.
func (s *Server) diffStat(ctx context.Context, sn *gitstore.Snapshot) string {
	ss := sn.Session
	if ss == nil || !gitstore.ValidHex(ss.GitStartSHA) || gitstore.ValidBranchName(ss.Branch) != nil {
		return ""
	}
	out, err := gitcli.New(s.RepoDir, "diff", "--stat", ss.GitStartSHA, "refs/heads/"+ss.Branch).String(ctx)
	if err != nil {
		return ""
	}
	return strings.TrimRight(out, "\n")
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages().ExecuteTemplate(w, name, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}
