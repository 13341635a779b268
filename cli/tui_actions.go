package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// tuiBackend is lazy watch's tui.Backend: what the TUI reads and does,
// through the same code as the CLI's commands. Each action runs on a
// copy of the app whose output is captured (the TUI owns the screen),
// and returns the sentence the command prints.
type tuiBackend struct {
	a    *app
	self string // this binary, for the actions that need the terminal
}

// askTimeout is how long the TUI waits for an answer to a; the task
// records it whenever it arrives.
const askTimeout = 10 * time.Minute

// act runs do on a quiet copy of the app: what it prints is the
// sentence when it returns none.
func (b *tuiBackend) act(ctx context.Context, do func(ctx context.Context, a *app, env *wire.Env) (string, error)) (string, error) {
	quiet := *b.a
	var out bytes.Buffer
	quiet.io.out, quiet.io.errOut, quiet.io.in = &out, io.Discard, strings.NewReader("")
	env, err := quiet.env()
	if err != nil {
		return "", err
	}
	line, err := do(ctx, &quiet, env)
	if line == "" {
		line = out.String()
	}
	return line, err
}

// Create is lazy create TITLE -m GOAL.
func (b *tuiBackend) Create(ctx context.Context, title, goal string) (string, error) {
	return b.act(ctx, func(ctx context.Context, _ *app, env *wire.Env) (string, error) {
		sn, err := env.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: title, Goal: goal})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Created %s (%s) in backlog: s starts it", sn.Task.Slug, render.ShortID(sn.Task.ID)), nil
	})
}

// Start is lazy start TASK with the repository's agent settings.
func (b *tuiBackend) Start(ctx context.Context, t *task.Summary) (string, error) {
	return b.act(ctx, func(ctx context.Context, a *app, env *wire.Env) (string, error) {
		in, err := a.settings().startInput("", "")
		if err != nil {
			return "", err
		}
		sn, err := env.Lifecycle().Start(ctx, t.ID, in)
		var waiting *lifecycle.WaitingError
		if errors.As(err, &waiting) {
			if _, derr := env.Runner().DeferStart(t.ID, in); derr != nil {
				return "", fmt.Errorf("%w; and it could not be kept to start later: %w", err, derr)
			}
			if _, derr := a.ensureDaemon(ctx); derr != nil {
				return "", fmt.Errorf("%s waits for %s; it is kept to start here then, but the daemon that starts it did not start: %w", waiting.Task, strings.Join(waiting.On, ", "), derr)
			}
			return fmt.Sprintf("%s waits for %s: it starts here once they are complete (the daemon starts it)", waiting.Task, strings.Join(waiting.On, ", ")), nil
		}
		if err != nil {
			return "", err
		}
		a.daemonAfterLaunch(ctx)
		return fmt.Sprintf("Started %s: working in %s (branch %s)", sn.Task.Slug, sn.Session.Worktree, sn.Session.Branch), nil
	})
}

// StartAttempts is lazy start TASK --attempts N --agent A,B.
func (b *tuiBackend) StartAttempts(ctx context.Context, t *task.Summary, n int, agents []string) (string, error) {
	return b.act(ctx, func(ctx context.Context, a *app, env *wire.Env) (string, error) {
		first := ""
		if len(agents) > 0 {
			first = agents[0]
		}
		in, err := a.settings().startInput(first, "")
		if err != nil {
			return "", err
		}
		res, err := env.Attempts().Start(ctx, t.ID, attempts.Input{N: n, Agents: agents, Base: in})
		if res != nil && len(res.Started) > 0 {
			a.daemonAfterLaunch(ctx)
		}
		if err != nil {
			return "", err
		}
		line := fmt.Sprintf("Trying %s %d ways (%d started); compare them with d, land one with lazy accept %s --attempt K", res.Group.Task.Slug, n, len(res.Started), res.Group.Task.Slug)
		if len(res.NotStart) > 0 {
			line += fmt.Sprintf("; %d wait in backlog: %v", len(res.NotStart), res.NotStart[0])
		}
		return line, nil
	})
}

// RaiseBudget is the budget half of lazy unblock TASK --budget N.
func (b *tuiBackend) RaiseBudget(ctx context.Context, t *task.Summary, text string) (string, error) {
	return b.act(ctx, func(ctx context.Context, _ *app, env *wire.Env) (string, error) {
		owner, limit, err := raise(ctx, env, t.ID, text)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Raised the budget of %s to $%.2f: u carries %s on", owner, limit, t.Slug), nil
	})
}

