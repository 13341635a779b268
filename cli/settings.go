package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/configkeys"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/pool"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/reconcile"
	"github.com/lazyorch/lazy/sandbox"
	"github.com/lazyorch/lazy/session"
)

// settings is lazy's configuration as the commands consume it: git config
// lazy.* (one reading of it), the environment lazy reads, and the
// repository's directory the settings resolve against. It is the narrow
// dependency a command's Options take instead of the whole app, so that
// a handler is tested with a config and an environment of its own.
type settings struct {
	cfg    *gitrepo.Config
	getenv func(string) string
	// repoDir is the main worktree (gitDir in a bare repository), gitDir
	// the common git directory.
	repoDir, gitDir string
}

// settings is the configuration this run read (app.cfg).
func (a *app) settings() settings {
	return settings{cfg: a.cfg, getenv: a.getenv, repoDir: a.repoDir(), gitDir: a.repo.CommonDir}
}

// freshSettings are the settings of the repository's git config as it is
// now: a long-lived process (the daemon, lazy mcp) must start work under
// today's lazy.sandbox, not the one it read when it began.
func (a *app) freshSettings() settings {
	s := a.settings()
	if cfg, err := a.repo.Config(); err == nil {
		s.cfg = cfg
	}
	return s
}

// looseObjectLimit is git config lazy.gc.looseObjects (default 4000);
// a bad value is the error, with 0 (no automatic housekeeping).
func looseObjectLimit(cfg *gitrepo.Config) (int, error) {
	n, err := cfg.Int("lazy.gc.looseObjects", 4000)
	if err == nil && n < 0 {
		v, _ := cfg.Get("lazy.gc.looseObjects")
		err = configkeys.Invalid("lazy.gc.looseObjects", v, "is negative")
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

// turn reads what every turn's supervisor gets (timing and
// policy). A bad value is returned as the error beside the defaults, not
// in place of them: only the operations that launch a turn refuse with
// it (wire.Env.TurnConfigErr), so lazy.watchdogTimeout = banana stops
// lazy start and leaves lazy comment alone.
func (s settings) turn() (proto.Timing, proto.Policy, error) {
	timing, terr := s.timing()
	if terr != nil {
		timing = proto.Timing{}.WithDefaults()
	}
	policy, perr := s.policy()
	return timing, policy, errors.Join(terr, perr)
}

// policy reads the turn configuration every turn gets: lazy.agent.allow,
// lazy.uncommitted (with lazy.pushBack, its older spelling),
// lazy.setup and lazy.copyFiles.
func (s settings) policy() (proto.Policy, error) {
	p := proto.Policy{Allow: s.cfg.All("lazy.agent.allow"), CopyFiles: s.cfg.All("lazy.copyFiles")}
	if err := agent.CheckAllow(p.Allow); err != nil {
		return p, err
	}
	p.Setup, _ = s.cfg.Get("lazy.setup")
	p.Setup = strings.TrimSpace(p.Setup)
	for _, f := range p.CopyFiles {
		if f = strings.TrimSpace(f); f == "" || filepath.IsAbs(f) || strings.HasPrefix(filepath.Clean(f), "..") {
			return p, fmt.Errorf("git config lazy.copyFiles = %q is not a path inside the repository; give one relative to its root, such as .env or config/*.local", f)
		}
	}
	switch v, _ := s.cfg.Get("lazy.uncommitted"); strings.TrimSpace(v) {
	case "":
		// lazy.pushBack true, from before lazy.uncommitted, still asks
		// the agent first.
		pushBack, err := s.cfg.Bool("lazy.pushBack", false)
		if err != nil {
			return p, err
		}
		p.Uncommitted = proto.UncommittedCommit
		if pushBack {
			p.Uncommitted = proto.UncommittedPushBack
		}
	case proto.UncommittedCommit, proto.UncommittedPushBack, proto.UncommittedKeep:
		p.Uncommitted = strings.TrimSpace(v)
	default:
		return p, configkeys.Invalid("lazy.uncommitted", v, "is not commit, push-back or keep")
	}
	return p, nil
}

// timing reads the supervisor's clocks: git config lazy.watchdogTimeout,
// lazy.watchdogKillGrace and lazy.unreachableTimeout (Go durations such
// as 30m), and
// LAZY_RETRY_SCALE, a multiplier on retry delays that tests use.
func (s settings) timing() (proto.Timing, error) {
	var t proto.Timing
	for key, dst := range map[string]*time.Duration{"lazy.watchdogTimeout": &t.WatchdogTimeout, "lazy.watchdogKillGrace": &t.KillGrace, "lazy.unreachableTimeout": &t.UnreachableTimeout} {
		if v, ok := s.cfg.Get(key); ok && v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return t, configkeys.Invalid(key, v, "is not a duration above 0")
			}
			*dst = d
		}
	}
	if v := s.getenv("LAZY_RETRY_SCALE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return t, fmt.Errorf("LAZY_RETRY_SCALE=%q is not a positive number", v)
		}
		t.RetryScale = f
	}
	return t.WithDefaults(), nil
}

