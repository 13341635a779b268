package web

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/events"
	"github.com/lazyorch/lazy/proto"
)

// TestEventStreamRelaysPhasesAndTailsTheLog reads /events as a browser
// would: the task's state first, an accept phase the daemon publishes,
// and lines appended to the agent log after the page's offset.
func TestEventStreamRelaysPhasesAndTailsTheLog(t *testing.T) {
	s, st, _ := newServer(t)
	id := create(t, st, "Followed", "")
	feed := make(chan events.Event, 4)
	s.Events = func(context.Context) <-chan events.Event { return feed }
	logPath := proto.ForTask(st.Repo().LazyDir(), id).Path(proto.LogFile)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logPath, []byte("already shown\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(nil)
	defer srv.Close()
	s.Addr = strings.TrimPrefix(srv.URL, "http://")
	srv.Config.Handler = s.Handler()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events?task="+id+"&offset=14&token=tok", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	next := func(event string) string {
		t.Helper()
		for lines.Scan() {
			if lines.Text() == "event: "+event && lines.Scan() {
				return strings.TrimPrefix(lines.Text(), "data: ")
			}
		}
		t.Fatalf("the stream ended before a %s event: %v", event, lines.Err())
		return ""
	}
	if got := next("tasks"); !strings.Contains(got, `"id":"`+id+`"`) || !strings.Contains(got, `"status":"backlog"`) {
		t.Fatalf("first state: %s", got)
	}
	feed <- events.Event{Phase: &events.Phase{TaskID: id, Op: "accept", Step: 2, Of: 4, Label: "squash-merge \x1b[31m"}}
	if got := next("phase"); got != `{"id":"`+id+`","op":"accept","step":2,"of":4,"label":"squash-merge"}` {
		t.Fatalf("phase: %s", got)
	}
	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"type":"assistant","message":{"content":[{"type":"text","text":"new words"}]}}` + "\n")
	_ = f.Close()
	if got := next("log"); !strings.Contains(got, `{"k":"text","t":"new words"}`) || strings.Contains(got, "already shown") {
		t.Fatalf("log: %s", got)
	}
}
