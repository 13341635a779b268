// Package web is the daemon's web view: the task list (a tree or a board,
// filtered, searched and paged on the server), and a page per task with
// its agent's output streamed live, turns, diff and status changelog.
// Pages render completely without JavaScript; a small same-origin script
// patches them from a Server-Sent Events stream fed by the daemon's own
// events. Actions (comment, unblock, ask, stop, accept, reject) exist only
// for a session that holds the actions token, which lazy web prints only
// when asked to (--actions or lazy.web.actions).
//
// It listens on 127.0.0.1 only, checks the Host header against DNS
// rebinding, requires a token, sends a strict CSP, and checks every POST's
// CSRF token, Origin and Host.
package web

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lazyorch/lazy/events"
	"github.com/lazyorch/lazy/inbox"
	"github.com/lazyorch/lazy/internal/quote"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/marks"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

//go:embed templates/*.html
var files embed.FS

//go:embed static/app.js
var appJS []byte

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
		"when":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
		"markdown":   markdown,
		"display":    sanitize.Display, // pulled records skip intake: escape spoofing runes visibly
		"categories": func() []machine.Category { return categories },
		"indent":     func(depth int) string { return fmt.Sprintf("%dpx", 9+depth*22) },
		"count":      words.Count,
		"wait":       inbox.Wait,
	}).ParseFS(files, "templates/*.html"))
})

// Actions are the lifecycle operations a browser session may run, with
// actor human; the daemon's command wires them to the same operations
// the CLI uses. Each returns an error worded for the user.
type Actions interface {
	Comment(ctx context.Context, id, text string) error
	Unblock(ctx context.Context, id, feedback string) error
	Ask(ctx context.Context, id, question string) error
	Stop(ctx context.Context, id, reason string) error
	// Accept lands the task; approveProtected is the human's approval of
	// the protected paths its change touches (the accept page's box).
	Accept(ctx context.Context, id string, approveProtected bool) (string, error)
	// Into names the branch an accept would merge into, for its dry run.
	Into(ctx context.Context, id string) (string, error)
	Reject(ctx context.Context, id, reason string) error
}

// Store is the task store the pages read: the task.Store port, a
// record's texts in one bounded read, and the note a page shows where
// the history it lists was cut (gitstore.Store in lazy).
type Store interface {
	task.Store
	ReadTexts(sn *task.Snapshot) (*task.Texts, error)
	HistoryCut(n int) string
}

// Server renders the pages of one repository.
type Server struct {
	Store Store
	// LazyDir is lazy's host-local directory of the repository (agent
	// logs, status files).
	LazyDir string
	// Env makes the operations' environment over Store a request reads
	// through (the CLI's wire.New with RepoDir), a fresh one each time.
	Env     func() *wire.Env
	Marks   *marks.Marks
	RepoDir string
	// Token lets a browser read; ActionsToken, when set with Actions,
	// also lets it act.
	Token        string
	ActionsToken string
	Actions      Actions
	// Addr is the address it listens on, for the Host and Origin checks.
	Addr string
	// Events follows the daemon's event stream in process (nil: the live
	// stream only polls).
	Events func(ctx context.Context) <-chan events.Event
	// PageSize is how many tasks a list page shows (default 100).
	PageSize int

	// recent shares one list among the open streams: each looks every
	// couple of seconds, and at 10,000 tasks a list is not free.
	recentMu sync.Mutex
	recentAt time.Time
	recent   []task.Entry

	// overlapCache keeps the file lists of the overlap checks the pages
	// made (review.OverlapCache).
	overlapCache review.OverlapCache
}

// recentList is the task list, at most listShare old.
func (s *Server) recentList() ([]task.Entry, error) {
	s.recentMu.Lock()
	defer s.recentMu.Unlock()
	if s.recent != nil && time.Since(s.recentAt) < listShare {
		return s.recent, nil
	}
	entries, err := s.Store.List()
	if err != nil {
		return nil, err
	}
	s.recent, s.recentAt = entries, time.Now()
	return entries, nil
}

// listShare is how long streams share one list.
const listShare = 900 * time.Millisecond

const cookieName = "lazy_token"

// Handler returns the web view.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.list)
	mux.HandleFunc("GET /cost", s.costPage)
	mux.HandleFunc("GET /inbox", s.inboxPage)
	mux.HandleFunc("GET /task/{id}", s.task)
	mux.HandleFunc("GET /task/{id}/accept", s.acceptPage)
	mux.HandleFunc("POST /task/{id}/{action}", s.act)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /static/app.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(appJS)
	})
	return s.guard(mux)
}

// sameHost reports whether host (a Host header or an Origin's host) names
// this server: its address, or localhost on its port.
func (s *Server) sameHost(host string) bool {
	if host == s.Addr {
		return true
	}
	h, p, err := net.SplitHostPort(host)
	if err != nil {
		return false
	}
	_, ap, err := net.SplitHostPort(s.Addr)
	return err == nil && (h == "127.0.0.1" || h == "localhost") && p == ap
}

// session is the token a request proved, from the query (which sets the
// cookie) or the cookie.
func (s *Server) session(r *http.Request) string {
	token := r.URL.Query().Get("token")
	if token == "" {
		if c, err := r.Cookie(cookieName); err == nil {
			token = c.Value
		}
	}
	for _, t := range []string{s.Token, s.ActionsToken} {
		if t != "" && subtle.ConstantTimeCompare([]byte(token), []byte(t)) == 1 {
			return t
		}
	}
	return ""
}

// canAct reports whether the request's session holds the actions token.
func (s *Server) canAct(r *http.Request) bool {
	return s.Actions != nil && s.ActionsToken != "" && s.session(r) == s.ActionsToken
}

// csrf is the form token of a session: derived from (so bound to) the
// session's cookie value, and useless without it.
func csrf(session string) string {
	m := hmac.New(sha256.New, []byte(session))
	m.Write([]byte("lazy web csrf v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// guard admits requests for this address that carry a token.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.sameHost(r.Host) {
			http.Error(w, "lazy web answers only on "+s.Addr, http.StatusForbidden)
			return
		}
		session := s.session(r)
		if session == "" {
			http.Error(w, "lazy web needs the token in the URL that `lazy web` prints", http.StatusForbidden)
			return
		}
		if r.URL.Query().Get("token") != "" {
			// Not Secure: the view is plain HTTP on 127.0.0.1, where a
			// Secure cookie would never be sent back.
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// same-origin, not no-referrer: the URL may carry the token, and with
		// no-referrer a browser sends "Origin: null" on POST, which act refuses.
		w.Header().Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var page bytes.Buffer
	if err := pages().ExecuteTemplate(&page, name, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// A record pulled from a remote never passed lazy's intake: whatever
	// field a bidi control came in, it is shown as the escape it is.
	_, _ = io.WriteString(w, quote.Bidi(page.String()))
}

// fail answers with a page-less error sentence.
func fail(w http.ResponseWriter, code int, msg string) {
	http.Error(w, strings.TrimSpace(msg), code)
}
