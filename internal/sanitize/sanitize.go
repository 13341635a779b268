// Package sanitize is the single boundary every piece of user text passes
// through before lazy persists it (spec: "Text intake is sanitized at the
// boundary").
//
// The policy is sanitize and deliver, never reject: control characters are
// re-encoded as printable escapes so the text survives argv, JSON and
// terminals, and nothing is dropped. Ordinary text passes byte for byte,
// and ordinary text includes tab, LF and CR (the spec exempts them): a CR
// is harmful only on a terminal, and escaping for a terminal belongs to
// the output boundary (internal/termsafe, and Display here).
package sanitize

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Note is appended to prose that had characters replaced, so the
// substitution is visible to the reader instead of a silent rewrite.
const Note = "[lazy: control characters in this text were replaced with printable escapes (for example NUL became \\u0000); nothing else was changed]"

// Field escapes control characters without appending the note. Use it for
// short single-line fields (a title, a goal line) and for array elements
// such as file paths, where a note would corrupt the value.
func Field(s string) string {
	out, _ := escape(s)
	return out
}

// Prose escapes control characters and, when anything was replaced,
// appends Note on its own paragraph. Use it for feedback, messages,
// prompts, reasons and questions.
func Prose(s string) string {
	out, n := escape(s)
	if n == 0 {
		return out
	}
	return out + "\n\n" + Note
}

// Display escapes like Field and also escapes CR: for text that reaches a
// screen without passing the terminal escaper (the TUI's cells, the web
// view's log lines, MCP results a client may print), where a CR would
// return the cursor and let later text overwrite earlier text.
func Display(s string) string {
	out, _ := escape(s)
	if strings.IndexByte(out, '\r') < 0 {
		return out
	}
	return strings.ReplaceAll(out, "\r", `\u000d`)
}

// Fields applies Field to every element and returns a new slice.
func Fields(list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = Field(s)
	}
	return out
}

// Clean reports whether s would pass through unchanged.
func Clean(s string) bool {
	out, _ := escape(s)
	return out == s
}

// escape replaces C0 controls other than tab, LF and CR, DEL, C1 controls,
// bidi controls (unicode.Bidi_Control: marks, overrides, isolates) and bytes
// that are not UTF-8 with printable escapes, and reports how many it
// replaced. Invalid UTF-8 is escaped rather than left alone because JSON
// encoding would otherwise turn it into U+FFFD and lose the byte.
func escape(s string) (string, int) {
	first := -1
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, size) {
			first = i
			break
		}
		i += size
	}
	if first < 0 {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:first])
	n := 0
	for i := first; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
			n++
		case needsEscape(r, size):
			fmt.Fprintf(&b, "\\u%04x", r)
			n++
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String(), n
}

func needsEscape(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r == '\t' || r == '\n' || r == '\r':
		return false
	case r < 0x20, r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case unicode.Is(unicode.Bidi_Control, r):
		// Bidi marks, embeddings, overrides and isolates reorder what a
		// reader sees (visual spoofing in the web view and MCP clients).
		// Unicode's own property is the one list both this and the
		// terminal escaper use.
		return true
	}
	return false
}
