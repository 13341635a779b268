package agent

import (
	"runtime"
	"strings"
	"testing"
)

func TestCheckCredentials(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("Claude keeps its login in the macOS keychain, which the check does not read")
	}
	env := func(vars map[string]string, files ...string) Environment {
		return Environment{Home: "/home/u", Getenv: func(k string) string { return vars[k] },
			Exists: func(p string) bool {
				for _, f := range files {
					if f == p {
						return true
					}
				}
				return false
			}}
	}
	if err := CheckCredentials("claude", env(nil)); err == nil || !strings.Contains(err.Error(), "/login") || !strings.Contains(err.Error(), "/home/u/.claude") {
		t.Fatalf("no claude credentials: %v", err)
	}
	for _, ok := range []Environment{
		env(map[string]string{"ANTHROPIC_API_KEY": "k"}),
		env(map[string]string{"CLAUDE_CODE_USE_BEDROCK": "1"}),
		env(nil, "/home/u/.claude/.credentials.json"),
		env(map[string]string{"CLAUDE_CONFIG_DIR": "/c"}, "/c/.credentials.json"),
	} {
		if err := CheckCredentials("claude", ok); err != nil {
			t.Errorf("claude with credentials refused: %v", err)
		}
	}
	if err := CheckCredentials("claude", env(map[string]string{"ANTHROPIC_API_KEY": "  "})); err == nil {
		t.Error("a blank key counts as a key")
	}
	if err := CheckCredentials("codex", env(nil)); err == nil || !strings.Contains(err.Error(), "codex login") {
		t.Fatalf("no codex credentials: %v", err)
	}
	if err := CheckCredentials("codex", env(map[string]string{"CODEX_HOME": "/x"}, "/x/auth.json")); err != nil {
		t.Fatal(err)
	}
	if err := CheckCredentials("exec", env(nil)); err != nil {
		t.Fatal(err)
	}
}
