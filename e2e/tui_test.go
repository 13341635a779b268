package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tmuxWatch runs `lazy watch` in a detached tmux pane of cols x rows on a
// server of its own, and returns a capture function and send-keys.
func tmuxWatch(t *testing.T, r *runner, cols, rows int) (capture func() string, keys func(...string), alive func() bool) {
	t.Helper()
	full(t) // a real client: never in the fast lane
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("LAZY_REQUIRE_TMUX") != "" {
			t.Fatal("tmux is not installed; the TUI tests need it (.ci/run installs it)")
		}
		t.Skip("tmux is not installed")
	}
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for _, kv := range r.environ() {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || strings.ContainsAny(k, "=-. ") || strings.HasPrefix(k, "TMUX") {
			continue
		}
		fmt.Fprintf(&b, "export %s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
	}
	stderr := filepath.Join(t.TempDir(), "watch.stderr")
	fmt.Fprintf(&b, "export TERM=xterm-256color\ncd '%s' && exec '%s' watch 2>>'%s'\n", r.dir, lazyBin, stderr)
	wrapper := filepath.Join(t.TempDir(), "watch.sh")
	if err := os.WriteFile(wrapper, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := tmux("new-session", "-d", "-s", "w", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), wrapper); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })
	capture = func() string {
		out, err := tmux("capture-pane", "-p", "-t", "w")
		if err != nil { // the pane is gone: say what lazy watch said last
			b, _ := os.ReadFile(stderr)
			return out + "\nlazy watch's stderr:\n" + string(b)
		}
		return out
	}
	keys = func(k ...string) {
		t.Helper()
		if out, err := tmux(append([]string{"send-keys", "-t", "w"}, k...)...); err != nil {
			t.Fatalf("send-keys %v: %v %s", k, err, out)
		}
	}
	alive = func() bool {
		_, err := tmux("has-session", "-t", "w")
		return err == nil
	}
	return capture, keys, alive
}

