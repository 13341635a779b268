package gitstore

import (
	"bufio"
	"maps"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/task"
)

// scannerTrailers is how ParseTrailers read a message before it used
// strings.Lines: the reference its replacement must agree with.
func scannerTrailers(msg string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(msg))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if ok && strings.HasPrefix(k, "Lazy-") {
			out[k] = v
		}
	}
	return out
}

func TestParseTrailers(t *testing.T) {
	op := &task.Op{Name: "unblock", Actor: "human", From: "blocked", To: "working", Clock: 7, Host: "h1"}
	got := ParseTrailers(commitMessage(&task.Task{ID: "0123456789abcdef", Slug: "s"}, op))
	want := map[string]string{
		TrailerTask: "0123456789abcdef", TrailerOp: "unblock", TrailerActor: "human",
		TrailerFrom: "blocked", TrailerTo: "working", TrailerClock: "7", TrailerHost: "h1",
	}
	if !maps.Equal(got, want) {
		t.Errorf("trailers of lazy's own message:\n got %v\nwant %v", got, want)
	}
	for _, msg := range []string{
		"",
		"subject\r\n\r\nLazy-Op: create\r\nLazy-To: backlog\r\n", // CRLF, as an editor may save it
		"subject\n\nLazy-Op: create",                             // no final newline
		"Lazy-Op: a\nLazy-Op: b\n",                               // the last wins
		"Lazy-Op:no-space\nLazy-Op : spaced\nNot-Lazy: x\n",      // none of these is a trailer
		"Lazy-Op: a\rLazy-To: b\n",                               // a lone CR ends no line
		"Lazy-Op: \r\r\n",
	} {
		if got, want := ParseTrailers(msg), scannerTrailers(msg); !maps.Equal(got, want) {
			t.Errorf("ParseTrailers(%q) = %v, want %v", msg, got, want)
		}
	}
}

func FuzzParseTrailers(f *testing.F) {
	f.Add("subject\n\nLazy-Op: create\nLazy-To: backlog\n")
	f.Add("Lazy-Op: a\r\nLazy-To: b\r")
	f.Fuzz(func(t *testing.T, msg string) {
		if got, want := ParseTrailers(msg), scannerTrailers(msg); !maps.Equal(got, want) {
			t.Errorf("ParseTrailers(%q) = %v, want %v", msg, got, want)
		}
	})
}
