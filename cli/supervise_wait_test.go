package cli

import (
	"io"
	"strings"
	"testing"
)

// An early supervisor runs only on the line go: an end of input (the
// start aborted, or its process died) or anything else ends it.
func TestAwaitGoRunsOnlyOnGo(t *testing.T) {
	for in, want := range map[string]bool{
		"go\n":     true,
		"go\nmore": true,
		"":         false,
		"go":       false,
		"gox\n":    false,
		"\n":       false,
		"no\n":     false,
		"GO\n":     false,
	} {
		if got := awaitGo(strings.NewReader(in)); got != want {
			t.Errorf("awaitGo(%q) = %v, want %v", in, got, want)
		}
	}
	if awaitGo(nil) {
		t.Error("awaitGo with no stdin ran")
	}
	r, w := io.Pipe()
	done := make(chan bool)
	go func() { done <- awaitGo(r) }()
	_ = w.Close()
	if <-done {
		t.Error("awaitGo ran when its pipe was closed unwritten")
	}
}
