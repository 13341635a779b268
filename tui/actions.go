package tui

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/task"
)

// The actions of lazy watch. Each runs off the UI goroutine through the
// Backend, the same operation as its CLI command, and ends in a tuiDone
// whose sentence is the one the command prints.

// act runs do as the action what.
func (m *Model) act(what string, do func(ctx context.Context) (string, error)) tea.Cmd {
	return func() tea.Msg {
		line, err := do(m.ctx)
		return tuiDone{what: what, err: err, out: line}
	}
}

// progress shows a line of a running action, when the program listens.
func (m *Model) progress(line string) {
	if m.send != nil {
		m.send(tuiProgress{line: line})
	}
}

func (m *Model) create(title, goal string) tea.Cmd {
	return m.act("create", func(ctx context.Context) (string, error) { return m.b.Create(ctx, title, goal) })
}

func (m *Model) start(t *task.Summary) tea.Cmd {
	return m.act("start "+t.Slug, func(ctx context.Context) (string, error) { return m.b.Start(ctx, t) })
}

func (m *Model) startAttempts(t *task.Summary, n int, agents []string) tea.Cmd {
	return m.act("start "+t.Slug, func(ctx context.Context) (string, error) { return m.b.StartAttempts(ctx, t, n, agents) })
}

func (m *Model) raiseBudget(t *task.Summary, text string) tea.Cmd {
	return m.act("budget "+t.Slug, func(ctx context.Context) (string, error) { return m.b.RaiseBudget(ctx, t, text) })
}

func (m *Model) unblock(t *task.Summary, feedback string) tea.Cmd {
	return m.act("unblock "+t.Slug, func(ctx context.Context) (string, error) { return m.b.Unblock(ctx, t, feedback) })
}

// askAgent is lazy ask: the status line says the question went, then
// shows the answer when it arrives.
func (m *Model) askAgent(t *task.Summary, question string) tea.Cmd {
	return m.act("ask "+t.Slug, func(ctx context.Context) (string, error) { return m.b.Ask(ctx, t, question, m.progress) })
}

func (m *Model) end(t *task.Summary, verb, reason string) tea.Cmd {
	return m.act(verb+" "+t.Slug, func(ctx context.Context) (string, error) { return m.b.End(ctx, t, verb, reason) })
}

// accept is lazy accept: the gate's and the merge's steps show in the
// status line as they go.
func (m *Model) accept(t *task.Summary) tea.Cmd {
	return m.act("accept "+t.Slug, func(ctx context.Context) (string, error) { return m.b.Accept(ctx, t, m.progress) })
}

func (m *Model) stop(t *task.Summary) tea.Cmd {
	return m.act("stop "+t.Slug, func(ctx context.Context) (string, error) { return m.b.Stop(ctx, t) })
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
