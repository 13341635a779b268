package configcheck

import (
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/configkeys"
)

func key(t *testing.T, name string) configkeys.Key {
	t.Helper()
	k, ok := configkeys.Lookup(name)
	if !ok {
		t.Fatalf("configkeys has no %s", name)
	}
	return k
}

// Each check is the key's reader's: by kind first, then the free-text
// keys' own functions; a value those take passes.
func TestSettingChecksAsTheReaderDoes(t *testing.T) {
	for _, c := range []struct{ key, value, want string }{
		{"lazy.sandbox", "maybe", "is not one of on, off"},
		{"lazy.sandbox.expose", "relative/path", "is not an absolute path"},
		{"lazy.sandbox.network", "https://evil.example/x", "is not a host name"},
		{"lazy.notify.perMinute", "0", "is not a number above 0"},
		{"lazy.pushRefspec", "+refs/heads/*:refs/heads/*", "would force"},
		{"lazy.sandbox.expose", "/opt/tools", ""},
		{"lazy.sandbox.network", "off", ""},
	} {
		err := Setting(key(t, c.key), c.value)
		if c.want == "" {
			if err != nil {
				t.Errorf("Setting(%s, %q) = %v, want nil", c.key, c.value, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Setting(%s, %q) = %v, want %q", c.key, c.value, err, c.want)
		}
		if nerr := NewValue(key(t, c.key), c.value); nerr == nil || !strings.Contains(nerr.Error(), "lazy config changed nothing") {
			t.Errorf("NewValue(%s, %q) = %v, want it to say nothing changed", c.key, c.value, nerr)
		}
	}
	if err := NewValue(key(t, "lazy.sandbox"), "on\noff"); err == nil || !strings.Contains(err.Error(), "is one line") {
		t.Errorf("NewValue with a line break = %v", err)
	}
}

func TestHideSecrets(t *testing.T) {
	if got := HideSecret("lazy.forge.token", "s3cret"); got != "(hidden)" {
		t.Errorf("a token prints as %q", got)
	}
	if got := HideSecrets("lazy.notify", []string{"https://hooks.example/s3cret?k=v"}); len(got) != 1 || strings.Contains(got[0], "s3cret") {
		t.Errorf("a webhook target prints as %q", got)
	}
	if got := HideSecrets("lazy.agent", nil); got == nil || len(got) != 0 {
		t.Errorf("no values hide to %#v, want an empty list", got)
	}
	if got := HideSecret("lazy.agent", "codex"); got != "codex" {
		t.Errorf("a plain value prints as %q", got)
	}
}
