package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/sandbox"
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

	out, _, code = runCLI(t, "-C", dir, "config", "--changed")
	for _, want := range []string{
		"lazy.agent ", "global " + global, "local " + local,
		`! git config lazy.gate.timeout = "banana" is not a duration above 0; fix it with git config lazy.gate.timeout 10m`,
		"! lazy.gate.timout is set but lazy does not read it; did you mean lazy.gate.timeout?",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("lazy config --changed lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "lazy.sandbox ") {
		t.Errorf("--changed lists a default:\n%s", out)
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

// gitGet is what git itself reads of key in one file of dir's config
// ("" and false when unset there).
func gitGet(t *testing.T, dir, scope, key string) (string, bool) {
	t.Helper()
	out, err := testrepo.GitErr(dir, "config", "--"+scope, "--get-all", key)
	if err != nil {
		return "", false
	}
	return out, true
}

// lazy config KEY VALUE sets the key in the repository's config after
// the checks a read applies; a refused value says what is wrong and a
// value that works, and changes nothing; --unset removes it; --json
// says what changed.
func TestConfigSetsWhatItIsTold(t *testing.T) {
	dir := testrepo.New(t)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(t.TempDir(), "global"))
	out, errs, code := runCLI(t, "-C", dir, "config", "lazy.budget.task", "5")
	if code != 0 || errs != "" {
		t.Fatalf("lazy config lazy.budget.task 5: exit %d %q", code, errs)
	}
	local := filepath.Join(dir, ".git", "config")
	if v, ok := gitGet(t, dir, "local", "lazy.budget.task"); !ok || v != "5" {
		t.Fatalf("git config reads %q (%v) after lazy config lazy.budget.task 5", v, ok)
	}
	if want := "lazy.budget.task = 5 in the repository's config " + local + " (it was not set there)"; !strings.Contains(out, want) {
		t.Fatalf("lazy config said %q, want %q", out, want)
	}

	// A bad value is refused with the fix, and the config keeps 5.
	for _, c := range []struct{ key, value, want string }{
		{"lazy.budget.task", "five", `lazy.budget.task = "five" is not an amount in US dollars from 0 (no spend allowed) to 1000000000000, so lazy config changed nothing; for example: lazy config lazy.budget.task 10`},
		{"lazy.budget.task", "", "go back to the default with lazy config --unset lazy.budget.task"},
		{"lazy.gate.timeout", "banana", `lazy.gate.timeout = "banana" is not a duration above 0, so lazy config changed nothing; for example: lazy config lazy.gate.timeout 10m`},
		{"lazy.sandbox", "maybe", "is not one of on, off"},
		{"lazy.notify", "ftp://host/s3cret", "is not a target"},
		{"lazy.notify.events", "blocked,exploded", `names "exploded", which is not a kind`},
		{"lazy.notify.perMinute", "0", "is not a number above 0"},
		{"lazy.sandbox.expose", "relative/path", "is not an absolute path"},
		{"lazy.sandbox.network", "https://evil.example/x", "is not a host name"},
		{"lazy.pushRefspec", "+refs/heads/*:refs/heads/*", "would force"},
	} {
		_, errs, code := runCLI(t, "-C", dir, "config", c.key, c.value)
		if code != 1 || !strings.Contains(errs, c.want) || strings.Contains(errs, "s3cret") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("lazy config %s %q: exit %d %q, want one line with %q", c.key, c.value, code, errs, c.want)
		}
		if _, set := gitGet(t, dir, "local", c.key); set && c.key != "lazy.budget.task" {
			t.Errorf("the refused %s was written", c.key)
		}
	}
	if v, _ := gitGet(t, dir, "local", "lazy.budget.task"); v != "5" {
		t.Fatalf("a refused value changed lazy.budget.task to %q", v)
	}

	// A key lazy does not read: did you mean; another program's key: git config.
	if _, errs, code := runCLI(t, "-C", dir, "config", "lazy.budget.tsk", "5"); code != 1 || !strings.Contains(errs, "lazy.budget.tsk is not a key lazy reads, so lazy config changed nothing; did you mean lazy.budget.task?") {
		t.Errorf("a misspelt key: exit %d %q", code, errs)
	}
	if _, errs, code := runCLI(t, "-C", dir, "config", "user.name", "x"); code != 1 || !strings.Contains(errs, "set user.name with git config") {
		t.Errorf("user.name: exit %d %q", code, errs)
	}
	if _, errs, code := runCLI(t, "-C", dir, "config", "lazy.agent.allow", "go", "test"); code != 1 || !strings.Contains(errs, "lazy config lazy.agent.allow 'go test'") {
		t.Errorf("an unquoted value: exit %d %q", code, errs)
	}

	// The same value again: nothing changes, and --json says so.
	out, _, code = runCLI(t, "-C", dir, "config", "lazy.budget.task", "5", "--json")
	var ch configChange
	if err := json.Unmarshal([]byte(out), &ch); err != nil || code != 0 {
		t.Fatalf("--json: %v %q", err, out)
	}
	if ch.Changed || ch.Action != "set" || ch.Scope != "local" || ch.File != local || strings.Join(ch.After, ",") != "5" || ch.Effective.Value != "5" || ch.Effective.Scope != "local" {
		t.Fatalf("the same value again: %+v", ch)
	}
	out, _, _ = runCLI(t, "-C", dir, "config", "lazy.budget.task", "7.50", "--json")
	if err := json.Unmarshal([]byte(out), &ch); err != nil || !ch.Changed || strings.Join(ch.Before, ",") != "5" || strings.Join(ch.After, ",") != "7.50" {
		t.Fatalf("a new value: %+v (%v)", ch, err)
	}

	// --unset, then an --unset of what is not there.
	out, errs, code = runCLI(t, "-C", dir, "config", "--unset", "lazy.budget.task")
	if code != 0 || !strings.Contains(out, "lazy.budget.task: removed from the repository's config") || !strings.Contains(out, "(it was 7.50)") || !strings.Contains(out, "It is at its default now: none.") {
		t.Fatalf("--unset: exit %d %q %q", code, out, errs)
	}
	if _, set := gitGet(t, dir, "local", "lazy.budget.task"); set {
		t.Fatal("--unset left the key")
	}
	out, _, code = runCLI(t, "-C", dir, "config", "--unset", "lazy.budget.task")
	if code != 0 || !strings.Contains(out, "is not set in the repository's config") || !strings.Contains(out, "nothing changed") {
		t.Fatalf("--unset of an unset key: exit %d %q", code, out)
	}

	// The listing filter was --set; it is --changed now, and --set says so.
	if _, errs, code := runCLI(t, "-C", dir, "config", "--set"); code != 1 || !strings.Contains(errs, "--set is now --changed") {
		t.Errorf("--set: exit %d %q", code, errs)
	}
}

