package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	tea "charm.land/bubbletea/v2"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/tui"
)

// tuiOn is lazy watch's model on l's repository, as runTUI makes it, on
// a 120 x 30 screen, without a program: the test delivers the messages.
func tuiOn(t *testing.T, l *lazyT) *tui.Model {
	t.Helper()
	getenv := func(k string) string { return l.env[k] }
	a := &app{dir: l.dir, build: build{version: "dev"}, io: ioStreams{in: strings.NewReader(""), out: io.Discard, errOut: io.Discard, getenv: getenv},
		getenv: getenv, now: time.Now, noSpawn: true}
	if err := a.open(); err != nil {
		t.Fatal(err)
	}
	m := tui.New(context.Background(), &tuiBackend{a: a}, tui.Options{})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	return m
}

// press delivers keys: enter, or text (a capital letter with shift).
func press(m *tui.Model, keys ...string) {
	for _, k := range keys {
		msg := tea.KeyPressMsg{Code: tea.KeyEnter}
		if k != "enter" {
			r := []rune(k)
			msg = tea.KeyPressMsg{Code: r[0], Text: k}
			if len(r) == 1 && unicode.IsUpper(r[0]) {
				msg = tea.KeyPressMsg{Code: unicode.ToLower(r[0]), ShiftedCode: r[0], Mod: tea.ModShift, Text: k}
			}
		}
		m.Update(msg)
	}
}

// deliver runs cmd, as the program would, and hands the model what it
// returns; a batch's commands each in turn. The tick's one-second timer
// is never run: the test is the clock.
func deliver(m *tui.Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			deliver(m, c)
		}
	case nil:
	default:
		// What the model asks for next (a reload after an action, the
		// preview of what is selected) is delivered too.
		_, next := m.Update(msg)
		deliver(m, next)
	}
}

// TestTUIActsOnTheRepository drives lazy watch's model on a real
// repository in the test's process: the list loads with the task that
// needs a human selected and its agent output in the pane; d shows its
// diff; n creates a task through the same operation as lazy create; A
// then y lands the work in main and the status line says so; c with a
// reason then y closes a task.
func TestTUIActsOnTheRepository(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	tk := l.worked("Fix the login", "auth/login.go", "package auth\n")
	idle := l.create("Someday")
	dir := filepath.Join(l.dir, ".git", "lazy", "logs", tk.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log := `{"lazy":"turn","turn":1,"kind":"start","agent":"exec","run":1,"at":"2026-01-02T03:04:05Z"}` + "\ndid the login form\n"
	if err := os.WriteFile(filepath.Join(dir, "agent.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	m := tuiOn(t, l)
	deliver(m, m.Reload())
	screen := m.Screen()
	has(t, "the first screen", screen, "2 tasks · 1 need you", "▸ fix-the-login", "someday", "fix-the-login — agent output", "did the login form", "── turn 1 (start)")

	press(m, "d")
	deliver(m, m.Preview())
	has(t, "the diff pane", m.Screen(), "fix-the-login — diff", "+++ b/auth/login.go", "+package auth")

	press(m, "n", "Write the docs", "enter", "For the review loop.")
	_, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	deliver(m, cmd)
	if status, bad := m.Status(); !strings.HasPrefix(status, "Created write-the-docs (") || bad {
		t.Fatalf("n: status %q", status)
	}
	if got := l.show("write-the-docs"); got.Goal != "For the review loop." || got.Status != "backlog" {
		t.Errorf("the task n created: %+v", got)
	}

	m.Select(tk.ID)
	press(m, "A")
	_, cmd = m.Update(tea.KeyPressMsg{Code: 'y', Text: "y"})
	deliver(m, cmd)
	if status, bad := m.Status(); !strings.HasPrefix(status, "Accepted fix-the-login: squash-merged into main as ") || bad {
		t.Fatalf("A y: status %q", status)
	}
	if b, _ := os.ReadFile(filepath.Join(l.dir, "auth", "login.go")); string(b) != "package auth\n" {
		t.Errorf("the accept from the TUI did not land the file: %q", b)
	}
	if got := l.show(tk.Slug); got.Status != "complete" {
		t.Errorf("after A y: %s", got.Status)
	}
	has(t, "the screen after the accept", m.Screen(), "0 need you")

	m.Select(idle.ID)
	press(m, "c", "not needed", "enter")
	_, cmd = m.Update(tea.KeyPressMsg{Code: 'y', Text: "y"})
	deliver(m, cmd)
	if status, _ := m.Status(); status != "Closed someday: now abandoned" {
		t.Errorf("c y: status %q", status)
	}
	if got := l.show(idle.Slug); got.Status != "abandoned" || got.Reason != "not needed" {
		t.Errorf("after c: %+v", got)
	}
	if testrepo.Git(t, l.dir, "status", "--porcelain") != "" {
		t.Error("the TUI's actions left the checkout dirty")
	}
}

// TestWatchBellSetting: the bell is on unless --no-bell or git config
// lazy.watch.bell false.
func TestWatchBellSetting(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	for _, c := range []struct {
		config string
		noBell bool
		want   bool
	}{
		{"", false, true},
		{"", true, false},
		{"[lazy \"watch\"]\n\tbell = false\n", false, false},
		{"[lazy \"watch\"]\n\tbell = true\n", false, true},
		{"[lazy \"watch\"]\n\tbell = true\n", true, false},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config"), []byte(c.config), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := gitrepo.ReadConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := (&WatchCmd{NoBell: c.noBell}).bell(&app{cfg: cfg}); got != c.want {
			t.Errorf("config %q, --no-bell %v: bell %v, want %v", c.config, c.noBell, got, c.want)
		}
	}
}
