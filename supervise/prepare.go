package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/proto"
)

// prepare readies a new worktree before its first turn: the untracked
// files lazy.copyFiles names are copied from the main checkout, then
// lazy.setup runs in the worktree. Everything is written to the turn's
// log. A failure returns the response that parks the task blocked with
// the reason; success is recorded in this machine's session record, so
// later turns skip it.
func prepare(ctx context.Context, dir proto.Dir, cmd *proto.Command) *proto.Response {
	p := cmd.Prepare
	f, err := dir.StartLaunch(proto.LogLine{Turn: cmd.Seq, Kind: "setup", At: time.Now()})
	if err != nil {
		return setupFailure(err)
	}
	// The setup command's output is a terminal's too (colours, progress
	// bars): the log keeps its lines, as it keeps an agent's.
	logf := agent.NewCapture(f)
	defer func() {
		_ = logf.Close()
		_ = f.Close()
	}()
	for _, pattern := range p.CopyFiles {
		if err := copyMatches(logf, p.From, cmd.Worktree, pattern); err != nil {
			fmt.Fprintf(logf, "[lazy] copyFiles %s: %v\n", pattern, err)
			return setupFailure(fmt.Errorf("lazy.copyFiles %q: %w", pattern, err))
		}
	}
	if p.Setup != "" {
		if err := runSetup(ctx, logf, cmd); err != nil {
			return setupFailure(err)
		}
	}
	// Later turns skip what succeeded once; a failed setup runs again on
	// the next turn, after a human fixed what it needed.
	_ = owned.For(dir.LazyDir()).MarkPrepared(cmd.TaskID, cmd.Session)
	return nil
}

func setupFailure(err error) *proto.Response {
	why := err.Error()
	return &proto.Response{Status: proto.Errored, Phase: "setup", Error: "preparing the worktree failed: " + why, ExitCode: -1,
		FailureClass: "setup_failed", FailureReason: why + " (see lazy logs; fix it, then lazy unblock runs the setup again)"}
}

// runSetup runs lazy.setup with sh -c in the worktree, its output in the
// log, bounded by the watchdog's limit. The command is the user's own,
// from git config; it runs unsandboxed, like their git hooks.
func runSetup(ctx context.Context, logf io.Writer, cmd *proto.Command) error {
	fmt.Fprintf(logf, "[lazy] setup: %s\n", cmd.Prepare.Setup)
	limit := cmd.Timing.WithDefaults().WatchdogTimeout
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	c := exec.CommandContext(ctx, "/bin/sh", "-c", cmd.Prepare.Setup)
	c.Dir = cmd.Worktree
	c.Env = append(proto.WithoutTurnEnv(os.Environ()), "LAZY_TASK_ID="+cmd.TaskID, "LAZY_WORKTREE="+cmd.Worktree, "LAZY_REPO="+cmd.Prepare.From)
	c.Stdout, c.Stderr = logf, logf
	// Its own process group, ended whole: "start nothing long-lived".
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = time.Second
	err := c.Run()
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
		err = fmt.Errorf("it ran longer than %s", limit)
	}
	if err != nil {
		fmt.Fprintf(logf, "[lazy] setup failed: %v\n", err)
		return fmt.Errorf("lazy.setup %q failed: %w", cmd.Prepare.Setup, err)
	}
	fmt.Fprintf(logf, "[lazy] setup done\n")
	return nil
}

// copyMatches copies the regular files of the main checkout that pattern
// (a glob relative to its root) matches into the same place in the
// worktree, keeping their modes. A pattern that matches nothing is not
// an error; one that leaves the checkout, or a symlink, is not followed.
func copyMatches(log io.Writer, from, to, pattern string) error {
	if filepath.IsAbs(pattern) || strings.HasPrefix(filepath.Clean(pattern), "..") {
		return errors.New("the pattern must be relative to the repository root and stay inside it")
	}
	matches, err := filepath.Glob(filepath.Join(from, pattern))
	if err != nil {
		return err
	}
	if len(matches) == 0 {
		fmt.Fprintf(log, "[lazy] copyFiles %s: nothing matches in %s\n", pattern, from)
	}
	for _, src := range matches {
		rel, err := filepath.Rel(from, src)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") || rel == ".git" || strings.HasPrefix(rel, ".git"+string(filepath.Separator)) {
			continue
		}
		fi, err := os.Lstat(src)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			fmt.Fprintf(log, "[lazy] copyFiles: %s is not a regular file; skipped\n", rel)
			continue
		}
		dst := filepath.Join(to, rel)
		if !insideReal(filepath.Dir(dst), to) {
			// A directory the branch tracks as a symlink must not carry
			// the copy out of the worktree.
			fmt.Fprintf(log, "[lazy] copyFiles: %s would be written outside the worktree (through a symlink); skipped\n", rel)
			continue
		}
		if _, err := os.Lstat(dst); err == nil {
			fmt.Fprintf(log, "[lazy] copyFiles: %s is already in the worktree; kept\n", rel)
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := copyFile(src, dst, fi.Mode().Perm()); err != nil {
			return err
		}
		fmt.Fprintf(log, "[lazy] copied %s from the main checkout\n", rel)
	}
	return nil
}

func copyFile(src, dst string, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// insideReal reports whether dir, with its symlinks resolved as far as it
// exists, lies inside root's real path.
func insideReal(dir, root string) bool {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false
	}
	// The deepest existing ancestor decides: what does not exist yet is
	// made as plain directories.
	for d := dir; ; d = filepath.Dir(d) {
		real, err := filepath.EvalSymlinks(d)
		if err == nil {
			rel, err := filepath.Rel(realRoot, real)
			return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}