// A repeatable key takes --add and --replace-all; a plain set over
// values it has is refused rather than dropping them; --unset KEY VALUE
// removes that one. A webhook's secret never shows.
func TestConfigRepeatableKeys(t *testing.T) {
	dir := testrepo.New(t)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(t.TempDir(), "global"))
	hook := "json:https://hooks.example.com/T000/s3cret"
	for _, args := range [][]string{
		{"config", "lazy.notify", hook},
		{"config", "--add", "lazy.notify", "desktop"},
		{"config", "--add", "lazy.agent.allow", "go test ./..."},
		{"config", "--add", "--", "lazy.agent.allow", "-rf"}, // after --, a value that looks like an option is a value
	} {
		out, errs, code := runCLI(t, append([]string{"-C", dir}, args...)...)
		if code != 0 || strings.Contains(out+errs, "s3cret") {
			t.Fatalf("lazy %v: exit %d %q %q", args, code, out, errs)
		}
	}
	if v, _ := gitGet(t, dir, "local", "lazy.notify"); v != hook+"\ndesktop" {
		t.Fatalf("lazy.notify reads %q", v)
	}
	if v, _ := gitGet(t, dir, "local", "lazy.agent.allow"); v != "go test ./...\n-rf" {
		t.Fatalf("lazy.agent.allow reads %q", v)
	}
	_, errs, code := runCLI(t, "-C", dir, "config", "lazy.notify", "https://ntfy.sh/other")
	if code != 1 || !strings.Contains(errs, "lazy.notify already has 2 values in the repository's config; add this one beside them with lazy config --add lazy.notify VALUE, or replace them with lazy config --replace-all lazy.notify VALUE") {
		t.Fatalf("a plain set over two values: exit %d %q", code, errs)
	}
	out, _, _ := runCLI(t, "-C", dir, "config", "--add", "lazy.notify", "desktop")
	if !strings.Contains(out, "already has desktop") {
		t.Fatalf("adding a value it has: %q", out)
	}
	out, _, code = runCLI(t, "-C", dir, "config", "--unset", "lazy.notify", "desktop", "--json")
	var ch configChange
	if err := json.Unmarshal([]byte(out), &ch); err != nil || code != 0 || !ch.Changed || strings.Join(ch.After, ",") != "json:https://hooks.example.com/…" || strings.Contains(out, "s3cret") {
		t.Fatalf("--unset one value: %+v %v %s", ch, err, out)
	}
	if _, _, code := runCLI(t, "-C", dir, "config", "--replace-all", "lazy.agent.allow", "make test"); code != 0 {
		t.Fatal("--replace-all failed")
	}
	if v, _ := gitGet(t, dir, "local", "lazy.agent.allow"); v != "make test" {
		t.Fatalf("after --replace-all lazy.agent.allow reads %q", v)
	}
	if _, errs, code := runCLI(t, "-C", dir, "config", "--add", "lazy.budget.task", "5"); code != 1 || !strings.Contains(errs, "takes one value, so --add and --replace-all do not apply") {
		t.Fatalf("--add on a single-valued key: exit %d %q", code, errs)
	}
	// lazy.notify.events repeats too: every value's kinds count (and
	// blocked brings pick, which stands for a picked group's attempts).
	for _, v := range []string{"blocked", "finished,conflict"} {
		if _, errs, code := runCLI(t, "-C", dir, "config", "--add", "lazy.notify.events", v); code != 0 {
			t.Fatalf("--add lazy.notify.events %s: exit %d %q", v, code, errs)
		}
	}
	out, _, _ = runCLI(t, "-C", dir, "notify", "--json")
	var listed struct{ Events []string }
	if err := json.Unmarshal([]byte(out), &listed); err != nil || strings.Join(listed.Events, ",") != "blocked,conflict,finished,pick" {
		t.Fatalf("lazy notify after two lazy.notify.events values: %s (%v)", out, err)
	}
	// The listing shows the webhook as lazy notify does.
	out, _, _ = runCLI(t, "-C", dir, "config", "lazy.notify")
	if strings.Contains(out, "s3cret") || !strings.Contains(out, "json:https://hooks.example.com/…") {
		t.Fatalf("the listing of lazy.notify:\n%s", out)
	}
}

