package tui

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/task"
)

// actionRunner runs lazy watch's actions, a part of the Model of its own:
// each runs off the UI goroutine through Actions, the same operation as
// its CLI command, and ends in a tuiDone whose sentence is the one the
// command prints; a running action's progress lines go to the program
// (send). It holds only the actions, the terminal hand-off and the
// program's send, never the screen: the Model's keys decide what runs.
type actionRunner struct {
	ops  Actions
	term terminalHandoff
	ctx  context.Context
	// send delivers a message from work running off the UI (an accept's
	// progress, an ask that waits for its answer); nil in tests.
	send func(tea.Msg)
}

// terminalHandoff is the Backend's command that hands the terminal to
// `lazy VERB TASK` (Backend.Interactive).
type terminalHandoff interface {
	Interactive(verb, id string) *exec.Cmd
}

// act runs do as the action what.
func (a *actionRunner) act(what string, do func(ctx context.Context) (string, error)) tea.Cmd {
	return func() tea.Msg {
		line, err := do(a.ctx)
		return tuiDone{what: what, err: err, out: line}
	}
}

// progress shows a line of a running action, when the program listens.
func (a *actionRunner) progress(line string) {
	if a.send != nil {
		a.send(tuiProgress{line: line})
	}
}

func (a *actionRunner) create(title, goal string) tea.Cmd {
	return a.act("create", func(ctx context.Context) (string, error) { return a.ops.Create(ctx, title, goal) })
}

func (a *actionRunner) start(t *task.Summary) tea.Cmd {
	return a.act("start "+t.Slug, func(ctx context.Context) (string, error) { return a.ops.Start(ctx, t) })
}

func (a *actionRunner) startAttempts(t *task.Summary, n int, agents []string) tea.Cmd {
	return a.act("start "+t.Slug, func(ctx context.Context) (string, error) { return a.ops.StartAttempts(ctx, t, n, agents) })
}

func (a *actionRunner) raiseBudget(t *task.Summary, text string) tea.Cmd {
	return a.act("budget "+t.Slug, func(ctx context.Context) (string, error) { return a.ops.RaiseBudget(ctx, t, text) })
}

func (a *actionRunner) unblock(t *task.Summary, feedback string) tea.Cmd {
	return a.act("unblock "+t.Slug, func(ctx context.Context) (string, error) { return a.ops.Unblock(ctx, t, feedback) })
}

// askAgent is lazy ask: the status line says the question went, then
// shows the answer when it arrives.
func (a *actionRunner) askAgent(t *task.Summary, question string) tea.Cmd {
	return a.act("ask "+t.Slug, func(ctx context.Context) (string, error) { return a.ops.Ask(ctx, t, question, a.progress) })
}

func (a *actionRunner) end(t *task.Summary, verb, reason string) tea.Cmd {
	return a.act(verb+" "+t.Slug, func(ctx context.Context) (string, error) { return a.ops.End(ctx, t, verb, reason) })
}

// accept is lazy accept: the gate's and the merge's steps show in the
// status line as they go.
func (a *actionRunner) accept(t *task.Summary) tea.Cmd {
	return a.act("accept "+t.Slug, func(ctx context.Context) (string, error) { return a.ops.Accept(ctx, t, a.progress) })
}

func (a *actionRunner) stop(t *task.Summary) tea.Cmd {
	return a.act("stop "+t.Slug, func(ctx context.Context) (string, error) { return a.ops.Stop(ctx, t) })
}

// interactive hands the terminal to `lazy VERB TASK` (the editor for
// feedback, or the agent CLI for pair) and comes back.
func (a *actionRunner) interactive(verb, id string) tea.Cmd {
	return tea.ExecProcess(a.term.Interactive(verb, id), func(err error) tea.Msg { return tuiDone{what: verb, err: err} })
}

// parseAttemptsPrompt reads "3" or "3 claude,codex".
func parseAttemptsPrompt(text string) (int, []string, error) {
	fields := strings.Fields(text)
	if len(fields) == 0 || len(fields) > 2 {
		return 0, nil, errors.New("give a number of attempts, then optionally the agents, such as 3 claude,codex")
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0, nil, fmt.Errorf("%q is not a number of attempts; give one such as 3", fields[0])
	}
	if err := attempts.Check(n); err != nil {
		return 0, nil, err
	}
	var agents []string
	if len(fields) == 2 {
		agents = SplitAgents(fields[1])
	}
	return n, agents, nil
}

// SplitAgents reads --agent: one agent, or a comma-separated list (the
// one reading of it, lazy start's and the S prompt's).
func SplitAgents(s string) []string {
	var out []string
	for _, a := range strings.Split(sanitize.Field(s), ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
