package tui

import (
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/render"
)

// tuiPrompt is a question on the bottom line: a text to type (a title,
// feedback, a reason) or, with confirm, y or N.
type tuiPrompt struct {
	label string
	// input is the line editor (bubbles' textinput): the text typed and
	// the cursor in it. Its own view is not used: the line is drawn
	// through the terminal escaper (see line).
	input   textinput.Model
	confirm bool
	// cancel is said in the status line when the human backs out.
	cancel string
	// done gets what was typed ("y" for a confirmation) and returns the
	// action, or sets the next prompt.
	done func(text string) tea.Cmd
}

// A pasted text keeps its line breaks and tabs (feedback pasted from
// an editor), which textinput, a one-line editor, would turn to spaces:
// they stand in it as these private-use runes, and come back on enter.
const (
	promptNewline = '\ue00a'
	promptTab     = '\ue009'
)

// newPromptInput is a line editor holding text, its cursor at the end.
func newPromptInput(text string) textinput.Model {
	in := textinput.New()
	in.Prompt = ""
	in.CharLimit = 0
	// ctrl+v would run a clipboard program; a terminal pastes by itself.
	in.KeyMap.Paste.SetEnabled(false)
	// No suggestions: tab, up and down do nothing, as before.
	in.KeyMap.AcceptSuggestion.SetEnabled(false)
	in.KeyMap.NextSuggestion.SetEnabled(false)
	in.KeyMap.PrevSuggestion.SetEnabled(false)
	in.SetVirtualCursor(false)
	_ = in.Focus() // the blink it asks for is not drawn
	in.SetValue(encodePromptText(text))
	in.CursorEnd()
	return in
}

// encodePromptText puts a text's line breaks and tabs in the stand-ins
// textinput keeps (a CR or CRLF is a line break too), dropping any
// stand-in the text itself carried.
func encodePromptText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == promptNewline || r == promptTab {
			return -1
		}
		return r
	}, s)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.NewReplacer("\r", string(promptNewline), "\n", string(promptNewline), "\t", string(promptTab)).Replace(s)
}

// decodePromptText is the text typed, its line breaks and tabs back.
func decodePromptText(s string) string {
	return strings.NewReplacer(string(promptNewline), "\n", string(promptTab), "\t").Replace(s)
}

// value is what was typed so far.
func (p *tuiPrompt) value() string { return decodePromptText(p.input.Value()) }

// paste inserts a pasted text at the cursor: text, never a command.
func (p *tuiPrompt) paste(text string) {
	p.input, _ = p.input.Update(tea.PasteMsg{Content: encodePromptText(text)})
}

// line is the prompt as the bottom line shows it at width w: the label,
// what was typed with a block where the cursor is and ⏎ for a line
// break, escaped for the terminal. When it is too long, the part up to
// the cursor stays in sight.
func (p *tuiPrompt) line(w int) string {
	if p.confirm {
		return render.Cut(termsafe.String(p.label)+" ", w)
	}
	show := func(s string) string {
		s = strings.NewReplacer(string(promptNewline), "⏎", string(promptTab), " ").Replace(s)
		return termsafe.String(s)
	}
	typed := []rune(p.input.Value())
	pos := min(p.input.Position(), len(typed))
	head := termsafe.String(p.label) + ": " + show(string(typed[:pos])) + "█"
	if render.TextWidth(head) > w {
		r := []rune(head)
		from, cols := len(r), 1 // the "…" in front
		for from > 0 && cols+runeWidth(r[from-1]) <= w {
			from--
			cols += runeWidth(r[from])
		}
		return "…" + string(r[from:])
	}
	return render.CutWidth(head+show(string(typed[pos:])), w)
}

// ask opens a text prompt.
func (sb *statusBar) ask(label, text, cancel string, done func(string) tea.Cmd) {
	sb.prompt = &tuiPrompt{label: label, input: newPromptInput(text), cancel: cancel, done: done}
}

// confirm opens a y/N prompt: only y goes ahead.
func (sb *statusBar) confirm(label, cancel string, yes func() tea.Cmd) {
	sb.prompt = &tuiPrompt{label: label, confirm: true, cancel: cancel, done: func(string) tea.Cmd { return yes() }}
}

// promptKey is a key while a prompt is open: enter and esc here, the
// editing (backspace, ctrl+u, ctrl+w, the arrows...) and the text
// itself in textinput.
func (sb *statusBar) promptKey(k tea.KeyPressMsg) tea.Cmd {
	p := sb.prompt
	s := k.String()
	if s == "ctrl+c" {
		return tea.Quit
	}
	if p.confirm {
		sb.prompt = nil
		if s == "y" || s == "Y" {
			return p.done("y")
		}
		if p.cancel != "" {
			sb.say(p.cancel)
		}
		return nil
	}
	switch s {
	case "esc":
		sb.prompt = nil
		if p.cancel != "" {
			sb.say(p.cancel)
		}
		return nil
	case "enter":
		sb.prompt = nil
		return p.done(p.value())
	}
	if k.Mod&^tea.ModShift != 0 {
		// A chord (ctrl+x, alt+x) edits or does nothing; it never types.
		k.Text = ""
	}
	p.input, _ = p.input.Update(k)
	return nil
}
