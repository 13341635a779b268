package sanitize

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/lazyorch/lazy/internal/termsafe"
)

func TestOrdinaryTextIsUntouched(t *testing.T) {
	for _, s := range []string{"", "fix the flaky login test", "tabs\tand\nnew\nlines", "ünïcödé — 日本語 🚀", `a literal \u0000 typed by hand`} {
		if got := Prose(s); got != s {
			t.Errorf("Prose(%q) = %q, want unchanged", s, got)
		}
		if got := Field(s); got != s {
			t.Errorf("Field(%q) = %q, want unchanged", s, got)
		}
		if !Clean(s) {
			t.Errorf("Clean(%q) = false", s)
		}
	}
}

func TestEscapes(t *testing.T) {
	cases := map[string]string{
		"a\x00b":         `a\u0000b`,
		"\x1b[31mred":    `\u001b[31mred`,
		"del\x7f":        `del\u007f`,
		"c1\u0085x":      `c1\u0085x`,
		"bad\xffutf8":    `bad\xffutf8`,
		"\x00\x01\x02":   `\u0000\u0001\u0002`,
		"ok\tkeep\nthis": "ok\tkeep\nthis",
		"over\rwrite":    "over\rwrite",
		"crlf\r\nline":   "crlf\r\nline",
		"\r\r\n":         "\r\r\n",
	}
	for in, want := range cases {
		if got := Field(in); got != want {
			t.Errorf("Field(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProseDisclosesOnlyWhenChanged(t *testing.T) {
	got := Prose("please\x00fix")
	if !strings.HasPrefix(got, `please\u0000fix`) || !strings.HasSuffix(got, Note) {
		t.Fatalf("Prose with NUL = %q", got)
	}
	if strings.Contains(Field("please\x00fix"), Note) {
		t.Fatal("Field appended the note")
	}
	files := Fields([]string{"src/a\x00.go", "b.go"})
	if files[0] != `src/a\u0000.go` || files[1] != "b.go" {
		t.Fatalf("Fields = %q", files)
	}
	if Fields(nil) != nil {
		t.Fatal("Fields(nil) != nil")
	}
}

// CR is ordinary text at intake (spec: C0 "except tab/LF/CR"), passed
// byte for byte and without a note; Display escapes it for a screen.
func TestCarriageReturn(t *testing.T) {
	for _, s := range []string{"a\rb\r\nc", "l1\r\nl2", "ok\rEVIL"} {
		if got := Prose(s); got != s {
			t.Errorf("Prose(%q) = %q, want it byte for byte", s, got)
		}
	}
	if got := Display("a\rb\r\nc\x00"); got != `a\u000db\u000d`+"\n"+`c\u0000` {
		t.Errorf("Display = %q", got)
	}
}

func TestIdempotent(t *testing.T) {
	once := Prose("x\x00y")
	if twice := Prose(once); twice != once {
		t.Fatalf("sanitizing twice changed the text: %q -> %q", once, twice)
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "hello", "a\x00b", "\x1b]0;title\x07", "\xff\xfe", "ok\r\n", "\u0085", strings.Repeat("\x00", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		field := Field(s)
		prose := Prose(s)
		for _, out := range []string{field, prose} {
			if strings.ContainsRune(out, 0) {
				t.Fatalf("NUL survived: %q", out)
			}
			if !utf8.ValidString(out) {
				t.Fatalf("output is not UTF-8: %q", out)
			}
			for _, r := range out {
				if needsEscape(r, utf8.RuneLen(r)) {
					t.Fatalf("control %U survived in %q", r, out)
				}
			}
			// JSON must round-trip the stored text exactly.
			b, err := json.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			var back string
			if err := json.Unmarshal(b, &back); err != nil || back != out {
				t.Fatalf("JSON round trip changed %q to %q (%v)", out, back, err)
			}
		}
		if Clean(s) {
			if field != s || prose != s {
				t.Fatalf("clean text changed: %q -> %q / %q", s, field, prose)
			}
		} else if _, n := escape(s); n > 0 && !strings.HasSuffix(prose, Note) {
			t.Fatalf("changed prose lacks the note: %q", prose)
		}
		if Field(field) != field {
			t.Fatalf("not idempotent: %q -> %q", field, Field(field))
		}
		if shown := Display(s); strings.ContainsRune(shown, '\r') || !utf8.ValidString(shown) {
			t.Fatalf("Display let a CR or invalid UTF-8 through: %q", shown)
		}
		// Every escape is longer than what it replaced, and the text
		// between escapes is kept: removing nothing means the output is
		// never shorter than the input.
		if len(field) < len(s) {
			t.Fatalf("output shorter than input: %q -> %q", s, field)
		}
	})
}

// TestBidiOverridesEscaped: a right-to-left override or isolate in intake
// text would let stored text display differently from what it says (issue 29).
func TestBidiOverridesEscaped(t *testing.T) {
	for _, r := range []rune{0x202a, 0x202e, 0x2066, 0x2069} {
		in := "evil" + string(r) + "txt.exe"
		got := Field(in)
		want := "evil" + fmt.Sprintf("\\u%04x", r) + "txt.exe"
		if got != want {
			t.Errorf("Field(%q) = %q, want %q", in, got, want)
		}
		if Clean(in) {
			t.Errorf("Clean(%q) = true, want false", in)
		}
	}
	if got := Field("שלום world"); got != "שלום world" {
		t.Errorf("plain RTL text changed: %q", got)
	}
}

// TestIntakeAndTerminalAgreeOnEveryRune keeps the two escapers on one
// rule: a character the terminal path refuses to show raw must not pass
// intake raw either (the web view and MCP clients show intake's output).
// Carriage return is the one designed difference: texts keep CRLF, the
// terminal must not see a bare CR.
func TestIntakeAndTerminalAgreeOnEveryRune(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r == '\r' || (r >= 0xd800 && r <= 0xdfff) {
			continue
		}
		s := "a" + string(r) + "b"
		if intake, term := !Clean(s), !termsafe.Safe(s); intake != term {
			t.Errorf("U+%04X: intake escapes it = %v, terminal escapes it = %v", r, intake, term)
		}
	}
	for _, r := range []rune{0x061c, 0x200e, 0x200f, 0x202e, 0x2068} {
		if Clean(string(r)) {
			t.Errorf("bidi control U+%04X passes intake raw", r)
		}
	}
}
