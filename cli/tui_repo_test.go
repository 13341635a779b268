package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/review"
)

// tuiOn is lazy watch's model on l's repository, as runTUI makes it, on
// a 120 x 30 screen, without a program: the test delivers the messages.
func tuiOn(t *testing.T, l *lazyT) *tuiModel {
	t.Helper()
	a := &app{dir: l.dir, build: build{version: "dev"}, stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard,
		getenv: func(k string) string { return l.env[k] }, now: time.Now, noSpawn: true}
	if err := a.open(); err != nil {
		t.Fatal(err)
	}
	return &tuiModel{a: a, ctx: context.Background(), styles: newTUIStyles(), loading: &sync.Mutex{}, overlapCache: &review.OverlapCache{},
		follow: true, scroller: viewport.New(), width: 120, height: 30}
}

// deliver runs cmd, as the program would, and hands the model what it
// returns; a batch's commands each in turn. The tick's one-second timer
// is never run: the test is the clock.
func deliver(m *tuiModel, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			deliver(m, c)
		}
	case nil, tuiTick:
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
	deliver(m, m.load())
	screen := m.screen()
	has(t, "the first screen", screen, "2 tasks · 1 need you", "▸ fix-the-login", "someday", "fix-the-login — agent output", "did the login form", "── turn 1 (start)")

	press(m, "d")
	deliver(m, m.loadPreview())
	has(t, "the diff pane", m.screen(), "fix-the-login — diff", "+++ b/auth/login.go", "+package auth")

	press(m, "n", "Write the docs", "enter", "For the review loop.")
	_, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	deliver(m, cmd)
	if !strings.HasPrefix(m.status, "Created write-the-docs (") || m.statusBad {
		t.Fatalf("n: status %q", m.status)
	}
	if got := l.show("write-the-docs"); got.Goal != "For the review loop." || got.Status != "backlog" {
		t.Errorf("the task n created: %+v", got)
	}

	m.selected = tk.ID
	press(m, "A")
	_, cmd = m.Update(tea.KeyPressMsg{Code: 'y', Text: "y"})
	deliver(m, cmd)
	if !strings.HasPrefix(m.status, "Accepted fix-the-login: squash-merged into main as ") || m.statusBad {
		t.Fatalf("A y: status %q", m.status)
	}
	if b, _ := os.ReadFile(filepath.Join(l.dir, "auth", "login.go")); string(b) != "package auth\n" {
		t.Errorf("the accept from the TUI did not land the file: %q", b)
	}
	if got := l.show(tk.Slug); got.Status != "complete" {
		t.Errorf("after A y: %s", got.Status)
	}
	has(t, "the screen after the accept", m.screen(), "0 need you")

	m.selected = idle.ID
	press(m, "c", "not needed", "enter")
	_, cmd = m.Update(tea.KeyPressMsg{Code: 'y', Text: "y"})
	deliver(m, cmd)
	if m.status != "Closed someday: now abandoned" {
		t.Errorf("c y: status %q", m.status)
	}
	if got := l.show(idle.Slug); got.Status != "abandoned" || got.Reason != "not needed" {
		t.Errorf("after c: %+v", got)
	}
	if testrepo.Git(t, l.dir, "status", "--porcelain") != "" {
		t.Error("the TUI's actions left the checkout dirty")
	}
}
