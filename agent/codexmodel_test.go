package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// Codex's output names no model: the one its config.toml sets at the top
// level is the one it runs without --model.
func TestCodexConfiguredModel(t *testing.T) {
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(dir, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=" + home}
	if got := CodexConfiguredModel(env); got != "" {
		t.Fatalf("no config: %q", got)
	}
	write(codexHome, "# mine\nmodel_provider = \"x\"\nmodel = \"gpt-5-codex\"  # the default\n[profiles.fast]\nmodel = \"o4-mini\"\n")
	if got := CodexConfiguredModel(env); got != "gpt-5-codex" {
		t.Fatalf("~/.codex: %q", got)
	}
	// A model only in a table is not the top level's; CODEX_HOME wins.
	other := t.TempDir()
	write(other, "[profiles.fast]\nmodel = \"o4-mini\"\n")
	if got := CodexConfiguredModel(append(env, "CODEX_HOME="+other)); got != "" {
		t.Fatalf("a table's model: %q", got)
	}
	write(other, "model = \"--rf\"\n")
	if got := CodexConfiguredModel(append(env, "CODEX_HOME="+other)); got != "" {
		t.Fatalf("a model that is not a model name: %q", got)
	}
	if got := CodexConfiguredModel(nil); got != "" {
		t.Fatalf("no HOME: %q", got)
	}
}
