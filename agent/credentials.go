package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Environment is what a credential check may look at: variables and the
// files under a home directory. Tests give their own.
type Environment struct {
	Getenv func(string) string
	Home   string
	// Exists reports whether a file exists (os.Stat by default).
	Exists func(string) bool
}

// HostEnvironment is this process's environment.
func HostEnvironment() Environment {
	home, _ := os.UserHomeDir()
	return Environment{Getenv: os.Getenv, Home: home}
}

func (e Environment) exists(p string) bool {
	if e.Exists != nil {
		return e.Exists(p)
	}
	_, err := os.Stat(p)
	return err == nil
}

func (e Environment) anyEnv(names ...string) bool {
	for _, n := range names {
		if strings.TrimSpace(e.Getenv(n)) != "" {
			return true
		}
	}
	return false
}

// CheckCredentials refuses an agent that has no credentials at all, by
// the CLI's own conventions, so a turn is not spent learning it. It
// answers nil whenever it cannot tell (a gateway URL, a key helper, a
// custom provider, the macOS keychain): credentials that exist but do
// not work are fatal_auth at run time instead.
func CheckCredentials(agentName string, e Environment) error {
	switch agentName {
	case "claude":
		if runtime.GOOS == "darwin" || e.anyEnv("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
			"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY", "ANTHROPIC_BASE_URL") {
			return nil
		}
		dir := e.Getenv("CLAUDE_CONFIG_DIR")
		if dir == "" {
			dir = filepath.Join(e.Home, ".claude")
		}
		if e.exists(filepath.Join(dir, ".credentials.json")) || e.exists(filepath.Join(dir, "settings.json")) || e.exists(filepath.Join(e.Home, ".claude.json")) {
			return nil // logged in, or settings that may name an apiKeyHelper
		}
		return fmt.Errorf("the claude agent has no credentials (no ANTHROPIC_API_KEY and no login under %s): run claude once and log in with /login, or export ANTHROPIC_API_KEY", dir)
	case "codex":
		if e.anyEnv("OPENAI_API_KEY", "CODEX_API_KEY") {
			return nil
		}
		dir := e.Getenv("CODEX_HOME")
		if dir == "" {
			dir = filepath.Join(e.Home, ".codex")
		}
		if e.exists(filepath.Join(dir, "auth.json")) || e.exists(filepath.Join(dir, "config.toml")) {
			return nil // logged in, or a config that may name another provider
		}
		return fmt.Errorf("the codex agent has no credentials (no OPENAI_API_KEY and no login under %s): run codex login, or export OPENAI_API_KEY", dir)
	}
	return nil
}
