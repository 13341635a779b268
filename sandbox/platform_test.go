package sandbox

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// Off Linux the sandbox refuses in one sentence that names the reason
// (bubblewrap needs Linux) and what to do, instead of asking for a
// Debian package on a Mac.
func TestPlatformRefusalOffLinux(t *testing.T) {
	if err := platformRefusal("linux"); err != nil {
		t.Fatalf("linux: %v", err)
	}
	for goos, want := range map[string]string{
		"darwin":  "on macOS run lazy inside a Linux VM or container",
		"windows": "on Windows run lazy in WSL",
		"freebsd": "this is freebsd",
	} {
		err := platformRefusal(goos)
		if err == nil {
			t.Fatalf("%s: no refusal", goos)
		}
		msg := err.Error()
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(msg, "needs Linux (bubblewrap)") ||
			!strings.Contains(msg, want) || !strings.Contains(msg, "set lazy.sandbox to off") || strings.Contains(msg, "apt-get") {
			t.Errorf("%s: %q", goos, msg)
		}
	}
}

// Check and Wrap both ask platformRefusal first: on this machine's OS
// they refuse exactly when it does.
func TestCheckAndWrapRefuseOffLinux(t *testing.T) {
	want := platformRefusal(runtime.GOOS)
	if want == nil {
		t.Skip("this is Linux: the refusal is for other systems (TestPlatformRefusalOffLinux)")
	}
	if err := Check(t.Context()); err == nil || err.Error() != want.Error() {
		t.Errorf("Check: %v, want %v", err, want)
	}
	if _, err := Wrap([]string{"true"}, Policy{Worktree: "/w", CommonDir: "/c"}); err == nil || err.Error() != want.Error() {
		t.Errorf("Wrap: %v, want %v", err, want)
	}
}
