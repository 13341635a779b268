// Package demo is lazy demo: a guided tour in a scratch repository that
// drives the real lazy binary and checks each step as it goes, so `go run
// . demo` is both a tour and a smoke test.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lazyorch/lazy/render"
)

type demo struct {
	out  io.Writer
	exe  string
	repo string
	step int
}

// Run runs the tour with the lazy binary exe in a scratch repository
// under dir (the system temp dir when empty), writing each step, its
// commands and their output to out; keep leaves the repository there
// and says where.
func Run(ctx context.Context, out io.Writer, exe, dir string, keep bool) error {
	root, err := os.MkdirTemp(dir, "lazy-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if keep {
		defer fmt.Fprintf(out, "\nThe scratch repository is kept at %s\n", root)
	} else {
		defer func() { _ = os.RemoveAll(root) }()
	}
	d := &demo{out: out, exe: exe, repo: filepath.Join(root, "project")}
	return d.tour(ctx)
}

func (d *demo) say(what string) {
	d.step++
	fmt.Fprintf(d.out, "\n[%d] %s\n", d.step, what)
}

// sh runs a command in the scratch repository, echoing it and its output.
func (d *demo) sh(ctx context.Context, wantOK bool, stdin string, name string, args ...string) (string, error) {
	shown := name
	if name == d.exe {
		shown = "lazy"
	}
	fmt.Fprintf(d.out, "$ %s %s\n", shown, strings.Join(quoteAll(args), " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = d.repo
	// Task worktrees go to the per-user data directory by default; the
	// demo keeps everything in its scratch directory.
	cmd.Env = append(os.Environ(), "LAZY_ACTOR=", "GIT_CONFIG_NOSYSTEM=1", "XDG_DATA_HOME="+filepath.Join(filepath.Dir(d.repo), "data"),
		"GIT_AUTHOR_NAME=lazy demo", "GIT_AUTHOR_EMAIL=demo@lazy.invalid",
		"GIT_COMMITTER_NAME=lazy demo", "GIT_COMMITTER_EMAIL=demo@lazy.invalid")
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := out.String()
	fmt.Fprint(d.out, render.Indent(text, "  ")+"\n")
	if wantOK && err != nil {
		return text, fmt.Errorf("demo step %d failed: %s %s: %w", d.step, shown, strings.Join(args, " "), err)
	}
	if !wantOK && err == nil {
		return text, fmt.Errorf("demo step %d: %s %s should have failed", d.step, shown, strings.Join(args, " "))
	}
	return text, nil
}

func (d *demo) lazy(ctx context.Context, args ...string) (string, error) {
	return d.sh(ctx, true, "", d.exe, args...)
}

func (d *demo) expect(out, want string) error {
	if !strings.Contains(out, want) {
		return fmt.Errorf("demo step %d: expected %q in the output", d.step, want)
	}
	return nil
}

func (d *demo) tour(ctx context.Context) error {
	if err := os.MkdirAll(d.repo, 0o755); err != nil {
		return err
	}
	steps := []func(context.Context) error{
		func(ctx context.Context) error {
			d.say("A scratch git repository with one commit")
			if _, err := d.sh(ctx, true, "", "git", "init", "-q", "-b", "main"); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(d.repo, "README.md"), []byte("# demo project\n"), 0o644); err != nil {
				return err
			}
			if _, err := d.sh(ctx, true, "", "git", "add", "README.md"); err != nil {
				return err
			}
			_, err := d.sh(ctx, true, "", "git", "commit", "-q", "-m", "initial commit")
			return err
		},
		func(ctx context.Context) error {
			d.say("Set lazy up: a host id and refspecs for refs/lazy/*")
			out, err := d.lazy(ctx, "init")
			if err != nil {
				return err
			}
			return d.expect(out, "Initialized lazy")
		},
		func(ctx context.Context) error {
			d.say("Create tasks; a subtask hangs under its parent")
			if _, err := d.lazy(ctx, "create", "Fix the flaky login test", "-m", "It fails one CI run in ten. Find the race and fix it."); err != nil {
				return err
			}
			if _, err := d.lazy(ctx, "create", "Cover logout too", "--parent", "fix-the-flaky-login-test"); err != nil {
				return err
			}
			// Feedback with a NUL byte arrives on stdin: it is escaped,
			// never dropped.
			_, err := d.sh(ctx, true, "Write the release notes.\x00(a NUL byte sneaked in)", d.exe, "create", "Release notes")
			return err
		},
		func(ctx context.Context) error {
			d.say("Start a task: a branch, a worktree and an agent turn under a detached supervisor (the exec agent runs a small shipped script)")
			agentPath := filepath.Join(filepath.Dir(d.repo), "demo-agent.sh")
			if err := os.WriteFile(agentPath, demoAgent, 0o755); err != nil {
				return err
			}
			if _, err := d.lazy(ctx, "start", "fix-the-flaky-login-test", "--command", agentPath); err != nil {
				return err
			}
			return d.waitParked(ctx, "fix-the-flaky-login-test")
		},
		func(ctx context.Context) error {
			d.say("The turn ended: the task is parked for review, with the agent's turn and commit recorded")
			out, err := d.lazy(ctx, "blocked")
			if err != nil {
				return err
			}
			if err := d.expect(out, "fix-the-flaky-login-test"); err != nil {
				return err
			}
			out, err = d.sh(ctx, true, "", "git", "log", "--oneline", "-2", "lazy/fix-the-flaky-login-test")
			if err != nil {
				return err
			}
			return d.expect(out, "Retry the flaky login check")
		},
		func(ctx context.Context) error {
			d.say("Review, then give feedback: upstream is merged into the task branch and the next turn gets the feedback verbatim")
			if _, err := d.lazy(ctx, "unblock", "fix-the-flaky-login-test", "-m", "Also cover logout."); err != nil {
				return err
			}
			if err := d.waitParked(ctx, "fix-the-flaky-login-test"); err != nil {
				return err
			}
			out, err := d.sh(ctx, true, "", "git", "log", "--oneline", "-3", "lazy/fix-the-flaky-login-test")
			if err != nil {
				return err
			}
			if err := d.expect(out, "Cover logout too"); err != nil {
				return err
			}
			out, err = d.lazy(ctx, "show", "fix-the-flaky-login-test")
			if err != nil {
				return err
			}
			return d.expect(out, "human unblock\n      Also cover logout.")
		},
		func(ctx context.Context) error {
			d.say("List them (the changelog of each task is plain git history)")
			out, err := d.lazy(ctx, "list")
			if err != nil {
				return err
			}
			return d.expect(out, "blocked")
		},
		func(ctx context.Context) error {
			d.say("Comment, then close a task that will not be done")
			if _, err := d.lazy(ctx, "comment", "release-notes", "-m", "Wait until the login fix lands."); err != nil {
				return err
			}
			out, err := d.lazy(ctx, "close", "release-notes", "-m", "Release notes are written by hand this cycle.")
			if err != nil {
				return err
			}
			return d.expect(out, "now abandoned")
		},
		func(ctx context.Context) error {
			d.say("Show a task: goal, comments, and the status changelog with actors")
			out, err := d.lazy(ctx, "show", "release-notes")
			if err != nil {
				return err
			}
			if err := d.expect(out, `\u0000`); err != nil {
				return err
			}
			return d.expect(out, "backlog -> abandoned")
		},
		func(ctx context.Context) error {
			d.say("Reopen it; every transition goes through the state machine")
			if _, err := d.lazy(ctx, "reopen", "release-notes", "--reason", "We do want them after all."); err != nil {
				return err
			}
			out, err := d.sh(ctx, false, "", d.exe, "reject", "release-notes")
			if err != nil {
				return err
			}
			return d.expect(out, "use lazy close")
		},
		func(ctx context.Context) error {
			d.say("Bad names get clear errors")
			if _, err := d.sh(ctx, false, "", d.exe, "show", "../../etc/passwd"); err != nil {
				return err
			}
			_, err := d.sh(ctx, false, "", d.exe, "show", "no-such-task")
			return err
		},
		func(ctx context.Context) error {
			d.say("The records are ordinary git: refs, commits with trailers")
			if _, err := d.sh(ctx, true, "", "git", "for-each-ref", "--format=%(refname)", "refs/lazy/tasks/"); err != nil {
				return err
			}
			id, err := d.sh(ctx, true, "", "git", "cat-file", "blob", "refs/lazy/slugs/release-notes")
			if err != nil {
				return err
			}
			out, err := d.sh(ctx, true, "", "git", "log", "-2", "--format=%s%n%(trailers)", "refs/lazy/tasks/"+strings.TrimSpace(id))
			if err != nil {
				return err
			}
			return d.expect(out, "Lazy-Op: reopen")
		},
		func(ctx context.Context) error {
			d.say("Machine-readable output for scripts")
			out, err := d.lazy(ctx, "blocked", "--json")
			if err != nil {
				return err
			}
			return d.expect(out, `"slug":"fix-the-flaky-login-test"`)
		},
		func(ctx context.Context) error {
			d.say("Accept: refused while a subtask is open, then one squash commit on main; the worktree and branch go")
			out, err := d.sh(ctx, false, "", d.exe, "accept", "fix-the-flaky-login-test")
			if err != nil {
				return err
			}
			if err := d.expect(out, "cover-logout-too"); err != nil {
				return err
			}
			if _, err := d.lazy(ctx, "close", "cover-logout-too", "-m", "Covered by the parent's second turn."); err != nil {
				return err
			}
			if out, err = d.lazy(ctx, "accept", "fix-the-flaky-login-test"); err != nil {
				return err
			}
			if err := d.expect(out, "squash-merged into main"); err != nil {
				return err
			}
			out, err = d.sh(ctx, true, "", "git", "log", "-1", "--format=%s%n%(trailers)", "main")
			if err != nil {
				return err
			}
			return d.expect(out, "Lazy-Task:")
		},
		func(ctx context.Context) error {
			d.say("Nothing left behind: lazy doctor finds no stranded merge, dead supervisor or orphan")
			out, err := d.lazy(ctx, "doctor")
			if err != nil {
				return err
			}
			return d.expect(out, "No problems found.")
		},
	}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s(ctx); err != nil {
			return err
		}
	}
	// The scratch repository is about to go; so is its daemon.
	stop := exec.CommandContext(ctx, d.exe, "daemon", "--stop")
	stop.Dir = d.repo
	_ = stop.Run()
	fmt.Fprintf(d.out, "\nDemo complete: %d steps, every one checked.\n", d.step)
	return nil
}

// waitParked polls (quietly) until the task's turn ends, then shows the
// status once.
func (d *demo) waitParked(ctx context.Context, slug string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		cmd := exec.CommandContext(ctx, d.exe, "show", "--json", slug)
		cmd.Dir = d.repo
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("demo: lazy show %s: %w", slug, err)
		}
		var s struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(out, &s); err != nil {
			return fmt.Errorf("demo: lazy show %s: %w", slug, err)
		}
		if s.Status != "working" {
			fmt.Fprintf(d.out, "  (the turn ended; %s is now %s)\n", slug, s.Status)
			if s.Status != "blocked" {
				return fmt.Errorf("demo: %s ended as %s, not blocked", slug, s.Status)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("demo: %s is still working after a minute", slug)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$\\*?|&;<>()") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		} else {
			out[i] = a
		}
	}
	return out
}
