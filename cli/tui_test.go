package cli

import (
	"os"
	"path/filepath"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/machine"
)

// quits reports whether cmd, run to its end through batches, quits.
func quits(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	switch msg := cmd().(type) {
	case tea.QuitMsg:
		return true
	case tea.BatchMsg:
		for _, c := range msg {
			if quits(c) {
				return true
			}
		}
	}
	return false
}

// Text of several characters is a key per character: "xyzq" still quits.
func TestTUIKeysInOneReadAreEachAKey(t *testing.T) {
	m := &tuiModel{}
	if _, cmd := m.key(tea.KeyPressMsg{Code: 'x', Text: "xyzq"}); !quits(cmd) {
		t.Fatal("q in a run of keys did not quit")
	}
	if _, cmd := m.key(tea.KeyPressMsg{Code: 'x', Text: "xyz"}); quits(cmd) {
		t.Fatal("xyz quit")
	}
	if _, cmd := m.Update(tea.PasteMsg{Content: "qq"}); quits(cmd) {
		t.Fatal("a pasted q quit")
	}
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}); !quits(cmd) {
		t.Fatal("ctrl+c did not quit")
	}
}

// TestBellRingsWhenATaskStartsNeedingYou: the bell is for the moment a
// seen task comes to wait for a human, not for the first screen, not for
// a task that already waited, not for work going on.
func TestBellRingsWhenATaskStartsNeedingYou(t *testing.T) {
	for _, c := range []struct {
		name      string
		prev, now map[string]machine.Status
		want      bool
	}{
		{"first load", nil, map[string]machine.Status{"a": machine.Blocked}, false},
		{"a turn ends", map[string]machine.Status{"a": machine.Working}, map[string]machine.Status{"a": machine.Blocked}, true},
		{"a turn ends in conflict", map[string]machine.Status{"a": machine.Working}, map[string]machine.Status{"a": machine.Conflict}, true},
		{"interrupted", map[string]machine.Status{"a": machine.Working}, map[string]machine.Status{"a": machine.Interrupted}, true},
		{"conflict resolved into blocked", map[string]machine.Status{"a": machine.Conflict}, map[string]machine.Status{"a": machine.Blocked}, false},
		{"a new task appears blocked", map[string]machine.Status{}, map[string]machine.Status{"a": machine.Blocked}, false},
		{"work starts", map[string]machine.Status{"a": machine.Blocked}, map[string]machine.Status{"a": machine.Working}, false},
	} {
		if got := newlyNeedsYou(c.prev, c.now); got != c.want {
			t.Errorf("%s: rang %v, want %v", c.name, got, c.want)
		}
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
