package notify

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/lazyorch/lazy/internal/redact/redacttest"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// hostileTitle is a task title an agent wrote over MCP to forge lines of
// a notification and reorder what a reader sees.
const hostileTitle = "Fix it\n## Next step\nlazy show other-task\r\u202eevil\u202c <a href=\"https://evil.example\">click</a> \u200b"

// TestNotificationsCarryNoSecretAndNoForgedLine: a failed gate whose
// command holds a secret of every kind and the URL of a configured
// target, on a task whose title forges lines, reaches each kind of
// target (command, ntfy, JSON webhook, desktop) without any secret, with
// the title on its one line and no raw bidi or markup.
func TestNotificationsCarryNoSecretAndNoForgedLine(t *testing.T) {
	for _, k := range redacttest.Kinds() {
		t.Run(k.Kind, func(t *testing.T) {
			h := &hook{}
			srv := httptest.NewServer(h)
			defer srv.Close()
			dir := t.TempDir()
			bin := t.TempDir()
			script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + filepath.Join(dir, "desktop") + "\n"
			if err := os.WriteFile(filepath.Join(bin, "notify-send"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", bin+":/usr/bin:/bin")
			cfg := fakeConfig{KeyTargets: {
				"cmd:cat > " + filepath.Join(dir, "cmd.json"),
				srv.URL + "/ntfy-topic-5ecret",
				"json:" + srv.URL + redacttest.HookPath + "?" + redacttest.HookQuery,
				"json:" + redacttest.HookTarget, // configured, never reached: its secret still never leaves
				"desktop",
			}}
			s := Load(cfg, dir)
			if len(s.Problems) != 0 {
				t.Fatal(s.Problems)
			}
			reached := s.Targets[:3]
			reached = append(reached, s.Targets[4])
			failed := "AWS=" + k.Text + " curl -d @- " + redacttest.HookTarget + " " + srv.URL + "/ntfy-topic-5ecret " + k.Text
			o := Observation{TaskID: "t1", Slug: "fix-it", Title: hostileTitle + " " + k.Text, Status: machine.Blocked, Sessions: 1, Turns: 2,
				Gate: &task.GateSummary{State: task.GateFailed, Run: "r1", Failed: failed}}
			ev, _ := Derive(nil, o, Policy{Secrets: s.Secrets})
			if ev == nil || ev.Kind != KindGateFailed {
				t.Fatalf("derived %+v", ev)
			}
			n := &Notifier{Dir: t.TempDir(), Repo: "r"}
			for _, r := range n.Deliver(context.Background(), reached, 10, []Event{*ev}) {
				if !r.OK {
					t.Fatalf("%s: %s", r.Target, r.Error)
				}
			}
			cmdJSON, err := os.ReadFile(filepath.Join(dir, "cmd.json"))
			if err != nil {
				t.Fatal(err)
			}
			desktop, err := os.ReadFile(filepath.Join(dir, "desktop"))
			if err != nil {
				t.Fatal(err)
			}
			reqs := h.got()
			if len(reqs) != 2 {
				t.Fatalf("%d webhook requests", len(reqs))
			}
			sent := map[string]string{"cmd": string(cmdJSON), "desktop": string(desktop)}
			for _, r := range reqs {
				if strings.HasPrefix(r.path, "/ntfy") {
					sent["ntfy"] = r.header.Get("Title") + "\n" + r.body
					if lines := strings.Split(r.body, "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "the merge gate failed: ") || !strings.HasPrefix(lines[1], "Fix it") || lines[2] != "lazy show fix-it" {
						t.Fatalf("the ntfy body is not reason, title and command, one line each: %q", r.body)
					}
				} else {
					sent["json"] = r.body
					var got Event
					if err := json.Unmarshal([]byte(r.body), &got); err != nil || strings.Contains(got.Title, "\n") || strings.Contains(got.Reason, "\n") {
						t.Fatalf("the JSON event %q (%v)", r.body, err)
					}
				}
			}
			log, _ := os.ReadFile(filepath.Join(n.Dir, LogFile))
			sent["log"] = string(log)
			// The desktop body is its arguments after the headline: reason,
			// title and command, one line each.
			if args := strings.Split(strings.TrimSuffix(string(desktop), "\n"), "\n"); len(args) != 7 || !strings.HasPrefix(args[5], "Fix it") {
				t.Fatalf("notify-send got %q", args)
			}
			for where, text := range sent {
				for _, secret := range append(redacttest.HookSecrets(), k.Secret, "5ecret") {
					if strings.Contains(text, secret) {
						t.Errorf("%s carries %q:\n%s", where, secret, text)
					}
				}
				for _, r := range text {
					if unicode.Is(unicode.Bidi_Control, r) || r == '\r' || r == '\u200b' {
						t.Errorf("%s carries %U raw:\n%q", where, r, text)
					}
				}
			}
			if strings.Contains(sent["desktop"], "<a href") || !strings.Contains(sent["desktop"], "&lt;a href") {
				t.Errorf("the desktop body's markup is live: %q", sent["desktop"])
			}
			if !strings.Contains(sent["json"], redacttest.HookHost+"/…") {
				t.Errorf("the reason does not say which host it named: %s", sent["json"])
			}
		})
	}
}
