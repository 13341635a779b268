package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// lazy config shows each key's effective value and where it comes from:
// the repository, the user's global file, or the default; a bad value
// with its fix, and a key lazy does not read with the one it may mean.
func TestConfigShowsValuesAndOrigins(t *testing.T) {
	dir := testrepo.New(t)
	global := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(global, []byte("[lazy]\n\tagent = codex\n\twatchdogTimeout = 5m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	testrepo.Git(t, dir, "config", "lazy.watchdogTimeout", "45m")
	testrepo.Git(t, dir, "config", "lazy.gate.timeout", "banana")
	testrepo.Git(t, dir, "config", "--add", "lazy.agent.allow", "go test ./...")
	testrepo.Git(t, dir, "config", "--add", "lazy.agent.allow", "make lint")
	testrepo.Git(t, dir, "config", "lazy.gate.timout", "5m")

	out, errs, code := runCLI(t, "-C", dir, "config", "--json")
	if code != 0 || errs != "" {
		t.Fatalf("lazy config --json: exit %d %q", code, errs)
	}
	var rows []configSetting
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	by := map[string]configSetting{}
	for _, r := range rows {
		by[r.Name] = r
	}
	local := filepath.Join(dir, ".git", "config")
	for name, want := range map[string]configSetting{
		"lazy.agent":           {Value: "codex", Scope: "global", File: global},
		"lazy.watchdogTimeout": {Value: "45m", Scope: "local", File: local},
		"lazy.sandbox":         {Scope: "default", Default: "off"},
	} {
		got := by[name]
		if got.Value != want.Value || got.Scope != want.Scope || got.File != want.File || (want.Default != "" && got.Default != want.Default) {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if got := by["lazy.agent.allow"].Values; strings.Join(got, "|") != "go test ./...|make lint" {
		t.Errorf("lazy.agent.allow: %q", got)
	}
	if e := by["lazy.gate.timeout"].Error; !strings.Contains(e, `lazy.gate.timeout = "banana"`) || !strings.Contains(e, "git config lazy.gate.timeout 10m") {
		t.Errorf("lazy.gate.timeout's error: %q", e)
	}
	if r := by["lazy.gate.timout"]; r.Known || r.Value != "5m" {
		t.Errorf("an unknown key: %+v", r)
	}

	out, _, code = runCLI(t, "-C", dir, "config", "--set")
	for _, want := range []string{
		"lazy.agent ", "global " + global, "local " + local,
		`! git config lazy.gate.timeout = "banana" is not a duration above 0; fix it with git config lazy.gate.timeout 10m`,
		"! lazy.gate.timout is set but lazy does not read it; did you mean lazy.gate.timeout?",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("lazy config --set lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "lazy.sandbox ") {
		t.Errorf("--set lists a default:\n%s", out)
	}
	out, _, _ = runCLI(t, "-C", dir, "config", "lazy.gate")
	if !strings.Contains(out, "lazy.gate.parallel") || strings.Contains(out, "lazy.agent") {
		t.Errorf("lazy config lazy.gate:\n%s", out)
	}
	if _, errs, code := runCLI(t, "-C", dir, "config", "lazy.nothing"); code != 1 || !strings.Contains(errs, "no lazy setting matches lazy.nothing") {
		t.Errorf("lazy config lazy.nothing: exit %d %q", code, errs)
	}
}

// A bad value stops the commands that use it, once, with the key, the
// value and the fix; the others run as if it were not there.
func TestBadConfigValueStopsOnlyItsUsers(t *testing.T) {
	dir := testrepo.New(t)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(t.TempDir(), "none"))
	t.Setenv("LAZY_NO_DAEMON", "1")
	t.Setenv("LAZY_ACTOR", "")
	if _, errs, code := runCLI(t, "-C", dir, "create", "a task"); code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	for _, kv := range [][2]string{{"lazy.watchdogTimeout", "banana"}, {"lazy.gc.looseObjects", "many"}, {"lazy.uncommitted", "sometimes"}} {
		testrepo.Git(t, dir, "config", kv[0], kv[1])
	}
	for _, args := range [][]string{{"list"}, {"comment", "a-task", "-m", "hi"}, {"show", "a-task"}, {"create", "another"}, {"close", "another", "-m", "dup"}} {
		if _, errs, code := runCLI(t, append([]string{"-C", dir}, args...)...); code != 0 || errs != "" {
			t.Errorf("lazy %v with bad turn settings: exit %d %q", args, code, errs)
		}
	}
	_, errs, code := runCLI(t, "-C", dir, "start", "a-task", "--command", "true")
	if code != 1 || !strings.Contains(errs, `git config lazy.watchdogTimeout = "banana" is not a duration above 0; fix it with git config lazy.watchdogTimeout 30m`) ||
		!strings.Contains(errs, `lazy.uncommitted = "sometimes"`) || strings.Count(errs, "banana") != 1 {
		t.Errorf("start with a bad lazy.watchdogTimeout: exit %d %q", code, errs)
	}
	if out, _, _ := runCLI(t, "-C", dir, "show", "a-task", "--json"); !strings.Contains(out, `"status": "backlog"`) {
		t.Errorf("the refused start changed the task:\n%s", out)
	}
	if _, errs, code := runCLI(t, "-C", dir, "housekeep", "--auto"); code != 1 || !strings.Contains(errs, `git config lazy.gc.looseObjects = "many" is not a number; fix it with git config lazy.gc.looseObjects 4000`) {
		t.Errorf("housekeep --auto: exit %d %q", code, errs)
	}
}
