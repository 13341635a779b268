package web

import (
	"net/http"
	"time"

	"github.com/lazyorch/lazy/inbox"
)

// inboxPage is everything the inbox template shows.
type inboxPage struct {
	Result *inbox.Result
	Now    time.Time
}

// inboxPage lists what waits on a human, from every clone and runner
// whose records are here, oldest first, with the command that answers
// each (the inbox cleaned what records say; the template escapes it).
func (s *Server) inboxPage(w http.ResponseWriter, r *http.Request) {
	svc, err := s.Env().Inbox()
	if err != nil {
		fail(w, http.StatusInternalServerError, "lazy could not read its settings: "+err.Error())
		return
	}
	res, err := svc.List(r.Context())
	if err != nil {
		fail(w, http.StatusInternalServerError, "lazy could not list what waits on a human: "+err.Error())
		return
	}
	s.render(w, "inbox.html", &inboxPage{Result: res, Now: time.Now()})
}
