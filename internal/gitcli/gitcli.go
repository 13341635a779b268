// Package gitcli is the one place lazy builds argv for the git CLI.
//
// Options and paths are kept apart: paths always follow "--" so a file
// named "--force" stays a file, and every element is refused if it holds a
// NUL byte, which git's argv cannot carry.
package gitcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Cmd is one git invocation under construction.
type Cmd struct {
	dir   string
	args  []string
	paths []string
	env   []string
	stdin []byte
	// asLazy: the commit the command makes is lazy's own (see AsLazy).
	asLazy bool
}

// LazyName and LazyEmail are the identity of the commits lazy makes for
// its own bookkeeping (AsLazy).
const (
	LazyName  = "lazy"
	LazyEmail = "lazy@lazy.invalid"
)

// New starts a git command that runs in dir with the given subcommand and
// options. Option values that come from users must be validated by the
// caller (or passed with AddValue).
func New(dir string, args ...string) *Cmd {
	return &Cmd{dir: dir, args: args}
}

// Paths appends pathspecs; they are placed after "--".
func (c *Cmd) Paths(paths ...string) *Cmd {
	c.paths = append(c.paths, paths...)
	return c
}

// Env adds environment variables (KEY=VALUE).
func (c *Cmd) Env(kv ...string) *Cmd {
	c.env = append(c.env, kv...)
	return c
}

// AsLazy makes the commits the command writes lazy's own: author and
// committer are LazyName <LazyEmail> whatever the user's environment or
// config says. GIT_AUTHOR_* and GIT_COMMITTER_* of the environment
// (names, emails and dates) are dropped, since git lets them win over
// any -c user.name: a revert lazy makes, or the stash it keeps, must not
// read as the user's work, and must not fail where no identity is set.
func (c *Cmd) AsLazy() *Cmd {
	c.asLazy = true
	return c
}

// environ is the command's environment: the process's, no prompt, and
// what Env and AsLazy add.
func (c *Cmd) environ() []string {
	base := os.Environ()
	env := make([]string, 0, len(base)+len(c.env)+5)
	for _, kv := range base {
		if c.asLazy && (strings.HasPrefix(kv, "GIT_AUTHOR_") || strings.HasPrefix(kv, "GIT_COMMITTER_")) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0")
	if c.asLazy {
		env = append(env, "GIT_AUTHOR_NAME="+LazyName, "GIT_AUTHOR_EMAIL="+LazyEmail, "GIT_COMMITTER_NAME="+LazyName, "GIT_COMMITTER_EMAIL="+LazyEmail)
	}
	return append(env, c.env...)
}

// Stdin sets the command's standard input.
func (c *Cmd) Stdin(b []byte) *Cmd {
	c.stdin = b
	return c
}

// Argv returns the full argument vector (without "git"), or an error if
// any element cannot be passed safely.
func (c *Cmd) Argv() ([]string, error) {
	argv := make([]string, 0, len(c.args)+len(c.paths)+1)
	for _, a := range c.args {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("refusing to run git with a NUL byte in argument %q", a)
		}
		argv = append(argv, a)
	}
	if len(c.paths) > 0 {
		argv = append(argv, "--")
		for _, p := range c.paths {
			if strings.IndexByte(p, 0) >= 0 {
				return nil, fmt.Errorf("refusing to pass path %q to git: it contains a NUL byte", p)
			}
			argv = append(argv, p)
		}
	}
	return argv, nil
}

// Error is a failed git command with what it printed.
type Error struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode returns git's exit status, or -1 if it did not exit normally.
func (e *Error) ExitCode() int {
	var ee *exec.ExitError
	if errors.As(e.Err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// Output runs the command and returns its stdout.
func (c *Cmd) Output(ctx context.Context) ([]byte, error) {
	argv, err := c.Argv()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Dir = c.dir
	cmd.Env = c.environ()
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &Error{Args: argv, Stderr: stderr.String(), Err: err}
	}
	return out, nil
}

// Stream runs the command with its stdout written to w as git writes
// it, so the caller decides how much of it to keep. A write w refuses
// stops git (its pipe closes under it) and Stream returns w's error
// whatever git's exit said: a bounded w ends a command whose output is
// larger than the caller wants, without holding all of it.
func (c *Cmd) Stream(ctx context.Context, w io.Writer) error {
	argv, err := c.Argv()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Dir = c.dir
	cmd.Env = c.environ()
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	sw := &stopWriter{w: w}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = sw, &stderr
	err = cmd.Run()
	if sw.err != nil {
		return sw.err
	}
	if err != nil {
		return &Error{Args: argv, Stderr: stderr.String(), Err: err}
	}
	return nil
}

// stopWriter remembers the first error its writer returned: os/exec
// reports git's exit before a copy error, and git killed by the closed
// pipe is the caller's doing, not a failure.
type stopWriter struct {
	w   io.Writer
	err error
}

func (s *stopWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

// Run runs the command and discards its stdout.
func (c *Cmd) Run(ctx context.Context) error {
	_, err := c.Output(ctx)
	return err
}

// String runs the command and returns its trimmed stdout.
func (c *Cmd) String(ctx context.Context) (string, error) {
	out, err := c.Output(ctx)
	return strings.TrimSpace(string(out)), err
}

// Attach runs the command with the caller's standard streams, so git's
// own pager, colour and difftool settings apply as they would to a git
// command the user typed. It returns git's exit status through *Error.
func (c *Cmd) Attach(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	argv, err := c.Argv()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Dir = c.dir
	cmd.Env = c.environ()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if err := cmd.Run(); err != nil {
		return &Error{Args: argv, Err: err}
	}
	return nil
}
