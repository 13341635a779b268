package web

import (
	"context"
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// maxForm bounds a POST body: a comment or feedback, never a file.
const maxForm = 256 << 10

// allowed is which action forms a task in this status shows. The
// operation still validates against the state machine; this only spares
// a person buttons that cannot work.
func allowed(st machine.Status) map[string]bool {
	parked := st == machine.Blocked || st == machine.Conflict || st == machine.Interrupted
	return map[string]bool{
		"comment": true,
		"unblock": parked,
		"ask":     parked,
		"stop":    st == machine.Working,
		"accept":  parked || st == machine.Submitted,
		"reject":  !st.IsTerminal() && st != machine.Working,
	}
}

var actionWords = map[string]string{
	"comment": "Commented", "unblock": "Unblocked", "ask": "Asked", "stop": "Stopped", "accept": "Accepted", "reject": "Rejected",
}

// sameOrigin checks where a POST comes from: its Origin (which every
// current browser sends on a form POST), or failing that its Referer, must
// be this server, and Sec-Fetch-Site, when sent, must say same-origin.
func (s *Server) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	src := r.Header.Get("Origin")
	if src == "" {
		src = r.Header.Get("Referer")
	}
	u, err := url.Parse(src)
	if src == "" || src == "null" || err != nil || u.Scheme != "http" {
		return false
	}
	return s.sameHost(u.Host)
}

// act runs one action for a session that may act, from a form that
// carries the session's CSRF token and comes from this origin.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	if !s.canAct(r) {
		fail(w, http.StatusForbidden, "actions are off in this web view; open the URL that `lazy web --actions` prints (or set git config lazy.web.actions true)")
		return
	}
	if !s.sameOrigin(r) {
		fail(w, http.StatusForbidden, "lazy web refuses a form sent from another site; use the page lazy web serves")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		fail(w, http.StatusBadRequest, "the form could not be read (at most 256 KiB); shorten the text and send it again")
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(csrf(s.session(r)))) != 1 {
		fail(w, http.StatusForbidden, "the form's CSRF token does not match this session; reload the page and send it again")
		return
	}
	action := r.PathValue("action")
	if _, ok := actionWords[action]; !ok {
		fail(w, http.StatusNotFound, "lazy web has no action "+`"`+action+`"`+"; use comment, unblock, ask, stop, accept or reject")
		return
	}
	id, err := s.Store.Resolve(r.PathValue("id"))
	if err != nil {
		fail(w, http.StatusNotFound, err.Error())
		return
	}
	text := strings.TrimSpace(r.PostForm.Get("text"))
	// A closed tab must not cancel an operation halfway (a merge, a turn
	// launch): the operation runs to its end whatever the browser does.
	ctx := context.WithoutCancel(r.Context())
	switch action {
	case "comment":
		if text == "" {
			err = errEmpty("comment")
		} else {
			err = s.Actions.Comment(ctx, id, text)
		}
	case "unblock":
		err = s.Actions.Unblock(ctx, id, text)
	case "ask":
		if text == "" {
			err = errEmpty("question")
		} else {
			err = s.Actions.Ask(ctx, id, text)
		}
	case "stop":
		err = s.Actions.Stop(ctx, id, text)
	case "accept":
		_, err = s.Actions.Accept(ctx, id, r.PostForm.Get("approve_protected") == "yes")
	case "reject":
		err = s.Actions.Reject(ctx, id, text)
	}
	if err != nil {
		data, lerr := s.taskData(r, id)
		if lerr != nil {
			fail(w, http.StatusConflict, err.Error())
			return
		}
		data["Error"] = err.Error()
		data["Draft"] = map[string]string{action: text}
		// The form comes back with what was typed, even where this
		// status would not offer it, so nothing written is lost.
		if can, ok := data["Can"].(map[string]bool); ok {
			can[action] = action != "accept"
		}
		w.WriteHeader(http.StatusConflict)
		s.render(w, "task.html", data)
		return
	}
	// id is a resolved task id (hex) and action one of actionWords' keys:
	// the target is always a path on this server.
	http.Redirect(w, r, "/task/"+url.PathEscape(id)+"?done="+url.QueryEscape(action), http.StatusSeeOther)
}

type errEmpty string

func (e errEmpty) Error() string {
	return "the " + string(e) + " is empty; write it in the box and send it again"
}

// acceptPage is the dry run an accept shows first: what would be merged
// into which branch, with the button that does it.
func (s *Server) acceptPage(w http.ResponseWriter, r *http.Request) {
	if !s.canAct(r) {
		fail(w, http.StatusForbidden, "actions are off in this web view; open the URL that `lazy web --actions` prints (or set git config lazy.web.actions true)")
		return
	}
	id, err := s.Store.Resolve(r.PathValue("id"))
	if err != nil {
		fail(w, http.StatusNotFound, err.Error())
		return
	}
	sn, err := s.Store.Load(id)
	if err != nil {
		fail(w, http.StatusInternalServerError, "lazy could not read the task: "+err.Error())
		return
	}
	data := map[string]any{"Task": task.NewSummary(&sn.Task), "CSRF": csrf(s.session(r))}
	// What accept would merge: the range lazy diff and accept --dry-run
	// measure.
	if rg, _, err := s.reviewRange(r.Context(), id); err != nil {
		data["Error"] = err.Error()
	} else {
		data["Into"] = rg.Into
		data["Diff"] = s.branchDiff(r.Context(), rg.MergeBase, rg.BranchSHA, r.URL.Query().Get("diff") == "all")
		// The protected paths it touches land only with this human's
		// approval, given with the button.
		env := s.Env()
		if pv, err := env.Landing().Gates().ProtectedChanges(r.Context(), sn); err == nil && pv != nil {
			data["Protected"] = pv
		}
	}
	s.render(w, "accept.html", data)
}
