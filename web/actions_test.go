package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// recorder is an Actions that remembers what it was asked.
type recorder struct{ calls []string }

func (r *recorder) note(s string) error                           { r.calls = append(r.calls, s); return nil }
func (r *recorder) Comment(_ context.Context, id, t string) error { return r.note("comment " + t) }
func (r *recorder) Unblock(_ context.Context, id, t string) error { return r.note("unblock " + t) }
func (r *recorder) Ask(_ context.Context, id, t string) error     { return r.note("ask " + t) }
func (r *recorder) Stop(_ context.Context, id, t string) error    { return r.note("stop " + t) }
func (r *recorder) Reject(_ context.Context, id, t string) error  { return r.note("reject " + t) }
func (r *recorder) Accept(_ context.Context, id string, approve bool) (string, error) {
	if approve {
		return "", r.note("accept approving the protected paths")
	}
	return "", r.note("accept")
}
func (r *recorder) Into(context.Context, string) (string, error) { return "main", nil }

func TestActionPostChecks(t *testing.T) {
	s, st, _ := newServer(t)
	rec := &recorder{}
	s.Actions, s.ActionsToken = rec, "act"
	id := create(t, st, "Acted on", "")
	h := s.Handler()
	good := csrf("act")
	post := func(cookie string, hdr map[string]string, body string) int {
		req := httptest.NewRequest(http.MethodPost, "http://"+testAddr+"/task/"+id+"/comment", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: cookieName, Value: cookie})
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	form := url.Values{"csrf": {good}, "text": {"hello"}}.Encode()
	for _, c := range []struct {
		name   string
		cookie string
		hdr    map[string]string
		body   string
		want   int
	}{
		{"this origin", "act", map[string]string{"Origin": "http://" + testAddr}, form, http.StatusSeeOther},
		{"localhost on this port", "act", map[string]string{"Origin": "http://localhost:7777"}, form, http.StatusSeeOther},
		{"a same-origin Referer without Origin", "act", map[string]string{"Referer": "http://" + testAddr + "/task/" + id}, form, http.StatusSeeOther},
		{"Origin null", "act", map[string]string{"Origin": "null"}, form, http.StatusForbidden},
		{"another port", "act", map[string]string{"Origin": "http://127.0.0.1:7778"}, form, http.StatusForbidden},
		{"https origin", "act", map[string]string{"Origin": "https://" + testAddr}, form, http.StatusForbidden},
		{"Sec-Fetch-Site cross-site", "act", map[string]string{"Origin": "http://" + testAddr, "Sec-Fetch-Site": "cross-site"}, form, http.StatusForbidden},
		{"the read token", "tok", map[string]string{"Origin": "http://" + testAddr}, url.Values{"csrf": {csrf("tok")}, "text": {"x"}}.Encode(), http.StatusForbidden},
		{"no token", "", map[string]string{"Origin": "http://" + testAddr}, form, http.StatusForbidden},
		{"an empty comment", "act", map[string]string{"Origin": "http://" + testAddr}, url.Values{"csrf": {good}}.Encode(), http.StatusConflict},
		{"an oversize body", "act", map[string]string{"Origin": "http://" + testAddr}, form + "&text=" + strings.Repeat("x", maxForm), http.StatusBadRequest},
	} {
		if got := post(c.cookie, c.hdr, c.body); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if len(rec.calls) != 3 || rec.calls[0] != "comment hello" {
		t.Fatalf("actions run: %q, want the three accepted comments only", rec.calls)
	}
}

// TestAcceptPostCarriesTheApprovalBox: the accept form's box, and only
// it, approves the protected paths.
func TestAcceptPostCarriesTheApprovalBox(t *testing.T) {
	s, st, _ := newServer(t)
	rec := &recorder{}
	s.Actions, s.ActionsToken = rec, "act"
	id := create(t, st, "Accepted", "")
	h := s.Handler()
	for _, form := range []url.Values{
		{"csrf": {csrf("act")}},
		{"csrf": {csrf("act")}, "approve_protected": {"yes"}},
		{"csrf": {csrf("act")}, "approve_protected": {"on"}},
	} {
		req := httptest.NewRequest(http.MethodPost, "http://"+testAddr+"/task/"+id+"/accept", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://"+testAddr)
		req.AddCookie(&http.Cookie{Name: cookieName, Value: "act"})
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusSeeOther {
			t.Fatalf("accept %v: %d", form, w.Code)
		}
	}
	if want := []string{"accept", "accept approving the protected paths", "accept"}; strings.Join(rec.calls, "|") != strings.Join(want, "|") {
		t.Fatalf("actions run: %q, want %q", rec.calls, want)
	}
}
