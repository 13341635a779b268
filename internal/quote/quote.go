// Package quote is the one way lazy puts text that is not its own (an
// agent's words, a person's message, a record pulled from a remote, a
// command's output) into a record or a prompt that lazy writes: the
// handoff record, the prompts of later turns, the answers it passes on.
//
// Such text is fenced, so nothing in it can read as a heading, a section,
// a thematic break or a fence of lazy's, however it is written; and what
// changes what a reader sees without being visible (control sequences,
// bidi controls, line separators, invisible format characters, a bare
// CR) is escaped visibly. Nothing else of the text changes: a fenced
// quote is the text, verbatim, apart from those escapes.
package quote

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lazyorch/lazy/internal/sanitize"
)

// Info is the info string of every fence Block writes.
const Info = "text"

// Block returns text as a fenced block, to stand on lines of its own
// (a blank line before and after it keeps it apart in any reader):
//
//	````text
//	the text, line by line
//	````
//
// The fence is of backticks, one longer than the longest run of
// backticks or tildes anywhere in the text and at least three, and
// starts its line. CommonMark closes a fenced block only with a line of
// at least as many fence characters of the same kind, so no line of the
// text can close it, and inside a fenced block nothing is markdown: no
// heading (ATX or setext), thematic break, list, quote or HTML. The
// longer fence also tells a reader that is not a markdown parser (a
// model) which fence is the outer one. Trailing line breaks are dropped;
// a CRLF becomes LF.
func Block(text string) string {
	body := strings.TrimRight(escape(text, false), "\n")
	fence := strings.Repeat("`", max(3, longestFenceRun(body)+1))
	if body == "" {
		return fence + Info + "\n" + fence
	}
	return fence + Info + "\n" + body + "\n" + fence
}

// Inline returns text for a place on one line of lazy's own (after a
// label, in a heading of lazy's, in a list item): escaped as Block
// escapes it, and its line breaks escaped too (LF as \u000a), so it can
// neither end that line nor begin another.
func Inline(text string) string {
	return escape(text, true)
}

// Markdown returns text for a place on one line of a markdown document
// that a forge renders (a pull request's description): Inline's escapes,
// and a backslash before every ASCII punctuation character, which
// CommonMark reads as that character itself. So the text can open no
// link, image, emphasis, code span, autolink or HTML (a "<!--" would hide
// the rest of the description), and reads as written.
func Markdown(text string) string {
	in := Inline(text)
	var b strings.Builder
	b.Grow(len(in) + len(in)/4)
	for _, r := range in {
		if r < utf8.RuneSelf && unicode.IsPunct(r) || r < utf8.RuneSelf && unicode.IsSymbol(r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Escape returns text with everything escaped that Block and Inline
// escape but line breaks (a CRLF becomes LF): for text that stays in a
// field of its own, never among lazy's lines, where only what a reader
// cannot see must not pass.
func Escape(text string) string {
	return escape(text, false)
}

// escape escapes what sanitize.Field does (C0 but tab, LF and CR; DEL;
// C1; bidi controls; bytes that are not UTF-8), and also: a CR (a CRLF
// becomes LF), the line and paragraph separators, and invisible format
// characters (Unicode's Cf: zero-width space, word joiner, BOM, the tag
// characters that can smuggle text to a model unseen...) other than the
// zero-width joiner and non-joiner that scripts and emoji need. With
// inline, LF is escaped too.
func escape(text string, inline bool) string {
	s := sanitize.Field(text)
	if clean(s, inline) {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		if hidden(r) || (inline && r == '\n') {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func clean(s string, inline bool) bool {
	for _, r := range s {
		if hidden(r) || (inline && r == '\n') {
			return false
		}
	}
	return true
}

// hidden reports whether r changes what a reader sees without being seen
// itself, beyond what sanitize escapes.
func hidden(r rune) bool {
	switch {
	case r == '\r', r == '\u2028', r == '\u2029':
		return true
	case r == '\u200c', r == '\u200d':
		return false
	case r < 0x80:
		return false
	}
	return unicode.Is(unicode.Cf, r)
}

// longestFenceRun is the length of the longest run of backticks or of
// tildes in s.
func longestFenceRun(s string) int {
	best, run := 0, 0
	var last byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '`' && c != '~' {
			run = 0
			continue
		}
		if run > 0 && c == last {
			run++
		} else {
			run = 1
		}
		last = c
		best = max(best, run)
	}
	return best
}

// Bidi returns s with only its bidi controls (Unicode's Bidi_Control:
// marks, embeddings, overrides, isolates) escaped visibly, as \u202e: for
// a whole document lazy built and escaped otherwise (a web page), where a
// control that came with a record pulled from a remote would reorder what
// the reader sees of everything after it.
func Bidi(s string) string {
	return bidi(s, `\u%04x`)
}

// BidiJSON is Bidi for a JSON document: a bidi control can only be inside
// a string there, and becomes the text \u202e (written \\u202e), so the
// document stays valid JSON and decodes to the visible escape.
func BidiJSON(b []byte) []byte {
	s := string(b)
	if out := bidi(s, `\\u%04x`); out != s {
		return []byte(out)
	}
	return b
}

func bidi(s, format string) string {
	i := strings.IndexFunc(s, isBidi)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if isBidi(r) {
			fmt.Fprintf(&b, format, r)
		} else {
			b.WriteString(s[i : i+size]) // byte for byte, invalid UTF-8 too
		}
		i += size
	}
	return b.String()
}

func isBidi(r rune) bool { return r >= 0x600 && unicode.Is(unicode.Bidi_Control, r) }
