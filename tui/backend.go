package tui

import (
	"context"
	"os/exec"
	"sync"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
)

// Backend is what lazy watch reads and does. The CLI implements it over
// the code its commands run, so an action here is the command's own
// operation and ends in the sentence the command prints; the TUI owns
// the screen, so nothing the backend does may write to the terminal.
type Backend interface {
	// Load lists the tasks, finished ones included, reconciled, with
	// each listed task's overlaps (read through cache).
	Load(ctx context.Context, cache *review.OverlapCache) ([]*task.Summary, map[string]review.TaskOverlaps, error)
	// Substate is a task's live substate, as lazy list shows it.
	Substate(t *task.Summary) string
	// LogTail is the last lines of a task's agent log, as lazy logs
	// renders them, a turn rule (agent.TurnRule) where a turn begins.
	LogTail(id string, max int) []string
	// Diff is a task's diff for the diff pane, or the line that says
	// why there is none.
	Diff(ctx context.Context, id string) []string
	// Attempts is a group's attempts compared.
	Attempts(ctx context.Context, id string) (*attempts.Comparison, error)
	// Queues are this machine's merge queues, as lazy queue reads them:
	// the header shows the lanes of a queue split into lanes.
	Queues() []queue.View
	// Interactive is the command that hands the terminal to `lazy VERB
	// TASK` (the editor for feedback, the agent CLI for pair).
	Interactive(verb, id string) *exec.Cmd
	Actions
}

// Actions are the review loop's actions, each the operation of the CLI
// command named. Each returns the sentence that confirms it (or, empty,
// lets the TUI say "done"); progress shows a line of one still running.
type Actions interface {
	Create(ctx context.Context, title, goal string) (string, error)                             // lazy create TITLE -m GOAL
	Start(ctx context.Context, t *task.Summary) (string, error)                                 // lazy start TASK
	StartAttempts(ctx context.Context, t *task.Summary, n int, agents []string) (string, error) // lazy start --attempts N --agent A,B
	RaiseBudget(ctx context.Context, t *task.Summary, text string) (string, error)              // lazy unblock TASK --budget N
	Unblock(ctx context.Context, t *task.Summary, feedback string) (string, error)              // lazy unblock TASK -m FEEDBACK
	Ask(ctx context.Context, t *task.Summary, question string, progress func(string)) (string, error)
	End(ctx context.Context, t *task.Summary, verb, reason string) (string, error) // lazy reject or close TASK -m REASON
	Accept(ctx context.Context, t *task.Summary, progress func(string)) (string, error)
	Stop(ctx context.Context, t *task.Summary) (string, error) // lazy stop TASK
}

// Options are lazy watch's flags and what the CLI hands it.
type Options struct {
	// All lists finished tasks too (--all).
	All bool
	// Bell rings the terminal bell when a task starts needing a human.
	Bell bool
	// NoColor draws no colour (--no-color, NO_COLOR, TERM=dumb); bold,
	// faint and reverse stay, so the selection shows.
	NoColor bool
	// Refresh, when set, says the daemon reported something (a turn
	// ended, progress): the list reloads at once. A one-second tick
	// covers the rest, daemon or not.
	Refresh <-chan struct{}
}

// New is lazy watch's model over b, before the terminal's size is known.
func New(ctx context.Context, b Backend, opts Options) *Model {
	return &Model{b: b, ctx: ctx, run: actionRunner{ops: b, term: b, ctx: ctx}, all: opts.All, bell: opts.Bell, styles: newTUIStyles(), loading: &sync.Mutex{},
		overlapCache: &review.OverlapCache{}, follow: true, scroller: viewport.New()}
}

// Run runs lazy watch as a full-screen program until q, or ctx ends.
func Run(ctx context.Context, b Backend, opts Options) error {
	popts := []tea.ProgramOption{tea.WithContext(ctx)}
	if opts.NoColor {
		popts = append(popts, tea.WithColorProfile(colorprofile.Ascii))
	}
	m := New(ctx, b, opts)
	p := tea.NewProgram(m, popts...)
	m.run.send = p.Send
	if opts.Refresh != nil {
		go func() {
			for range opts.Refresh {
				p.Send(tuiRefresh{})
			}
		}()
	}
	_, err := p.Run()
	if err != nil && ctx.Err() != nil {
		return nil // interrupted: not an error
	}
	return err
}

// Reload is the command that lists the tasks again, as the tick does.
func (m *Model) Reload() tea.Cmd { return m.load() }

// Preview is the command that reads the selected task's pane again.
func (m *Model) Preview() tea.Cmd { return m.loadPreview() }

// Screen is the whole screen as View draws it.
func (m *Model) Screen() string { return m.screen() }

// Status is the status line: the last action's outcome or its progress,
// and whether it is an error.
func (m *Model) Status() (string, bool) { return m.bar.status, m.bar.statusBad }

// Select selects the task with id, as the arrow keys would.
func (m *Model) Select(id string) { m.selected = id }
