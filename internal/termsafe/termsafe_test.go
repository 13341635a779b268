package termsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func escapeAll(t *testing.T, chunks ...[]byte) string {
	t.Helper()
	var out bytes.Buffer
	w := New(&out)
	for _, c := range chunks {
		n, err := w.Write(c)
		if err != nil || n != len(c) {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(c))
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// checkInert fails when s could still drive a terminal.
func checkInert(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("output is not UTF-8: %q", s)
	}
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n':
		case r < 0x20 || r == 0x7f:
			t.Fatalf("output keeps control %U: %q", r, s)
		case r >= 0x80 && r <= 0x9f:
			t.Fatalf("output keeps C1 %U: %q", r, s)
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			t.Fatalf("output keeps bidi control %U: %q", r, s)
		}
	}
}

func TestEscapesEveryControlSequence(t *testing.T) {
	cases := map[string]string{
		"plain text, tabs\tand\nlines": "plain text, tabs\tand\nlines",
		"ünïcödé — 日本語 🚀":              "ünïcödé — 日本語 🚀",
		"\x1b[31mred\x1b[0m":           `\u001b[31mred\u001b[0m`,
		"\x1b]52;c;aGk=\x07":           `\u001b]52;c;aGk=\u0007`,
		"\x1b]0;title\x1b\\":           `\u001b]0;title\u001b\`,
		"over\rwrite":                  `over\u000dwrite`,
		"bell\x07 del\x7f nul\x00":     `bell\u0007 del\u007f nul\u0000`,
		"c1 csi \u009b2J osc \u009d":   `c1 csi \u009b2J osc \u009d`,
		"bad \xff\xfe utf8":            `bad \xff\xfe utf8`,
		"rtl \u202e override":          `rtl \u202e override`,
		"cut \xe2\x82":                 `cut \xe2\x82`,
	}
	for in, want := range cases {
		if got := escapeAll(t, []byte(in)); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
		if Safe(in) != (in == want) {
			t.Errorf("Safe(%q) = %v", in, Safe(in))
		}
	}
}

// JSON output goes through the same writer: it must stay valid JSON that
// decodes to the same value (encoding/json leaves DEL and C1 raw).
func TestJSONStaysValidJSON(t *testing.T) {
	v := map[string]any{
		"title": "a\x1b[2Jb\u0085c\u009bd\x7fe\rf\u202eg \"quoted\" back\\slash \xff",
		"list":  []string{"\u0090", "\x00", "ok"},
	}
	var raw bytes.Buffer
	if err := json.NewEncoder(&raw).Encode(v); err != nil {
		t.Fatal(err)
	}
	for _, split := range []int{1, 2, 3, 7, raw.Len()} {
		var chunks [][]byte
		b := raw.Bytes()
		for len(b) > 0 {
			n := min(split, len(b))
			chunks = append(chunks, b[:n])
			b = b[n:]
		}
		got := escapeAll(t, chunks...)
		checkInert(t, got)
		var back, want any
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Fatalf("escaped JSON is not JSON (%v): %s", err, got)
		}
		_ = json.Unmarshal(raw.Bytes(), &want)
		wb, _ := json.Marshal(want)
		bb, _ := json.Marshal(back)
		if !bytes.Equal(wb, bb) {
			t.Fatalf("escaped JSON decodes to %s, want %s", bb, wb)
		}
	}
}

// FuzzWriter: whatever goes in and however the writes are split, the
// output is inert, it is the same for every split, and text without
// controls passes byte for byte.
func FuzzWriter(f *testing.F) {
	for _, s := range []string{"", "hello", "\x1b[31m", "\x1b]52;c;Zm9v\x07", "\u009b", "\xe2\x82\xac", "\xf0\x9f\x9a", "a\rb", "\xed\xa0\x80", "\u202e"} {
		f.Add([]byte(s), uint8(1), uint8(2))
	}
	f.Fuzz(func(t *testing.T, in []byte, a, b uint8) {
		whole := escapeAll(t, in)
		checkInert(t, whole)
		i, j := int(a)%(len(in)+1), int(b)%(len(in)+1)
		if i > j {
			i, j = j, i
		}
		if split := escapeAll(t, in[:i], in[i:j], in[j:]); split != whole {
			t.Fatalf("split at %d,%d gives %q, whole gives %q", i, j, split, whole)
		}
		var bytewise [][]byte
		for k := range in {
			bytewise = append(bytewise, in[k:k+1])
		}
		if got := escapeAll(t, bytewise...); got != whole {
			t.Fatalf("byte-by-byte gives %q, whole gives %q", got, whole)
		}
		if String(string(in)) != whole {
			t.Fatalf("String disagrees with Writer on %q", in)
		}
		if Safe(string(in)) && whole != string(in) {
			t.Fatalf("safe text changed: %q -> %q", in, whole)
		}
		if strings.ContainsAny(whole, "\x1b\u009b") {
			t.Fatalf("escape survived: %q", whole)
		}
	})
}