// screenHas polls the pane until it shows every want.
func screenHas(t *testing.T, capture func() string, want ...string) string {
	t.Helper()
	var last string
	ok := func() bool {
		last = capture()
		for _, w := range want {
			if !strings.Contains(last, w) {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(45 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %q; it shows:\n%s", want, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return last
}

func TestWatchTUINavigatesPreviewsAcceptsAndQuits(t *testing.T) {
	r := newRepo(t)
	done := workedTask(t, r, "ready for review", "ready.txt ready")
	goAhead := filepath.Join(t.TempDir(), "go")
	running := r.with(script(t, "print first line of output", "wait-file "+goAhead, "print second line of output", "hang"))
	live := running.create("still running")
	running.ok("start", live.Slug, "--command", fakeAgentBin)

	capture, keys, alive := tmuxWatch(t, r, 120, 30)
	// The task that needs a human leads and is selected; its output shows.
	screen := screenHas(t, capture, "▸ "+done.Slug, live.Slug, "did ready for review", "1 need you")
	lines := strings.Split(screen, "\n")
	if len(lines) < 29 || !strings.Contains(lines[len(lines)-2], "q quit") && !strings.Contains(lines[len(lines)-1], "q quit") {
		t.Fatalf("the key help is not at the bottom:\n%s", screen)
	}
	for _, l := range lines {
		if len([]rune(l)) > 120 {
			t.Fatalf("a line wider than the pane: %q", l)
		}
	}

	// Down: the running task is selected and its live output previewed.
	keys("j")
	screenHas(t, capture, "▸ "+live.Slug, "first line of output")
	if err := os.WriteFile(goAhead, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	screenHas(t, capture, "second line of output")

	// The diff tab of the reviewed task, then accept it from the TUI.
	keys("k", "d")
	screenHas(t, capture, "▸ "+done.Slug, done.Slug+" — diff", "+++ b/ready.txt", "+ready")
	// A accepts after a confirmation: n backs out, y goes ahead.
	keys("A")
	screenHas(t, capture, "Accept "+done.Slug+" (runs the merge gate, then merges)? y/N")
	keys("n")
	screenHas(t, capture, "Not accepted "+done.Slug)
	if s := r.show(done.Slug); s.Status != "blocked" {
		t.Fatalf("after A n in the TUI: %s", s.Status)
	}
	keys("A", "y")
	screenHas(t, capture, "Accepted "+done.Slug+": squash-merged into main")
	if s := r.show(done.Slug); s.Status != "complete" {
		t.Fatalf("after accept in the TUI: %s", s.Status)
	}
	screenHas(t, capture, "0 need you")

	// x stops the running task, which is selected now.
	screenHas(t, capture, "▸ "+live.Slug)
	keys("x")
	screenHas(t, capture, "Stopped "+live.Slug)
	if s := r.show(live.Slug); s.Status != "blocked" {
		t.Fatalf("after x in the TUI: %s", s.Status)
	}

	// Typed keys never echo, and q quits.
	keys("x", "y", "z")
	keys("q")
	eventually(t, "lazy watch to quit on q", func() bool { return !alive() })
}

func TestWatchTUIStacksOnANarrowTerminalAndUnblocksThroughTheEditor(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "narrow view", "n.txt n")
	editor := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nprintf 'also cover logout\\n' > \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	goAhead := filepath.Join(t.TempDir(), "go")
	r = r.with("GIT_EDITOR="+editor, script(t, "print next turn running", "wait-file "+goAhead, "print next turn done"))
	capture, keys, alive := tmuxWatch(t, r, 60, 20)
	screen := screenHas(t, capture, "▸ "+tk.Slug, strings.Repeat("─", 60), "did narrow view")
	for _, l := range strings.Split(screen, "\n") {
		if len([]rune(l)) > 60 {
			t.Fatalf("a line wider than 60 columns: %q", l)
		}
	}
	// e hands the terminal to lazy unblock, which opens the editor; the
	// feedback starts the next turn and the preview follows it.
	keys("e")
	screenHas(t, capture, "next turn running", "0 need you")
	s := r.showFull(tk.Slug)
	if s.Status != "working" || s.TurnList[len(s.TurnList)-1].Content != "also cover logout" {
		t.Fatalf("after e in the TUI: %s, turns %+v", s.Status, s.TurnList)
	}
	if err := os.WriteFile(goAhead, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	screenHas(t, capture, "next turn done", "1 need you")

	// a asks: the question is typed on the bottom line, the answer shows
	// in the status line.
	keys("a")
	screenHas(t, capture, "question for "+tk.Slug)
	keys("-l", "what changed?")
	keys("Enter")
	screenHas(t, capture, tk.Slug+" answered:", "1 need you")
	if s := r.showFull(tk.Slug); s.Status != "blocked" || s.TurnList[len(s.TurnList)-2].Kind != "ask" || s.TurnList[len(s.TurnList)-2].Content != "what changed?" {
		t.Fatalf("after a in the TUI: %s, turns %+v", s.Status, s.TurnList)
	}
	keys("C-c")
	eventually(t, "lazy watch to quit on Ctrl-C", func() bool { return !alive() })
}

// TestWatchTUIActsThroughTheSameOps drives the review loop from the
// TUI alone: create a task, filter to it, start it, read its output
// under a turn rule, unblock it with typed feedback and see the second
// turn, reject another after confirming, and read a refused action's
// whole error. The records, not only the screen, say it happened.
func TestWatchTUIActsThroughTheSameOps(t *testing.T) {
	r := newRepo(t)
	old := workedTask(t, r, "obsolete idea", "o.txt o")
	runs := filepath.Join(t.TempDir(), "runs")
	r = r.with(script(t, "attempt "+runs, "when 1 print first turn output", "when 2 print second turn output"))
	r.git("config", "lazy.agent", "exec")
	r.git("config", "lazy.exec.command", fakeAgentBin)

	capture, keys, alive := tmuxWatch(t, r, 120, 36)
	screenHas(t, capture, "▸ "+old.Slug, "q quit")

	// n: a title, then a goal; the task is created in backlog.
	keys("n")
	screenHas(t, capture, "new task: title: █")
	keys("-l", "fix the login form")
	keys("Enter")
	screenHas(t, capture, "goal for the agent")
	keys("-l", "Make the login form submit.")
	keys("Enter")
	screenHas(t, capture, "Created fix-the-login-form (", "in backlog")
	tk := r.show("fix-the-login-form")
	if tk.Status != "backlog" || tk.Title != "fix the login form" || tk.Goal != "Make the login form submit." {
		t.Fatalf("created from the TUI: %+v", tk)
	}

	// /: only the tasks whose slug, title or label has the text.
	keys("/")
	keys("-l", "login")
	keys("Enter")
	screen := screenHas(t, capture, "▸ "+tk.Slug, "/login", "1 task ·")
	if strings.Contains(screen, old.Slug) {
		t.Fatalf("the filter kept %s:\n%s", old.Slug, screen)
	}

	// r on a task that never ran: the refusal is shown whole, wrapped.
	keys("r", "Enter", "y")
	screenHas(t, capture, "reject "+tk.Slug+": the task never started, so there is no work to reject;", "use lazy close")

	// s starts it with the repository's agent; its output follows, under
	// the rule of its turn.
	keys("s")
	screenHas(t, capture, "Started "+tk.Slug+": working in", "── turn ", "first turn output")
	r.waitStatus(tk.Slug, "blocked")

	// u: feedback typed on the bottom line starts the next turn, whose
	// output shows under a rule of its own.
	keys("u")
	screenHas(t, capture, "feedback for "+tk.Slug+": █")
	keys("-l", "also cover logout")
	keys("Enter")
	screen = screenHas(t, capture, "Unblocked "+tk.Slug+": turn ", "second turn output", "first turn output")
	if n := strings.Count(screen, "── turn "); n < 2 {
		t.Fatalf("%d turn rules in the pane, want 2:\n%s", n, screen)
	}
	s := r.waitStatus(tk.Slug, "blocked")
	if last := s.TurnList[len(s.TurnList)-2]; last.Content != "also cover logout" {
		t.Fatalf("after u in the TUI the turns are %+v", s.TurnList)
	}

	// The filter cleared (ctrl+u), then f cycles to the tasks that need
	// a human: both do.
	keys("/", "C-u", "Enter")
	keys("f")
	screenHas(t, capture, "showing needs me", old.Slug, tk.Slug)

	// r: a reason, then y; N would have backed out.
	keys("/")
	keys("-l", "obsolete")
	keys("Enter")
	screenHas(t, capture, "▸ "+old.Slug)
	keys("r")
	screenHas(t, capture, "reject "+old.Slug+": reason (optional): █")
	keys("-l", "superseded by the login work")
	keys("Enter")
	screenHas(t, capture, "Reject "+old.Slug+"? Its work is not merged. y/N")
	keys("n")
	screenHas(t, capture, "Not rejected "+old.Slug)
	if s := r.show(old.Slug); s.Status != "blocked" {
		t.Fatalf("after r then n: %s", s.Status)
	}
	keys("r")
	keys("-l", "superseded by the login work")
	keys("Enter", "y")
	screenHas(t, capture, "Rejected "+old.Slug+": now abandoned")
	if s := r.show(old.Slug); s.Status != "abandoned" || s.Outcome != "rejected" || s.Reason != "superseded by the login work" {
		t.Fatalf("after r in the TUI: %+v", s)
	}

	keys("q")
	eventually(t, "lazy watch to quit on q", func() bool { return !alive() })
}

// TestDiffSaysWhatTheWorktreeHolds: a task whose agent wrote a file and
// has not committed it shows that work, labelled, in watch's diff pane
// and in lazy diff; a task that changed nothing says so in both, and its
// lazy diff --json is the same shape with empty lists.
func TestDiffSaysWhatTheWorktreeHolds(t *testing.T) {
	r := newRepo(t)
	t.Cleanup(func() { killTurns(r) })
	wip := r.with(script(t, "write wip.txt work in progress", "print wrote wip.txt", "hang"))
	wt := wip.create("work in progress")
	wip.ok("start", wt.Slug, "--command", fakeAgentBin)
	idle := r.with(script(t, "print thinking", "hang"))
	it := idle.create("nothing yet")
	idle.ok("start", it.Slug, "--command", fakeAgentBin)
	eventually(t, "the agent to write wip.txt", func() bool {
		_, err := os.Stat(filepath.Join(r.showFull(wt.Slug).Session.Worktree, "wip.txt"))
		return err == nil
	})

	out := r.ok("diff", wt.Slug)
	if !strings.HasPrefix(out, "\n# Uncommitted in the worktree ") || !strings.Contains(out, "+++ b/wip.txt") || !strings.Contains(out, "+work in progress") {
		t.Fatalf("lazy diff of uncommitted work:\n%s", out)
	}
	if out := r.ok("diff", it.Slug); out != "No changes on lazy/"+it.Slug+" against main.\n" {
		t.Fatalf("an empty lazy diff says %q", out)
	}
	if out := r.ok("diff", wt.Slug, "--committed"); out != "No committed changes on lazy/"+wt.Slug+" against main.\n" {
		t.Fatalf("lazy diff --committed of uncommitted work says %q", out)
	}
	if out := r.ok("diff", wt.Slug, "--", "other.txt"); out != "No changes on lazy/"+wt.Slug+" against main in other.txt.\n" {
		t.Fatalf("lazy diff of an unchanged path says %q", out)
	}
	var empty map[string]any
	if err := json.Unmarshal([]byte(r.ok("diff", it.Slug, "--json")), &empty); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"slug": it.Slug, "branch": "lazy/" + it.Slug, "into": "main", "files": []any{}, "uncommitted": []any{}, "patch": "", "stat": "", "truncated": false} {
		if got, ok := empty[k]; !ok || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("lazy diff --json of an empty diff: %s is %v, want %v", k, got, want)
		}
	}
	var full map[string]any
	if err := json.Unmarshal([]byte(r.ok("diff", wt.Slug, "--json")), &full); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(full["uncommitted"]) != "[wip.txt]" || fmt.Sprint(full["files"]) != "[]" {
		t.Errorf("lazy diff --json of uncommitted work: %v", full)
	}

	capture, keys, _ := tmuxWatch(t, r, 120, 30)
	screenHas(t, capture, wt.Slug, it.Slug)
	selectRow(t, capture, keys, wt.Slug)
	keys("d")
	screenHas(t, capture, wt.Slug+" — diff", "── uncommitted in the worktree ──", "+++ b/wip.txt", "+work in progress")
	selectRow(t, capture, keys, it.Slug)
	screenHas(t, capture, it.Slug+" — diff", "No changes on lazy/"+it.Slug+" against main.")
}

// selectRow moves watch's selection to slug's row: down the list, then
// up it, looking after each key.
func selectRow(t *testing.T, capture func() string, keys func(...string), slug string) {
	t.Helper()
	selected := func() bool { return strings.Contains(capture(), "▸ "+slug) }
	for _, k := range strings.Split("jjjjjkkkkkkkkkk", "") {
		if selected() {
			return
		}
		keys(k)
		for deadline := time.Now().Add(time.Second); !selected() && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !selected() {
		t.Fatalf("could not select %s:\n%s", slug, capture())
	}
}
