package cli

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// Keys that arrive in one read are each a key: "xyzq" still quits.
func TestTUIKeysInOneReadAreEachAKey(t *testing.T) {
	m := &tuiModel{}
	_, cmd := m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("xyzq")})
	if cmd == nil {
		t.Fatal("no command for xyzq")
	}
	quits := false
	if batch, ok := cmd().(tea.BatchMsg); ok {
		for _, c := range batch {
			if c != nil {
				if _, ok := c().(tea.QuitMsg); ok {
					quits = true
				}
			}
		}
	} else if _, ok := cmd().(tea.QuitMsg); ok {
		quits = true
	}
	if !quits {
		t.Fatal("q in a run of keys did not quit")
	}
	if _, cmd := m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("qq"), Paste: true}); cmd != nil {
		t.Fatal("a pasted q quit")
	}
}
