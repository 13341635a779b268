package agent

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// codexModelLine is a top-level `model = "..."` line of Codex's
// config.toml.
var codexModelLine = lazyRegexp(`^\s*model\s*=\s*"([^"\\]+)"\s*(?:#.*)?$`)

// CodexConfiguredModel is the model Codex runs when it is not given
// --model: the top-level `model` of its config.toml ($CODEX_HOME, else
// ~/.codex), read from env as the agent was started with it; "" when
// that file does not name one (Codex then runs its built-in default,
// which lazy does not guess). Codex's JSON output names no model, and
// lazy prices a turn by its model.
func CodexConfiguredModel(env []string) string {
	get := func(k string) string {
		v := ""
		for _, kv := range env {
			if rest, ok := strings.CutPrefix(kv, k+"="); ok {
				v = rest // the last one wins, as for a process
			}
		}
		return v
	}
	home := get("CODEX_HOME")
	if home == "" {
		h := get("HOME")
		if h == "" {
			return ""
		}
		home = filepath.Join(h, ".codex")
	}
	f, err := os.Open(filepath.Join(home, "config.toml"))
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "[") {
			return "" // a table: the top level is over
		}
		if m := codexModelLine.FindStringSubmatch(line); m != nil && ValidModel(m[1]) == nil {
			return m[1]
		}
	}
	return ""
}
