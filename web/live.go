package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/events"
	"github.com/lazyorch/lazy/internal/quote"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
)

// taskState is what the live stream tells a page about one task.
type taskState struct {
	ID       string           `json:"id"`
	Status   machine.Status   `json:"status"`
	Category machine.Category `json:"category"`
	Live     string           `json:"live,omitempty"`
	// Progress is the agent's latest line as its supervisor reports it
	// (status.json), beside the substate's own progress (MCP).
	Progress string `json:"progress,omitempty"`
	Turns    int    `json:"turns"`
	Head     string `json:"head"` // the task ref's commit: a page section is stale when it moves
}

// phaseState is one step of an accept (or other long operation).
type phaseState struct {
	ID    string `json:"id"`
	Op    string `json:"op"`
	Step  int    `json:"step,omitempty"`
	Of    int    `json:"of,omitempty"`
	Label string `json:"label,omitempty"`
}

// Poll periods of the stream: the agent log is followed closely, task
// states at least this often besides every daemon event (a comment from
// the CLI publishes none).
const (
	logPoll   = 400 * time.Millisecond
	statePoll = 2 * time.Second
)

// events is the Server-Sent Events stream a page follows. With ?task=ID
// it follows one task (its state, and its agent log from ?offset=N);
// without, every task whose state moves. Daemon events (progress, retry,
// reconcile actions, accept phases, heartbeats) trigger a fresh look;
// polls cover the changes nobody announces.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		fail(w, http.StatusInternalServerError, "this server cannot stream")
		return
	}
	q := r.URL.Query()
	taskID := ""
	if t := q.Get("task"); t != "" {
		id, err := s.Store.Resolve(t)
		if err != nil {
			fail(w, http.StatusNotFound, err.Error())
			return
		}
		taskID = id
	}
	offset, _ := strconv.ParseInt(q.Get("offset"), 10, 64)
	// A list page names the tasks it shows, so the stream decodes those
	// and not the whole repository.
	var shown map[string]bool
	if q.Has("ids") {
		shown = map[string]bool{}
		for _, id := range strings.SplitN(q.Get("ids"), ",", 1001) {
			if task.ValidID(id) {
				shown[id] = true
			}
		}
	}
	var logDir proto.Dir
	if taskID != "" {
		logDir = proto.ForTask(s.LazyDir, taskID)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	ctx := r.Context()
	var evs <-chan events.Event
	if s.Events != nil {
		evs = s.Events(ctx)
	}
	send := func(event string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return true
		}
		b = quote.BidiJSON(b) // as render does for a page
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	// The browser reconnects by itself after this long if the daemon
	// restarts.
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil {
		return
	}
	flusher.Flush()
	seen := map[string]taskState{}
	look := func(first bool) bool {
		states := s.states(taskID, first, seen, shown)
		var changed []taskState
		for _, st := range states {
			if seen[st.ID] != st {
				seen[st.ID] = st
				changed = append(changed, st)
			}
		}
		if len(changed) == 0 {
			return true
		}
		return send("tasks", changed)
	}
	if !look(true) {
		return
	}
	tick := time.NewTicker(logPoll)
	defer tick.Stop()
	lastLook := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-evs:
			if ev.Phase != nil && (taskID == "" || ev.Phase.TaskID == taskID) {
				p := ev.Phase
				if !send("phase", phaseState{ID: p.TaskID, Op: p.Op, Step: p.Step, Of: p.Of, Label: agent.Plain(p.Label, 300)}) {
					return
				}
			}
			if !look(false) {
				return
			}
			lastLook = time.Now()
		case <-tick.C:
			if logDir != "" {
				var entries []LogEntry
				entries, offset = readLogFrom(logDir, offset)
				if len(entries) > 0 && !send("log", map[string]any{"offset": offset, "entries": entries}) {
					return
				}
			}
			if time.Since(lastLook) >= statePoll {
				if !look(false) {
					return
				}
				lastLook = time.Now()
			}
		}
	}
}

// states reads the live state of one task, or of the tasks a list page
// shows (shown; nil for all): on the first look those, later those whose
// ref moved or that work (a substate lives outside the ref). A task the
// page does not show is reported once, bare, when its ref moves, so the
// page can say the list changed. A look at 10,000 tasks thus decodes only
// the few that matter.
func (s *Server) states(taskID string, first bool, seen map[string]taskState, shown map[string]bool) []taskState {
	if taskID != "" {
		sn, err := s.Store.Load(taskID)
		if err != nil {
			return nil
		}
		sum := task.NewSummary(&sn.Task)
		return []taskState{s.state(&sum, sn.Commit.String())}
	}
	entries, err := s.recentList()
	if err != nil {
		return nil
	}
	var out []taskState
	for i := range entries {
		e := &entries[i]
		if e.Err != nil {
			continue
		}
		head := e.Commit.String()
		old, known := seen[e.ID]
		onPage := shown == nil || shown[e.ID]
		switch {
		case !onPage:
			if first || (known && old.Head == head) {
				seen[e.ID] = taskState{ID: e.ID, Head: head}
				continue
			}
			out = append(out, taskState{ID: e.ID, Status: e.Status, Category: e.Status.Category(), Head: head})
			continue
		case first && shown == nil && e.Status.IsTerminal():
			seen[e.ID] = taskState{ID: e.ID, Status: e.Status, Head: head}
			continue
		case !first && e.Status != machine.Working && known && old.Head == head:
			continue
		}
		sum, err := e.Summary()
		if err != nil {
			continue
		}
		out = append(out, s.state(sum, head))
	}
	return out
}

func (s *Server) state(sum *task.Summary, head string) taskState {
	st := taskState{ID: sum.ID, Status: sum.Status, Category: sum.Status.Category(), Live: s.Marks.Substate(sum), Turns: sum.Turns, Head: head}
	st.Progress = s.progress(sum)
	return st
}

// progress is a working task's latest agent line from its live
// supervisor's status.json; empty otherwise.
func (s *Server) progress(sum *task.Summary) string {
	if sum.Status != machine.Working {
		return ""
	}
	var st proto.Status
	if proto.ForTask(s.LazyDir, sum.ID).Read(proto.StatusFile, &st) != nil || st.TaskID != sum.ID {
		return ""
	}
	return agent.Plain(st.Progress, 200)
}