// Unblock is lazy unblock TASK -m FEEDBACK.
func (b *tuiBackend) Unblock(ctx context.Context, t *task.Summary, feedback string) (string, error) {
	return b.act(ctx, func(ctx context.Context, a *app, env *wire.Env) (string, error) {
		sn, err := env.Lifecycle().Unblock(ctx, t.ID, feedback, lifecycle.Decisions{})
		var left *lifecycle.ErrLeftForRunner
		if errors.As(err, &left) {
			return "", a.sendToRunner(ctx, sn, left) // its sentence is on a.io.out
		}
		if err != nil {
			return "", err
		}
		a.daemonAfterLaunch(ctx)
		return fmt.Sprintf("Unblocked %s: turn %d is running", sn.Task.Slug, sn.Session.Turn), nil
	})
}

// Ask is lazy ask TASK -m QUESTION: the status line says the
// question went, then shows the answer when it arrives.
func (b *tuiBackend) Ask(ctx context.Context, t *task.Summary, question string, progress func(string)) (string, error) {
	return b.act(ctx, func(ctx context.Context, a *app, env *wire.Env) (string, error) {
		sn, err := env.Conversation().Ask(ctx, t.ID, question)
		if err != nil {
			return "", err
		}
		a.daemonAfterLaunch(ctx)
		progress(fmt.Sprintf("Asked %s: waiting for the answer (lazy show %s has it when it arrives)", sn.Task.Slug, sn.Task.Slug))
		final, err := a.waitTurn(ctx, sn.Task.ID, askTimeout)
		if err != nil {
			return "", err
		}
		turns, err := a.store.Turns(final)
		if err != nil {
			return "", err
		}
		answer := turns[len(turns)-1]
		if answer.Error != "" {
			return "", fmt.Errorf("the agent could not answer: %s (the task is %s again)", answer.Error, final.Task.Status)
		}
		return fmt.Sprintf("%s answered: %s", sn.Task.Slug, strings.TrimSpace(answer.Content)), nil
	})
}

// End is lazy reject or lazy close TASK -m REASON; the branch is kept
// when it holds unmerged work, as without --delete-branch.
func (b *tuiBackend) End(ctx context.Context, t *task.Summary, verb, reason string) (string, error) {
	return b.act(ctx, func(ctx context.Context, _ *app, env *wire.Env) (string, error) {
		do := env.Lifecycle().Close
		if verb == "reject" {
			do = env.Lifecycle().Reject
		}
		sn, err := do(ctx, t.ID, reason)
		if err != nil {
			return "", err
		}
		line := fmt.Sprintf("%s %s: now %s", verbPast(verb), sn.Task.Slug, sn.Task.Status)
		notes, err := env.Landing().Cleanups().CleanupAbandoned(ctx, sn, false)
		for _, n := range notes {
			line += "; " + n
		}
		return line, err
	})
}

// Accept is lazy accept TASK: the gate's and the merge's steps show in
// the status line as they go.
func (b *tuiBackend) Accept(ctx context.Context, t *task.Summary, progress func(string)) (string, error) {
	return b.act(ctx, func(ctx context.Context, a *app, env *wire.Env) (string, error) {
		opts, err := (&AcceptCmd{Timeout: landing.DefaultPreTurnTimeout}).options(a)
		if err != nil {
			return "", err
		}
		narrate := a.acceptDisplay(t.ID)
		narrate.w, narrate.tty = lineFunc(func(l string) { progress(strings.TrimPrefix(l, "· ")) }), false
		res, err := env.Landing().Accept(ctx, t.ID, narrate, opts)
		if err != nil {
			return "", err
		}
		a.pushPooled(ctx, res.Snapshot)
		line := acceptedLine(res)
		for _, w := range res.Warnings {
			line += "; warning: " + w
		}
		if res.PR == nil && res.StashOwed != nil {
			return line, res.StashOwed
		}
		return line, nil
	})
}

// Stop is lazy stop TASK.
func (b *tuiBackend) Stop(ctx context.Context, t *task.Summary) (string, error) {
	return b.act(ctx, func(ctx context.Context, _ *app, env *wire.Env) (string, error) {
		sn, err := env.Lifecycle().Stop(ctx, t.ID, "")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Stopped %s: now %s (work in the worktree is kept)", sn.Task.Slug, sn.Task.Status), nil
	})
}

// lineFunc is a writer that hands each line written to it to a func.
type lineFunc func(string)

func (f lineFunc) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if l != "" {
			f(l)
		}
	}
	return len(p), nil
}