// --global writes the user's config (a temporary HOME here), also
// outside any repository, and says when the repository's own value wins.
func TestConfigGlobal(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	os.Unsetenv("GIT_CONFIG_GLOBAL")
	dir := testrepo.New(t)
	testrepo.Git(t, dir, "config", "lazy.agent", "codex")
	out, errs, code := runCLI(t, "-C", dir, "config", "--global", "lazy.agent", "claude")
	if code != 0 {
		t.Fatalf("--global: exit %d %q", code, errs)
	}
	if v, ok := gitGet(t, dir, "global", "lazy.agent"); !ok || v != "claude" {
		t.Fatalf("git config --global reads %q", v)
	}
	b, _ := os.ReadFile(filepath.Join(home, ".gitconfig"))
	if !strings.Contains(string(b), "claude") {
		t.Fatalf("~/.gitconfig:\n%s", b)
	}
	if !strings.Contains(out, "In this repository its own value codex wins over yours") {
		t.Fatalf("--global did not say the local value wins: %q", out)
	}
	if v, _ := gitGet(t, dir, "local", "lazy.agent"); v != "codex" {
		t.Fatalf("--global changed the repository's value to %q", v)
	}
	// Outside any repository.
	out, errs, code = runCLI(t, "-C", t.TempDir(), "config", "--global", "lazy.watch.bell", "false")
	if code != 0 || !strings.Contains(out, "lazy.watch.bell = false in the global config") {
		t.Fatalf("--global outside a repository: exit %d %q %q", code, out, errs)
	}
	// Unsetting the local value lets the global one through.
	out, _, _ = runCLI(t, "-C", dir, "config", "--unset", "lazy.agent")
	if !strings.Contains(out, "It reads claude now, from the global config") {
		t.Fatalf("--unset with a global value: %q", out)
	}
	if _, errs, code := runCLI(t, "-C", dir, "config", "--global"); code != 1 || !strings.Contains(errs, "--global goes with a change") {
		t.Fatalf("--global alone: exit %d %q", code, errs)
	}
}

// Every row of the listing is complete: a default that is a list says
// what is in it.
func TestConfigListingIsComplete(t *testing.T) {
	dir := testrepo.New(t)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(t.TempDir(), "none"))
	out, _, code := runCLI(t, "-C", dir, "config", "--json")
	var rows []configSetting
	if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 {
		t.Fatal(err)
	}
	for _, r := range rows {
		if strings.TrimSpace(r.Default) == "" || strings.TrimSpace(r.Help) == "" || strings.Contains(strings.ToLower(r.Default+r.Help), "see below") {
			t.Errorf("%s: default %q, help %q", r.Name, r.Default, r.Help)
		}
		if r.Name == "lazy.sandbox.hide" {
			for _, h := range sandbox.DefaultHidden {
				if !strings.Contains(r.Default, "~/"+h) {
					t.Errorf("lazy.sandbox.hide's default does not name %s: %q", h, r.Default)
				}
			}
		}
	}
}

// The sandbox reads lazy.sandbox.hide's ~/ as $HOME (git config does not
// expand it): the README's and lazy config's examples write it so.
func TestSandboxConfigReadsTildeAsHome(t *testing.T) {
	dir := testrepo.New(t)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(t.TempDir(), "none"))
	for _, v := range []string{"~/.config/my-secrets", "/srv/keys", ".vault"} {
		if _, errs, code := runCLI(t, "-C", dir, "config", "--add", "lazy.sandbox.hide", v); code != 0 {
			t.Fatalf("--add lazy.sandbox.hide %s: %q", v, errs)
		}
	}
	runCLI(t, "-C", dir, "config", "lazy.sandbox", "on")
	a := &app{dir: dir}
	if err := a.open(); err != nil {
		t.Fatal(err)
	}
	sb, err := a.settings().sandbox("")
	if err != nil || sb == nil {
		t.Fatalf("sandboxConfig: %+v %v", sb, err)
	}
	if got := strings.Join(sb.Hidden, "|"); got != ".config/my-secrets|/srv/keys|.vault" {
		t.Fatalf("hidden %q", got)
	}
}
