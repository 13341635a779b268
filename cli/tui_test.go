package cli

import (
	"testing"

	tea "charm.land/bubbletea/v2"
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
