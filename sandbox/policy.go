package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/link"
	"github.com/lazyorch/lazy/proto"
)

// For builds the policy of one agent run in worktree: the paths come
// from git's view of the worktree on disk, never from a record. agent
// names the CLI (its config directory stays writable), argv0 the binary
// to run, and spec the local decision (lazy.sandbox.*).
func For(ctx context.Context, worktree, agent, argv0 string, readOnly bool, spec *proto.Sandbox) (Policy, error) {
	gitDir, err := gitcli.New(worktree, "rev-parse", "--absolute-git-dir").String(ctx)
	if err != nil {
		return Policy{}, fmt.Errorf("sandbox: find the worktree's git directory: %w", err)
	}
	common, err := gitcli.New(worktree, "rev-parse", "--git-common-dir").String(ctx)
	if err != nil {
		return Policy{}, fmt.Errorf("sandbox: find the repository's git directory: %w", err)
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(worktree, common)
	}
	common = filepath.Clean(common)
	repoDir := ""
	if filepath.Base(common) == ".git" {
		repoDir = filepath.Dir(common) // the main checkout
	}
	lazyDir := filepath.Join(common, "lazy")
	home, _ := os.UserHomeDir()
	p := Policy{
		Worktree: worktree, ReadOnly: readOnly, RepoDir: repoDir, CommonDir: common, GitDir: gitDir,
		LazyDir: lazyDir, Socket: filepath.Join(lazyDir, link.SocketFile) /* the one file of lazy's directory the MCP proxy needs */, WorktreeRoot: filepath.Dir(worktree),
		Home: home, AgentDirs: agentDirs(agent, home), Network: NetworkOn,
	}
	if spec != nil {
		p.Hidden = spec.Hidden
		if spec.Network != "" {
			p.Network = spec.Network
		}
	}
	if repoDir == worktree {
		p.RepoDir, p.WorktreeRoot = "", "" // a chat in the main checkout
	}
	// The agent binary and lazy itself (the MCP proxy) stay visible
	// wherever they are installed, /tmp included.
	if bin, err := exec.LookPath(argv0); err == nil {
		p.Expose = append(p.Expose, resolved(bin)...)
	}
	if exe, err := os.Executable(); err == nil {
		p.Expose = append(p.Expose, resolved(exe)...)
	}
	if spec != nil {
		p.Expose = append(p.Expose, spec.Expose...)
	}
	return p, nil
}

// agentDirs are the config and credential paths each agent CLI writes.
func agentDirs(agent, home string) []string {
	if home == "" {
		return nil
	}
	switch agent {
	case "claude":
		dir := os.Getenv("CLAUDE_CONFIG_DIR")
		if dir == "" {
			dir = filepath.Join(home, ".claude")
		}
		return []string{dir, filepath.Join(home, ".claude.json")}
	case "codex":
		if dir := os.Getenv("CODEX_HOME"); dir != "" {
			return []string{dir}
		}
		return []string{filepath.Join(home, ".codex")}
	}
	return nil
}

// resolved is path and, when it is a symlink, its target.
func resolved(path string) []string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	out := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		out = append(out, real)
	}
	return out
}

// Prepare builds the policy of one confined run, as For does, and starts
// what the policy needs to run: with a network allowlist, the egress
// proxy outside the sandbox (on a short socket path: unix socket names
// are limited to 108 bytes) and the forwarder inside it. stop ends them;
// call it when the run is over, whatever happened (it is never nil).
func Prepare(ctx context.Context, worktree, agent, argv0 string, readOnly bool, spec *proto.Sandbox) (p Policy, stop func(), err error) {
	stop = func() {}
	if p, err = For(ctx, worktree, agent, argv0, readOnly, spec); err != nil {
		return p, stop, err
	}
	if p.Network != NetworkAllow {
		return p, stop, nil
	}
	dir, err := os.MkdirTemp("", "lazy-egress-")
	if err != nil {
		return p, stop, err
	}
	eg, err := StartEgress(filepath.Join(dir, "s"), spec.Allow)
	if err != nil {
		_ = os.RemoveAll(dir)
		return p, stop, err
	}
	stop = func() { eg.Close(); _ = os.RemoveAll(dir) }
	p.Egress = filepath.Join(dir, "s")
	if p.Forwarder, err = os.Executable(); err != nil {
		stop()
		return p, func() {}, err
	}
	return p, stop, nil
}
