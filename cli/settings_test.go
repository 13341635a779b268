package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/pool"
	"github.com/lazyorch/lazy/proto"
)

// testSettings are settings of a git config file with body and an
// environment of env alone: a handler's Options get them in place of an
// app, as gh's tests give a command its config and IOStreams.
func testSettings(t *testing.T, body string, env map[string]string) settings {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := gitrepo.ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	return settings{cfg: cfg, getenv: func(k string) string { return env[k] }, repoDir: "/repo"}
}

func TestSettingsTurnDefaultsAndValues(t *testing.T) {
	timing, policy, err := testSettings(t, "", nil).turn()
	if err != nil || timing != (proto.Timing{}).WithDefaults() || policy.Uncommitted != proto.UncommittedCommit {
		t.Fatalf("no config: %+v %+v %v", timing, policy, err)
	}
	s := testSettings(t, "[lazy]\n\twatchdogTimeout = 7m\n\tpushBack = true\n\tsetup = \"  make deps  \"\n\tcopyFiles = .env\n", map[string]string{"LAZY_RETRY_SCALE": "0.5"})
	timing, policy, err = s.turn()
	if err != nil {
		t.Fatal(err)
	}
	if timing.WatchdogTimeout != 7*time.Minute || timing.RetryScale != 0.5 || timing.KillGrace != proto.DefaultKillGrace {
		t.Errorf("timing: %+v", timing)
	}
	if policy.Uncommitted != proto.UncommittedPushBack || policy.Setup != "make deps" || len(policy.CopyFiles) != 1 || policy.CopyFiles[0] != ".env" {
		t.Errorf("policy: %+v", policy)
	}
}

// A bad value is the error beside the defaults, never in place of them,
// so that only what launches a turn refuses with it.
func TestSettingsTurnBadValuesKeepTheDefaults(t *testing.T) {
	for _, c := range []struct {
		body string
		env  map[string]string
		want string
	}{
		{"[lazy]\n\twatchdogTimeout = banana\n", nil, "lazy.watchdogTimeout"},
		{"[lazy]\n\tuncommitted = sometimes\n", nil, "lazy.uncommitted"},
		{"[lazy]\n\tcopyFiles = ../secret\n", nil, "lazy.copyFiles"},
		{"", map[string]string{"LAZY_RETRY_SCALE": "-1"}, "LAZY_RETRY_SCALE"},
	} {
		timing, _, err := testSettings(t, c.body, c.env).turn()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %v: error %v, want one naming %s", c.body, c.env, err, c.want)
		}
		if timing.WatchdogTimeout != proto.DefaultWatchdogTimeout {
			t.Errorf("%q: timing %+v, want the defaults", c.body, timing)
		}
	}
}

// The editor follows git's order: GIT_EDITOR, core.editor, VISUAL,
// EDITOR, vi.
func TestSettingsEditorOrder(t *testing.T) {
	env := map[string]string{"GIT_EDITOR": "ge", "VISUAL": "vis", "EDITOR": "ed"}
	if e := testSettings(t, "[core]\n\teditor = ce\n", env).editor(); e != "ge" {
		t.Errorf("GIT_EDITOR set: %q", e)
	}
	delete(env, "GIT_EDITOR")
	if e := testSettings(t, "[core]\n\teditor = ce\n", env).editor(); e != "ce" {
		t.Errorf("core.editor set: %q", e)
	}
	if e := testSettings(t, "", env).editor(); e != "vis" {
		t.Errorf("VISUAL set: %q", e)
	}
	delete(env, "VISUAL")
	if e := testSettings(t, "", env).editor(); e != "ed" {
		t.Errorf("EDITOR set: %q", e)
	}
	if e := testSettings(t, "", nil).editor(); e != "vi" {
		t.Errorf("nothing set: %q", e)
	}
}

func TestSettingsPool(t *testing.T) {
	if d, err := testSettings(t, "", nil).poolMaxLease(); err != nil || d != pool.DefaultMaxLease {
		t.Errorf("default max lease: %v %v", d, err)
	}
	if d, err := testSettings(t, "[lazy \"pool\"]\n\tmaxLease = 90s\n", nil).poolMaxLease(); err != nil || d != 90*time.Second {
		t.Errorf("max lease 90s: %v %v", d, err)
	}
	if _, err := testSettings(t, "[lazy \"pool\"]\n\tmaxLease = 0s\n", nil).poolMaxLease(); err == nil || !strings.Contains(err.Error(), pool.MaxLeaseKey) {
		t.Errorf("max lease 0s: %v", err)
	}
	s := testSettings(t, "[lazy \"runner\"]\n\tagents = Claude, exec\n\tagents = codex claude\n", nil)
	if got := strings.Join(s.runnerAgents(), " "); got != "claude exec codex" {
		t.Errorf("runner agents: %q", got)
	}
}

func TestSettingsStartInput(t *testing.T) {
	in, err := testSettings(t, "", nil).startInput("", "")
	if err != nil || in.Agent != "claude" || in.RepoDir != "/repo" || in.Sandbox != nil {
		t.Errorf("defaults: %+v %v", in, err)
	}
	if in, err = testSettings(t, "", nil).startInput("", "make it"); err != nil || in.Agent != "exec" || strings.Join(in.ExecCommand, " ") != "make it" {
		t.Errorf("a command names the exec agent: %+v %v", in, err)
	}
	s := testSettings(t, "[lazy]\n\tagent = codex\n\tworktreeDir = /wt\n\tsandbox = on\n[lazy \"sandbox\"]\n\tnetwork = off\n", nil)
	if in, err = s.startInput("", ""); err != nil || in.Agent != "codex" || in.WorktreeDir != "/wt" || in.Sandbox == nil || in.Sandbox.Network != "off" {
		t.Errorf("configured: %+v %v", in, err)
	}
	if _, err := testSettings(t, "[lazy]\n\tsandbox = maybe\n", nil).startInput("", ""); err == nil || !strings.Contains(err.Error(), "lazy.sandbox") {
		t.Errorf("bad lazy.sandbox: %v", err)
	}
}
