package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pickAgent is an exec agent whose attempts differ: attempt 1 is the
// adversary (it rewrites the gate in its branch to `true` and commits the
// file the target's gate refuses), attempt 2 passes with a five-line
// change, attempt 3 passes with a one-line change.
func pickAgent(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pick-agent")
	body := `#!/bin/sh
name=$(basename "$PWD")
case "$name" in
*-a1) echo true > .lazy/gate; echo bad > FAIL; git add .lazy/gate FAIL ;;
*-a2) printf '1\n2\n3\n4\n5\n' > "$name.txt"; git add "$name.txt" ;;
*) echo one > "$name.txt"; git add "$name.txt" ;;
esac
git commit -q -m "work of $name" && echo "committed"
`
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

type pickShow struct {
	groupShow
	Pick *struct {
		DecidedAt string `json:"decided_at"`
		Proposed  int    `json:"proposed"`
		Why       string `json:"why"`
		Landed    string `json:"landed"`
		Gated     []struct {
			Attempt int    `json:"attempt"`
			State   string `json:"state"`
		} `json:"gated"`
	} `json:"attempts_pick"`
	PickLine string `json:"attempts_pick_line"`
}

// waitPick polls lazy show --json until the daemon made group's pick
// (and, when landed, until the landing is recorded).
func (r *runner) waitPick(group string, landed bool) pickShow {
	r.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var s pickShow
		if err := json.Unmarshal([]byte(r.ok("show", "--json", group)), &s); err != nil {
			r.t.Fatal(err)
		}
		if s.Pick != nil && s.Pick.DecidedAt != "" && (!landed || s.Pick.Landed != "") {
			return s
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the daemon made no pick for %s:\n%s", group, r.ok("show", group))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAttemptsPickedByTheGate: lazy start --attempts 3 --pick gate with
// the daemon: each attempt is gated unattended on the tree it would land
// by the target's committed .lazy/gate (attempt 1 rewrote its own copy to
// `true` and still fails), and the smaller of the two passing changes
// is proposed (the exec agent reports no cost, so cost ties), with the
// words in lazy show and one pick item in lazy inbox; with --land the
// proposal lands on main and the others are closed with the reason.
// Notifications agree with the inbox: no attempt's park is told, the
// pick is one event for the group naming the proposal and its command,
// and a pick that lands by itself is told only as what finished.
func TestAttemptsPickedByTheGate(t *testing.T) {
	r := newRepo(t)
	t.Cleanup(func() { killTurns(r) })
	if err := os.MkdirAll(filepath.Join(r.dir, ".lazy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, ".lazy", "gate"), []byte("test ! -e FAIL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("add", ".lazy/gate")
	r.git("commit", "-q", "-m", "the gate")
	agent := pickAgent(t)
	events := filepath.Join(t.TempDir(), "events")
	r.git("config", "--add", "lazy.notify", "cmd:cat >> "+events)
	hookRuns := filepath.Join(t.TempDir(), "hook-runs")
	r.git("config", "lazy.notify.command", `printf '%s\n' "$LAZY_TASK_SLUG" >> `+hookRuns)
	r.ok("daemon", "--ensure")
	eventually(t, "the notifications' baseline", func() bool {
		_, err := os.Stat(filepath.Join(r.dir, ".git", "lazy", "notify", "state.json"))
		return err == nil
	})

	if res := r.run(nil, "start", "x", "--pick", "gate"); res.Code == 0 || !strings.Contains(res.Stderr, "give --attempts N with them") {
		t.Fatalf("--pick without --attempts: %s", res)
	}
	g := r.create("Fix the login race", "--slug", "fix-login")
	out := r.ok("start", g.Slug, "--attempts", "3", "--pick", "gate", "--command", agent)
	if !strings.Contains(out, "the best is proposed") {
		t.Fatalf("start said:\n%s", out)
	}
	s := r.waitPick(g.Slug, false)
	want := "attempt 3: gate passed, cost unknown, 1 line; attempt 2 changed more (5 lines); attempt 1 failed the gate"
	if s.Pick.Proposed != 3 || s.Pick.Why != want || len(s.Pick.Gated) != 3 || s.Pick.Gated[0].State != "failed" {
		t.Fatalf("pick %+v", s.Pick)
	}
	text := r.ok("show", g.Slug)
	for _, w := range []string{"picked by the gate: " + want + "; lazy accept fix-login --attempt 3 lands it", "blocked (proposed)", "failed"} {
		if !strings.Contains(text, w) {
			t.Fatalf("show lacks %q:\n%s", w, text)
		}
	}
	// The inbox has one decision for the group, not three reviews.
	var inbox struct {
		Items []struct{ Kind, Slug, Command, Proposed string } `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.ok("inbox", "--json")), &inbox); err != nil {
		t.Fatal(err)
	}
	if len(inbox.Items) != 1 || inbox.Items[0].Kind != "pick" || inbox.Items[0].Slug != "fix-login" ||
		inbox.Items[0].Command != "lazy accept fix-login-a3" || inbox.Items[0].Proposed != "fix-login-a3" {
		t.Fatalf("lazy inbox --json lists %+v, want the group's one pick item accepting attempt 3", inbox.Items)
	}
	if strings.Contains(r.git("log", "--format=%s", "main"), "fix-login") {
		t.Fatal("something landed without --land")
	}
	eventually(t, "the pick's event", func() bool { return countOf(sentEvents(t, events), "fix-login", "pick") == 1 })
	for _, ev := range sentEvents(t, events) {
		if strings.HasPrefix(ev.Slug, "fix-login-a") {
			t.Fatalf("an attempt picked by the gate was told on its own: %+v", ev)
		}
	}
	if runs, _ := os.ReadFile(hookRuns); strings.Contains(string(runs), "fix-login-a") {
		t.Fatalf("lazy.notify.command ran for an attempt picked by the gate:\n%s", runs)
	}
	b, _ := os.ReadFile(events)
	if !strings.Contains(string(b), `"proposed":"fix-login-a3","command":"lazy accept fix-login-a3"`) {
		t.Fatalf("the pick's event does not name the proposal and its command:\n%s", b)
	}

	g2 := r.create("Fix the logout race", "--slug", "fix-logout")
	r.ok("start", g2.Slug, "--attempts", "3", "--pick", "gate", "--land", "--command", agent)
	s2 := r.waitPick(g2.Slug, true)
	if s2.Pick.Proposed != 3 || s2.Pick.Landed != "attempt 3 landed" {
		t.Fatalf("pick with --land %+v", s2.Pick)
	}
	if got := r.git("show", "main:fix-logout-a3.txt"); strings.TrimSpace(got) != "one" {
		t.Fatalf("main has %q", got)
	}
	if _, err := r.gitErr("show", "main:FAIL"); err == nil {
		t.Fatal("the adversary's FAIL landed")
	}
	eventually(t, "the landing's event", func() bool { return countOf(sentEvents(t, events), "fix-logout-a3", "finished") == 1 })
	for _, ev := range sentEvents(t, events) {
		if strings.HasPrefix(ev.Slug, "fix-logout") && ev.Kind != "finished" || countOf(sentEvents(t, events), "fix-login", "pick") != 1 {
			t.Fatalf("a pick that landed by itself was told as %+v", ev)
		}
	}
	grp := r.showGroup(g2.Slug)
	if grp.Status != "complete" || grp.Chosen != 3 {
		t.Fatalf("group %+v", grp)
	}
	for _, at := range grp.Attempts[:2] {
		if at.Status != "abandoned" || !strings.HasPrefix(at.Reason, "attempt 3 was chosen by the gate (attempt 3: gate passed") {
			t.Fatalf("attempt %d: %s %q", at.K, at.Status, at.Reason)
		}
	}
}
