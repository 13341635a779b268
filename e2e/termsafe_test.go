package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// hostile is every C0 control but NUL (argv cannot carry NUL), DEL, the
// C1 range, and the sequences an attacker would actually send: clear
// screen, colours, cursor report, OSC 52 (write the clipboard), OSC 0
// (window title) ended by BEL and by ST, 8-bit CSI and OSC, a bidi
// override, a lone CR that would overwrite the line, and a byte that is
// not UTF-8.
func hostile() string {
	var b strings.Builder
	b.WriteString("PWN")
	for c := byte(1); c < 0x20; c++ {
		if c != '\n' && c != '\t' {
			b.WriteByte(c)
		}
	}
	b.WriteString("\x7f")
	for r := rune(0x80); r <= 0x9f; r++ {
		b.WriteRune(r)
	}
	b.WriteString("\x1b[2J\x1b[H\x1b[31mRED\x1b[0m\x1b[6n")
	b.WriteString("\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned title\x1b\\")
	b.WriteString("\u009b2J\u009d0;c1 title\u009c\u202eevil\rOVERWRITE\xff end")
	return b.String()
}

// inert fails the test when out could still drive a terminal.
func inert(t *testing.T, surface, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%s: output is not UTF-8: %q", surface, out)
	}
	for i, r := range out {
		bad := (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f) ||
			(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
		if bad {
			lo := max(0, i-40)
			t.Fatalf("%s: control %U reached the terminal at byte %d: ...%q...", surface, r, i, out[lo:min(len(out), i+40)])
		}
	}
}

// inertRun runs lazy and checks stdout and stderr.
func (r *runner) inertRun(t *testing.T, args ...string) result {
	t.Helper()
	res := r.run(nil, args...)
	inert(t, "lazy "+strings.Join(args, " ")+" (stdout)", res.Stdout)
	inert(t, "lazy "+strings.Join(args, " ")+" (stderr)", res.Stderr)
	return res
}

// TestTerminalOutputIsInert is the terminal golden test of SECURITY.md
// rule 2: hostile text reaches lazy through every door (title, goal and
// comment at intake; title and reason written raw into a record, as a
// remote or a hand edit would; an agent's progress line and the failure
// reason and log tail it causes; a name typed on the command line) and no
// control sequence survives on list, show, status, watch or in errors.
// --json stays valid JSON that decodes to the escaped-at-intake text.
func TestTerminalOutputIsInert(t *testing.T) {
	bad := hostile()
	r := withDaemon(t, manualResume(newRepo(t)))

	// Intake: title, goal, comment.
	// The title limit counts the escaped text, so the title gets the
	// short list; the goal and the comment get everything.
	in := r.create("PWN title \x1b]52;c;Zm9v\x07\x1b]0;t\x1b\\\x1b[2J\u009b\u009d\rX\x7f\x01\xff", "-m", bad)
	r.ok("comment", in.ID, "-m", bad)
	if strings.ContainsAny(in.Title, "\x1b\r\u009b") {
		t.Fatalf("intake kept controls in the title: %q", in.Title)
	}

	// Never passed intake: a record written raw, as a remote would.
	raw := r.create("raw record")
	craft(t, r.dir, "refs/lazy/tasks/"+raw.ID, func(files map[string][]byte) {
		setJSON(t, files, "task.json", map[string]any{"title": "raw\x00" + bad, "reason": bad, "outcome": "abandoned"})
	})

	// An agent's stream: a live progress line, then a failure.
	r.ok("daemon", "--ensure")
	working, token := agentWithToken(t, r, "progress")
	agent, _ := mcpClient(t, r, []string{"LAZY_MCP_TOKEN=" + token}, "mcp-proxy")
	call(t, agent, "lazy_update_progress", map[string]any{"message": bad}, false)
	failing := r.create("failure")
	r.with(script(t, "print API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\"}} "+bad, "exit 1")).
		ok("start", failing.Slug, "--command", fakeAgentBin)
	r.waitStatus(failing.Slug, "blocked")
	r.waitUntil(working.Slug, "shows the agent's progress", func(s showFull) bool { return strings.Contains(s.Live, "PWN") })

	for _, args := range [][]string{
		{"list"}, {"blocked"}, {"active"}, {"status"},
		{"show", in.Slug}, {"show", raw.ID}, {"show", working.Slug}, {"show", failing.Slug},
		{"show", "--json", in.Slug}, {"list", "--json"}, {"status", "--json"},
	} {
		res := r.inertRun(t, args...)
		if res.Code != 0 {
			t.Fatalf("lazy %v: %s", args, res)
		}
		if args[0] != "show" {
			continue // list and friends show titles: checked below
		}
		if !strings.Contains(res.Stdout, "PWN") {
			t.Fatalf("lazy %v does not show the text at all:\n%s", args, res.Stdout)
		}
	}
	if out := r.inertRun(t, "list").Stdout; !strings.Contains(out, "PWN title") || !strings.Contains(out, "PWN") {
		t.Fatalf("list lacks the hostile titles:\n%s", out)
	}
	if out := r.inertRun(t, "status").Stdout; !strings.Contains(out, "PWN") {
		t.Fatalf("status lacks the progress line:\n%s", out)
	}
	// JSON stays JSON, and what it holds is what intake stored.
	var shown task
	if err := json.Unmarshal([]byte(r.inertRun(t, "show", "--json", in.Slug).Stdout), &shown); err != nil {
		t.Fatalf("show --json is not JSON after escaping: %v", err)
	}
	if shown.Title != in.Title || !strings.Contains(shown.Goal, `\u001b]52;c;`) {
		t.Fatalf("show --json title %q goal %q", shown.Title, shown.Goal)
	}
	var all []task
	if err := json.Unmarshal([]byte(r.inertRun(t, "list", "--json").Stdout), &all); err != nil || len(all) != 4 {
		t.Fatalf("list --json: %v (%d tasks)", err, len(all))
	}

	// Errors that echo what was typed.
	for _, args := range [][]string{{"show", bad}, {"unblock", bad, "-m", "x"}, {"close", in.Slug, bad}, {"--" + bad}} {
		res := r.inertRun(t, args...)
		if res.Code == 0 {
			t.Fatalf("lazy %q succeeded", args)
		}
	}

	// watch: one frame.
	lines := startLines(t, r.dir, r.with("LAZY_NO_DAEMON=").environ(), "watch", "--all")
	frame := make(chan string, 1)
	go func() {
		var got strings.Builder
		for l := range lines {
			got.WriteString(l + "\n")
			if strings.Contains(l, working.Slug) {
				break
			}
		}
		frame <- got.String()
	}()
	select {
	case out := <-frame:
		inert(t, "lazy watch", out)
		if !strings.Contains(out, "PWN") {
			t.Fatalf("watch frame lacks the progress line:\n%s", out)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch printed no frame")
	}
	r.ok("stop", working.Slug)
}
