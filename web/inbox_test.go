package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// TestInboxPageListsWhatWaitsWithItsCommand: the list page links the
// inbox; the inbox lists a parked task, oldest first, with where it
// waits and the command that answers it, and escapes what a record
// pulled from elsewhere says (a title or a host with markup).
func TestInboxPageListsWhatWaitsWithItsCommand(t *testing.T) {
	s, st, _ := newServer(t)
	h := s.Handler()
	if body := page(t, h, "/"); !strings.Contains(body, `href="/inbox"`) {
		t.Fatal("the list page does not link the inbox")
	}
	if body := page(t, h, "/inbox"); !strings.Contains(body, "Nothing waits on a human.") {
		t.Fatalf("an empty inbox:\n%s", body)
	}
	create(t, st, "Not started", "")
	id := create(t, st, "Parked <script>alert(1)</script>", "")
	for _, status := range []machine.Status{machine.Working, machine.Blocked} {
		if _, _, err := st.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
			sn.Task.Status = status
			if status == machine.Working {
				sn.Task.Sessions, sn.Task.Host = 1, "far-away"
				sn.Session = &task.Session{ID: "5e55" + id[4:], Number: 1, Host: "far-away", Turn: 1, TurnKind: "start", StartedAt: time.Now().UTC()}
			}
			return &task.Op{Name: "test", Actor: machine.System}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	body := page(t, h, "/inbox")
	for _, want := range []string{`<a href="/task/` + id + `">parked-script-alert-1-script</a>`, "far-away", "<code>lazy accept parked-script-alert-1-script</code>",
		"&lt;script&gt;alert(1)&lt;/script&gt;", "<td>blocked</td>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the inbox page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "not-started") {
		t.Errorf("the inbox page runs a title's markup or lists a backlog task:\n%s", body)
	}
}

// TestInboxPageShowsAPickAsOneRow: an attempt group whose pick by the
// gate was made is one row for the group, answered by accepting the
// proposed attempt, with the ranking's markup escaped; its blocked
// attempts have no rows of their own.
func TestInboxPageShowsAPickAsOneRow(t *testing.T) {
	s, st, _ := newServer(t)
	ctx := context.Background()
	gid := create(t, st, "Fix the login race", "")
	var ids []string
	for k := 1; k <= 2; k++ {
		sn, err := st.Create(task.CreateSpec{Title: "Fix the login race", Slug: fmt.Sprintf("fix-login-a%d", k), AttemptOf: gid, Attempt: k, Actor: machine.Human})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sn.Task.ID)
		for _, status := range []machine.Status{machine.Working, machine.Blocked} {
			if _, _, err := st.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
				s.Task.Status = status
				if status == machine.Working {
					s.Task.Sessions = 1
					s.Session = &task.Session{ID: "5e55" + s.Task.ID[4:], Number: 1, Host: "far-away", Turn: 1, TurnKind: "start", StartedAt: time.Now().UTC()}
				}
				return &task.Op{Name: "test", Actor: machine.System}, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, _, err := st.Update(ctx, gid, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Attempts = ids
		s.Task.Pick = &task.AttemptPick{Rule: task.PickGate, DecidedAt: time.Now().UTC(), Proposed: 2, Why: "attempt 2: gate passed <img src=x onerror=alert(1)>"}
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	body := page(t, s.Handler(), "/inbox")
	for _, want := range []string{`<a href="/task/` + gid + `">fix-the-login-race</a>`, "<td>pick</td>", "<code>lazy accept fix-login-a2</code>",
		"the gate proposes attempt 2 of 2", "&lt;img src=x onerror=alert(1)&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("the inbox page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<img") || strings.Contains(body, `">fix-login-a1</a>`) || strings.Contains(body, `">fix-login-a2</a>`) {
		t.Errorf("the inbox page runs the ranking's markup or lists the attempts on their own:\n%s", body)
	}
}
