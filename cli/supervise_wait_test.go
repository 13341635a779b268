package cli

import (
	"io"
	"os"
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

// Go tells a live supervisor its line, and says so when the supervisor is
// gone (its end of the pipe closed), so that the start launches another.
func TestGoSignalReachesALiveSupervisorAndFailsForAGoneOne(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := (goSignal{w}).Go(); err != nil {
		t.Fatalf("go to a live supervisor: %v", err)
	}
	if !awaitGo(r) {
		t.Fatal("the supervisor did not read go")
	}
	_ = r.Close()

	r, w, err = os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Close() // the supervisor died before the turn was recorded
	if err := (goSignal{w}).Go(); err == nil {
		t.Fatal("go to a supervisor that is gone reported success: the start would launch none")
	}
}
