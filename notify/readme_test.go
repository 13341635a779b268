package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// readmeExamples are the example payloads of the README's Notifications
// section: the indented block after the line that introduces them, one
// JSON object per kind.
func readmeExamples(t *testing.T) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const intro = "one example per kind:"
	s := string(b)
	i := strings.Index(s, "### Notifications")
	if i < 0 {
		t.Fatal("README has no Notifications section")
	}
	s = s[i:]
	j := strings.Index(s, intro)
	if j < 0 {
		t.Fatalf("README's Notifications section has no line ending %q", intro)
	}
	var block strings.Builder
	started := false
	for _, line := range strings.Split(s[j+len(intro):], "\n")[1:] {
		switch {
		case strings.HasPrefix(line, "    "):
			started = true
			block.WriteString(line + "\n")
		case line == "" && !started:
		case line == "":
			block.WriteString("\n")
		default:
			goto done
		}
	}
done:
	dec := json.NewDecoder(strings.NewReader(block.String()))
	dec.UseNumber()
	var out []map[string]any
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("README's example payloads do not parse: %v\n%s", err, block.String())
		}
		out = append(out, m)
	}
	return out
}

// emitted is what a json: webhook receives for every kind of event, each
// made the way the daemon makes it: a task's change through Pass (after
// the baseline), the rate limit's collapse through Deliver, and lazy
// notify test's sample.
func emitted(t *testing.T) map[Kind][]byte {
	t.Helper()
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	target, err := ParseTarget("json:" + srv.URL + "/hook")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	base := Observation{TaskID: "3f2a9c1e0b7d4a65", Slug: "fix-login", Title: "Fix the login race", Sessions: 1}
	at := func(st machine.Status, turns, seq int, kind string) Observation {
		o := base
		o.Status, o.Turns, o.Turn, o.TurnKind = st, turns, seq, kind
		return o
	}
	gate := at(machine.Blocked, 2, 1, "start")
	gate.Gate = &task.GateSummary{State: task.GateFailed, Run: "g1", Failed: "go test ./..."}
	held := at(machine.Blocked, 2, 1, "start")
	hold := &task.Hold{Kind: task.HoldBudget, Scope: "task", LimitUSD: 5, SpentUSD: 5.1}
	held.HoldKind, held.HoldReason = hold.Kind, hold.String()
	interrupted := at(machine.Interrupted, 6, 5, "resume")
	interrupted.Interruptions, interrupted.InterruptReason = 3, "the agent exited with code 1"
	asking := at(machine.Working, 3, 3, "ask")
	asking.Substate = Answering
	finished := at(machine.Complete, 4, 3, "unblock")
	finished.Outcome = task.OutcomeAccepted
	pick := base
	pick.Slug, pick.TaskID, pick.Status, pick.Sessions = "fix-login", "3f2a9c1e0b7d4a65", machine.Backlog, 0
	pick.Pick = &PickNotice{DecidedAt: now, Attempt: 2, Of: 3, Proposed: "fix-login-2", Command: "lazy accept fix-login-2"}
	scenarios := map[Kind]Observation{
		KindBlocked:     at(machine.Blocked, 2, 1, "start"),
		KindPick:        pick,
		KindConflict:    at(machine.Conflict, 2, 1, "start"),
		KindGateFailed:  gate,
		KindBudget:      held,
		KindInterrupted: interrupted,
		KindAsked:       asking,
		KindAnswered:    at(machine.Blocked, 4, 3, "ask"),
		KindFinished:    finished,
	}
	out := map[Kind][]byte{}
	take := func(kind Kind) {
		t.Helper()
		got := h.got()
		if len(got) != 1 {
			t.Fatalf("%s: the webhook received %d requests", kind, len(got))
		}
		out[kind] = []byte(got[0].body)
		h.mu.Lock()
		h.reqs = nil
		h.mu.Unlock()
	}
	for kind, o := range scenarios {
		w := newWorld()
		w.set(at(machine.Working, 1, 1, "start"), now)
		n := &Notifier{Dir: filepath.Join(t.TempDir(), "notify"), Repo: "myapp", Now: clock}
		policy := Policy{BreakerAt: 3}
		if evs, err := n.Pass(w.entries(), policy, nil, w.load); err != nil || len(evs) != 0 {
			t.Fatalf("%s: baseline %v %v", kind, evs, err)
		}
		w.set(o, now)
		evs, err := n.Pass(w.entries(), policy, nil, w.load)
		if err != nil || len(evs) != 1 || evs[0].Kind != kind {
			t.Fatalf("%s: the scenario announced %+v (%v)", kind, evs, err)
		}
		n.Deliver(context.Background(), []Target{target}, 10, evs)
		take(kind)
	}
	// more: one event a minute, three at once; the minute after, the two
	// held back arrive as one.
	n := &Notifier{Dir: filepath.Join(t.TempDir(), "notify"), Repo: "myapp", Now: clock}
	var three []Event
	for _, slug := range []string{"fix-login", "cover-logout", "release-notes"} {
		ev := Event{Kind: KindBlocked, Slug: slug, Status: machine.Blocked, Repo: "myapp", Time: Stamp(now)}
		three = append(three, ev)
	}
	three[2].Kind, three[2].Status, three[2].Outcome = KindFinished, machine.Complete, task.OutcomeAccepted
	n.Deliver(context.Background(), []Target{target}, 1, three)
	h.mu.Lock()
	h.reqs = nil
	h.mu.Unlock()
	now = now.Add(61 * time.Second)
	n.Deliver(context.Background(), []Target{target}, 1, nil)
	take(KindMore)
	now = now.Add(-61 * time.Second)
	Test(context.Background(), []Target{target}, "myapp", now)
	take(KindTest)
	return out
}

// TestREADMEListsEveryKindAsEmitted: the README's Notifications section
// has one example payload per kind of event, and each is exactly what a
// json: webhook (or a cmd: target's stdin) receives for it, so the
// documentation cannot drift from the code.
func TestREADMEListsEveryKindAsEmitted(t *testing.T) {
	got := emitted(t)
	if os.Getenv("LAZY_PRINT_NOTIFY_EXAMPLES") != "" {
		for _, k := range AllKinds() {
			t.Logf("%s", got[k])
		}
	}
	examples := readmeExamples(t)
	seen := map[Kind]bool{}
	for _, ex := range examples {
		kind := Kind(ex["kind"].(string))
		if seen[kind] {
			t.Errorf("README shows kind %s twice", kind)
		}
		seen[kind] = true
		b, ok := got[kind]
		if !ok {
			t.Errorf("README shows kind %q, which lazy never sends", kind)
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var want map[string]any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ex, want) {
			t.Errorf("README's %s example:\n%v\nlazy sends:\n%s", kind, ex, b)
		}
	}
	for _, k := range AllKinds() {
		if !seen[k] {
			t.Errorf("README shows no example of kind %s; lazy sends:\n%s", k, got[k])
		}
	}
}
