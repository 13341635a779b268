// Package sandbox confines an agent process with bubblewrap (bwrap): the
// task's worktree and the git directories a commit needs are writable, the
// rest of the file system is read-only, and other tasks' worktrees, the
// main checkout's working files, lazy's own runtime directory and secret
// paths are not visible at all. It is a launch detail of the supervisor:
// Wrap turns an agent's argv into a bwrap argv, and nothing else changes.
// FromConfig reads the lazy.sandbox.* settings that ask for it.
package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/confine"
)

// Network policies.
const (
	NetworkOn  = confine.NetworkOn  // the agent shares the host's network (it must reach its API)
	NetworkOff = confine.NetworkOff // a new network namespace with loopback only
)

// DefaultHidden lists paths under $HOME that hold credentials an agent
// has no business reading. Each is replaced by an empty directory (or
// /dev/null for a file) inside the sandbox. lazy.sandbox.hide adds more.
var DefaultHidden = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/glab-cli",
	".kube", ".docker/config.json", ".netrc", ".git-credentials", ".npmrc", ".pypirc",
	".cargo/credentials.toml", ".password-store", ".local/share/keyrings",
}

// Policy is what one agent turn may see and change.
type Policy struct {
	// Worktree is the task's worktree: writable, or read-only when
	// ReadOnly (asks and chats).
	Worktree string
	ReadOnly bool
	// RepoDir is the main checkout; its working files are hidden.
	RepoDir string
	// CommonDir is the repository's git directory (git rev-parse
	// --git-common-dir); GitDir is the worktree's own (.git/worktrees/X).
	CommonDir, GitDir string
	// LazyDir is <common dir>/lazy: tokens, sessions and other tasks'
	// protocol files, hidden; only Socket (the daemon's, for the MCP
	// proxy) is exposed.
	LazyDir, Socket string
	// WorktreeRoot holds every task's worktree; all but this task's are
	// hidden.
	WorktreeRoot string
	// Home is $HOME; Hidden are paths relative to it (or absolute) that
	// are replaced by empty ones.
	Home   string
	Hidden []string
	// AgentDirs are the agent CLI's own config and credentials (for
	// example ~/.claude), writable as the CLI needs them.
	AgentDirs []string
	// Expose are extra paths made visible read-only, for example the
	// agent binary and lazy itself when they live under /tmp.
	Expose []string
	// Network is NetworkOn, NetworkOff or NetworkAllow. With
	// NetworkAllow, Egress is the unix socket of the allowlisting proxy
	// (StartEgress) and Forwarder the lazy binary that relays the
	// sandbox's loopback ProxyPort to it (lazy sandbox-forward).
	Network           string
	Egress, Forwarder string
}

// ErrUnavailable wraps every reason the sandbox cannot run here.
var ErrUnavailable = errors.New("the sandbox cannot run on this machine")

// Check reports whether bwrap can start a sandbox here: the binary is
// installed and the kernel lets it build its namespaces.
func Check(ctx context.Context) error {
	if err := platformRefusal(runtime.GOOS); err != nil {
		return err
	}
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return fmt.Errorf("%w: bubblewrap (bwrap) is not installed; install it (Debian: apt-get install bubblewrap) or set lazy.sandbox to off", ErrUnavailable)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	c := exec.CommandContext(ctx, bin, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--", "true")
	c.Stdout, c.Stderr = &out, &out
	if err := c.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		return fmt.Errorf("%w: bwrap could not create a sandbox (%s); allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or set lazy.sandbox to off", ErrUnavailable, firstLine(msg, err))
	}
	return nil
}

func firstLine(msg string, err error) string {
	if msg == "" {
		return err.Error()
	}
	l, _, _ := strings.Cut(msg, "\n")
	return l
}

