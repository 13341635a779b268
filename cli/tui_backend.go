package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/daemon"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/tui"
	"github.com/lazyorch/lazy/worktree"
)

// runTUI runs lazy watch as a full-screen program (package tui) over
// the CLI's own operations.
func (a *app) runTUI(ctx context.Context, all, bell bool) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the lazy binary: %w", err)
	}
	opts := tui.Options{All: all, Bell: bell, NoColor: a.io.noColor || a.getenv("TERM") == "dumb"}
	// The daemon's events (a turn ended, progress) refresh at once; the
	// one-second tick covers the rest, daemon or not.
	if a.getenv("LAZY_NO_DAEMON") == "" {
		if events, err := daemon.Dial(a.repo.LazyDir()).Subscribe(ctx); err == nil {
			refresh := make(chan struct{})
			go func() {
				defer close(refresh)
				for range events {
					select {
					case refresh <- struct{}{}:
					case <-ctx.Done():
						return
					}
				}
			}()
			opts.Refresh = refresh
		}
	}
	return tui.Run(ctx, &tuiBackend{a: a, self: self}, opts)
}

// Load lists the tasks as lazy watch shows them: reconciled on a copy of
// the app whose stderr is discarded (the TUI owns the screen), a gate
// run this machine's only if its own record says so.
func (b *tuiBackend) Load(ctx context.Context, cache *review.OverlapCache) ([]*task.Summary, map[string]review.TaskOverlaps, error) {
	quiet := *b.a
	quiet.io.errOut = io.Discard
	entries, err := quiet.reconciledList(ctx)
	if err != nil {
		return nil, nil, err
	}
	var tasks []*task.Summary
	env, _ := quiet.env()
	for i := range entries {
		if s, err := entries[i].Summary(); err == nil {
			if s.Gate != nil && env != nil {
				// A gate run is this machine's only if its own
				// record says so (a copy: the summary is cached).
				c, g := *s, *s.Gate
				env.Landing().Gates().VerifyGateSummary(s.ID, &g)
				c.Gate = &g
				s = &c
			}
			tasks = append(tasks, s)
		}
	}
	return tasks, overlapCheckOf(&quiet).of(ctx, entries, cache), nil
}

// Substate is a task's live substate from this repository's markers.
func (b *tuiBackend) Substate(t *task.Summary) string { return b.a.marks().Substate(t) }

// Attempts is group id's attempts, as lazy show compares them.
func (b *tuiBackend) Attempts(ctx context.Context, id string) (*attempts.Comparison, error) {
	env, err := b.a.env()
	if err != nil {
		return nil, err
	}
	return env.Attempts().Compare(ctx, id)
}

// Interactive hands the terminal to `lazy VERB TASK` in this repository.
func (b *tuiBackend) Interactive(verb, id string) *exec.Cmd {
	return exec.Command(b.self, "-C", b.a.repoDir(), verb, id)
}

// LogTail renders the last lines of a task's agent log as lazy logs
// does, a "── turn N (kind) ──" line where each agent launch begins.
func (b *tuiBackend) LogTail(id string, max int) []string {
	a := b.a
	pd := proto.ForTask(a.repo.LazyDir(), id)
	path := pd.Path(proto.LogFile)
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	// The last 256 KiB, from the first whole line in it.
	const window = 256 << 10
	from := int64(0)
	if fi.Size() > window {
		from = fi.Size() - window
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		b := make([]byte, 64<<10)
		n, _ := f.ReadAt(b, from)
		_ = f.Close()
		if i := bytes.IndexByte(b[:n], '\n'); i >= 0 {
			from += int64(i + 1)
		}
	}
	var buf bytes.Buffer
	lw := &logWriter{w: &buf, marks: pd.LogMarks(), secrets: logsOptionsOf(a).secrets()}
	if _, err := lw.copyFrom(path, from, -1); err != nil {
		return nil
	}
	lw.flush()
	out := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// Diff is a task's diff for the diff pane: the branch's stat and
// patch, then under a rule what its worktree has not committed yet (an
// agent mid-turn, or work left uncommitted), or a line that says there
// is no change at all.
func (b *tuiBackend) Diff(ctx context.Context, id string) []string {
	a := b.a
	env, err := a.env()
	if err != nil {
		return []string{err.Error()}
	}
	r, err := env.Review().ReviewRange(ctx, id)
	if err != nil {
		return []string{err.Error()}
	}
	out, err := gitcli.New(a.repoDir(), "diff", "--no-color", "--no-ext-diff", "--stat", "--patch", r.MergeBase, r.BranchSHA).Output(ctx)
	if err != nil {
		return []string{err.Error()}
	}
	var lines []string
	if sn, err := a.store.Load(id); err == nil {
		if pv, _ := env.Landing().Gates().ProtectedChanges(ctx, sn); pv != nil {
			lines = append(lines, "⚠ This change "+pv.Line(), "")
		}
	}
	protectedLines := len(lines)
	add := func(out []byte) {
		for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			lines = append(lines, sanitize.Display(strings.ReplaceAll(l, "\t", "    ")))
		}
	}
	if len(out) > 0 {
		add(out)
	}
	if r.Worktree != "" {
		if un, err := worktree.UncommittedPatch(ctx, r.Worktree); err == nil && len(un) > 0 {
			if len(lines) > 0 {
				lines = append(lines, "")
			}
			lines = append(lines, uncommittedRule)
			add(un)
		}
	}
	if len(lines) == protectedLines {
		return []string{noChanges(r, false)}
	}
	return lines
}

// uncommittedRule heads what a task's worktree changed and has not
// committed, below the branch's own diff (short: the pane is narrow).
const uncommittedRule = "── uncommitted in the worktree ──"

// noChanges is what lazy diff and watch's diff pane say for a task whose
// branch and worktree change nothing against the branch it merges into.
func noChanges(r *review.Review, committedOnly bool) string {
	what := "No changes"
	if committedOnly {
		what = "No committed changes"
	}
	return fmt.Sprintf("%s on %s against %s.", what, r.Branch, r.Into)
}

// Queues are this machine's merge queues, as lazy queue reads them.
func (b *tuiBackend) Queues() []queue.View {
	env, err := b.a.env()
	if err != nil {
		return nil
	}
	return env.Queue().Queues()
}