// editor follows git's order: GIT_EDITOR, core.editor, VISUAL, EDITOR.
func (s settings) editor() string {
	if e := s.getenv("GIT_EDITOR"); e != "" {
		return e
	}
	if e, ok := s.cfg.Get("core.editor"); ok && e != "" {
		return e
	}
	for _, k := range []string{"VISUAL", "EDITOR"} {
		if e := s.getenv(k); e != "" {
			return e
		}
	}
	return "vi"
}

// startInput resolves the agent and command of a start with the
// repository's defaults (lazy.agent, lazy.exec.command,
// lazy.claude.permissionMode, lazy.worktreeDir, lazy.sandbox.*).
func (s settings) startInput(agentName, command string) (session.StartInput, error) {
	cfg := s.cfg
	agentName, command = sanitize.Field(agentName), sanitize.Field(command)
	explicit := command != ""
	if command == "" {
		command, _ = cfg.Get("lazy.exec.command")
	}
	if agentName == "" {
		if explicit {
			agentName = "exec"
		} else if v, ok := cfg.Get("lazy.agent"); ok && v != "" {
			agentName = v
		} else {
			agentName = "claude"
		}
	}
	// Unset, the posture decides (agent.TurnPermissions).
	mode, _ := cfg.Get("lazy.claude.permissionMode")
	mode = strings.TrimSpace(mode)
	in := session.StartInput{Agent: agentName, ExecCommand: strings.Fields(command), PermissionMode: mode, RepoDir: s.repoDir}
	if dir, ok := cfg.Get("lazy.worktreeDir"); ok && dir != "" {
		in.WorktreeDir = dir
	}
	sb, err := sandbox.FromConfig(cfg, "")
	if err != nil {
		return in, err
	}
	in.Sandbox = sb
	if in.SandboxIfAsked, err = sandbox.FromConfig(cfg, "on"); err != nil {
		return in, err
	}
	return in, nil
}

// sandbox reads the sandbox of git config (sandbox.FromConfig).
func (s settings) sandbox(override string) (*proto.Sandbox, error) {
	return sandbox.FromConfig(s.cfg, override)
}

// poolMaxLease is git config lazy.pool.maxLease: the longest lease the
// pool accepts (a claim that says it holds longer counts as expired).
func (s settings) poolMaxLease() (time.Duration, error) {
	v, ok := s.cfg.Get(pool.MaxLeaseKey)
	if !ok || strings.TrimSpace(v) == "" {
		return pool.DefaultMaxLease, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return 0, configkeys.Invalid(pool.MaxLeaseKey, v, "is not a duration above 0")
	}
	return d, nil
}

// runnerAgents is lazy.runner.agents: the agents a runner here may run.
func (s settings) runnerAgents() []string {
	var out []string
	for _, v := range s.cfg.All("lazy.runner.agents") {
		for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
			if f = strings.ToLower(strings.TrimSpace(f)); f != "" && !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// poolRemote is the remote the pool lives on: the flag, else git config
// lazy.pool.remote, else the repository's default remote.
func (s settings) poolRemote(ctx context.Context, flag string) (string, error) {
	if flag == "" {
		flag, _ = s.cfg.Get("lazy.pool.remote")
	}
	return defaultRemote(ctx, s.gitDir, strings.TrimSpace(flag))
}

// forgeSync configures the daemon's remote-sync sweep from git config:
// lazy.forge.syncInterval (default 1m, per forge), lazy.forge.autoDeliver
// (default true) and lazy.forge.autoFix (default false).
func (s settings) forgeSync() (*reconcile.ForgeSync, error) {
	fs := &reconcile.ForgeSync{}
	if v, ok := s.cfg.Get("lazy.forge.syncInterval"); ok && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, configkeys.Invalid("lazy.forge.syncInterval", v, "is not a duration above 0")
		}
		fs.Interval = d
	}
	var err error
	if fs.AutoDeliver, err = s.cfg.Bool("lazy.forge.autoDeliver", true); err != nil {
		return nil, err
	}
	if fs.AutoFix, err = s.cfg.Bool("lazy.forge.autoFix", false); err != nil {
		return nil, err
	}
	return fs, nil
}