// Wrap returns the bwrap argv that runs argv under p. The mounts are
// ordered so that later ones overlay earlier ones: the whole system
// read-only, a private /tmp, hidden secrets, the main checkout and lazy's
// directory hidden, then the git metadata and this task's worktree put
// back.
func Wrap(argv []string, p Policy) ([]string, error) {
	if len(argv) == 0 {
		return nil, errors.New("sandbox: nothing to run")
	}
	for _, d := range []string{p.Worktree, p.CommonDir} {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("sandbox: %q is not an absolute path", d)
		}
	}
	if err := platformRefusal(runtime.GOOS); err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap (bwrap) is not installed", ErrUnavailable)
	}
	// /tmp is the sandbox's own, and TMPDIR points there: a TMPDIR of the
	// host's elsewhere is read-only inside (Claude Code makes its
	// scratch directory there, and fails without one).
	a := []string{bin, "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--setenv", "TMPDIR", "/tmp"}
	// Every directory hidden by an empty tmpfs is made read-only once the
	// paths inside it are mounted, so a write there fails (EROFS) instead
	// of vanishing into a private copy.
	var sealed []string
	hide := func(dir string) {
		a = append(a, "--tmpfs", dir)
		sealed = append(sealed, dir)
	}
	switch p.Network {
	case "", NetworkOn:
	case NetworkOff:
		a = append(a, "--unshare-net")
	case NetworkAllow:
		if p.Egress == "" || p.Forwarder == "" {
			return nil, errors.New("sandbox: a network allowlist needs its proxy")
		}
		a = append(a, "--unshare-net")
	default:
		return nil, fmt.Errorf("sandbox: network %q is not on, off or an allowlist", p.Network)
	}
	for _, h := range hidden(p) {
		fi, err := os.Stat(h)
		switch {
		case err != nil:
			continue // nothing there to hide
		case fi.IsDir():
			hide(h)
		default:
			a = append(a, "--ro-bind", "/dev/null", h)
		}
	}
	if p.RepoDir != "" && p.RepoDir != "/" && exists(p.RepoDir) {
		hide(p.RepoDir) // the main checkout's working files
	}
	a = append(a, "--ro-bind", p.CommonDir, p.CommonDir)
	if !p.ReadOnly {
		// What git commit writes: objects, the branch ref and its log,
		// and the worktree's own index and HEAD.
		for _, sub := range []string{"objects", "refs", "logs"} {
			if d := filepath.Join(p.CommonDir, sub); exists(d) {
				a = append(a, "--bind", d, d)
			}
		}
		if p.GitDir != "" && exists(p.GitDir) {
			a = append(a, "--bind", p.GitDir, p.GitDir)
		}
	}
	if p.LazyDir != "" && exists(p.LazyDir) {
		hide(p.LazyDir)
		if p.Socket != "" && exists(p.Socket) {
			a = append(a, "--ro-bind", p.Socket, p.Socket)
		}
	}
	if p.WorktreeRoot != "" && exists(p.WorktreeRoot) && !within(p.WorktreeRoot, p.LazyDir) {
		hide(p.WorktreeRoot) // the other tasks' worktrees
	}
	if p.ReadOnly {
		a = append(a, "--ro-bind", p.Worktree, p.Worktree)
	} else {
		a = append(a, "--bind", p.Worktree, p.Worktree)
	}
	for _, d := range p.AgentDirs {
		if exists(d) {
			a = append(a, "--bind", d, d)
		}
	}
	for _, e := range p.Expose {
		a = append(a, expose(e, append(sealed, "/tmp"))...)
	}
	for _, d := range sealed {
		a = append(a, "--remount-ro", d)
	}
	if p.Network == NetworkAllow {
		// The only way out: the forwarder on the sandbox's loopback, to
		// the proxy outside, which admits only the allowlist.
		proxy := fmt.Sprintf("http://127.0.0.1:%d", ProxyPort)
		a = append(a, "--ro-bind", p.Egress, p.Egress, "--ro-bind", p.Forwarder, p.Forwarder)
		for _, v := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
			a = append(a, "--setenv", v, proxy)
		}
		a = append(a, "--setenv", "NO_PROXY", "localhost,127.0.0.1", "--setenv", "no_proxy", "localhost,127.0.0.1")
		argv = append([]string{p.Forwarder, "sandbox-forward", "--listen", fmt.Sprintf("127.0.0.1:%d", ProxyPort), "--to", p.Egress, "--"}, argv...)
	}
	a = append(a, "--chdir", p.Worktree, "--")
	return append(a, argv...), nil
}

// hidden resolves the secret paths against $HOME, most general first so
// that no hidden directory is mounted over a more specific one.
func hidden(p Policy) []string {
	var out []string
	for _, h := range append(append([]string(nil), DefaultHidden...), p.Hidden...) {
		if !filepath.IsAbs(h) {
			if p.Home == "" {
				continue
			}
			h = filepath.Join(p.Home, h)
		}
		out = append(out, filepath.Clean(h))
	}
	sort.Strings(out)
	return out
}

// expose makes path visible read-only. A symlink (an npm-installed CLI's
// bin entry, say) cannot be bound onto, and needs nothing where the root
// already shows it; inside a directory the sandbox replaced (hidden) it
// is made again, pointing where it did (its target is exposed as well).
func expose(path string, hidden []string) []string {
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return nil
	case fi.Mode()&os.ModeSymlink == 0:
		return []string{"--ro-bind", path, path}
	}
	for _, h := range hidden {
		if within(path, h) {
			if target, err := os.Readlink(path); err == nil {
				return []string{"--symlink", target, path}
			}
		}
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
