package supervise

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/worktree"
)

// settleUncommitted decides what becomes of changes a completed work turn
// left uncommitted in its worktree (lazy.uncommitted): by default lazy
// commits them on the agent's behalf, so accept never stalls on changes
// the agent was not asked about; push-back asks the agent once first;
// keep leaves them. A failed or stopped turn, an ask and a sync keep
// their worktree as it is: the resume prompt, or a human, deals with it.
func settleUncommitted(ctx context.Context, dir proto.Dir, cmd *proto.Command, st *proto.Status, resp proto.Response) proto.Response {
	if resp.Status != proto.Completed || cmd.Kind == "ask" || cmd.Kind == "sync" || ctx.Err() != nil {
		return resp
	}
	switch cmd.Policy.Uncommitted {
	case proto.UncommittedKeep:
		return resp
	case proto.UncommittedPushBack:
		resp = pushBack(ctx, dir, cmd, st, resp)
		if resp.Status != proto.Completed || ctx.Err() != nil {
			return resp
		}
	}
	if err := commitLeftovers(ctx, cmd, resp.Result); err != nil {
		// The changes stay in the worktree, and the turn says why.
		note := "lazy could not commit the changes the agent left: " + err.Error()
		if resp.Error == "" {
			resp.Error = note
		} else {
			resp.Error += "; " + note
		}
	}
	return resp
}

// uncommittedFiles lists the worktree's changed and untracked files,
// escaped for display.
func uncommittedFiles(ctx context.Context, worktree string) []string {
	out, err := gitcli.New(worktree, "status", "--porcelain", "-z", "--untracked-files=all").Output(ctx)
	if err != nil {
		return nil
	}
	var files []string
	recs := strings.Split(string(out), "\x00")
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		if len(rec) < 4 {
			continue
		}
		files = append(files, sanitize.Field(rec[3:]))
		if rec[0] == 'R' || rec[0] == 'C' {
			i++ // a rename's source follows as a record of its own
		}
	}
	return files
}

// commitLeftovers commits every change in the worktree as the agent's
// work: author the agent, committer the user's identity (or lazy's),
// the message from the agent's final summary and trailers naming the
// task and turn. Nothing is committed while a merge still conflicts.
//
// It runs outside any sandbox, in a worktree the agent wrote, so no hook
// runs (core.hooksPath=/dev/null, --no-verify): the agent could have
// written a hooks directory the project points at. Nor is it signed: a
// detached supervisor has no terminal for a passphrase, and accept's own
// commit is what lands.
func commitLeftovers(ctx context.Context, cmd *proto.Command, summary string) error {
	if len(uncommittedFiles(ctx, cmd.Worktree)) == 0 {
		return nil
	}
	if files := unmerged(ctx, cmd.Worktree); len(files) > 0 {
		return fmt.Errorf("a merge still conflicts in %s; the next turn asks the agent to resolve it", listFiles(files))
	}
	// A stopped or crashed agent's git may have left its lock; the
	// commit would fail on it, and nothing else of this turn runs now.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := gitcli.New(cmd.Worktree, "add", "-A", "--", ".").Run(ctx); err != nil {
		return fmt.Errorf("git add: %w", err)
	}
	args := []string{"-c", "core.hooksPath=" + os.DevNull, "-c", "commit.gpgSign=false"}
	if id, _ := gitcli.New(cmd.Worktree, "config", "user.email").String(ctx); id == "" {
		args = append(args, "-c", "user.name=lazy", "-c", "user.email=lazy@lazy.invalid")
	}
	name, email := agentIdentity(cmd.Agent)
	args = append(args, "commit", "--quiet", "--no-verify", "--allow-empty-message", "--author", name+" <"+email+">", "--file", "-")
	if err := gitcli.New(cmd.Worktree, args...).Stdin([]byte(leftoverMessage(cmd, summary))).Run(ctx); err != nil {
		return fmt.Errorf("git commit: %w", err)
	}
	return nil
}

// agentIdentity is the author lazy gives the commits it makes for an
// agent.
func agentIdentity(agentName string) (name, email string) {
	switch agentName {
	case "claude":
		return "Claude Code (via lazy)", "claude@agents.lazy.invalid"
	case "codex":
		return "Codex (via lazy)", "codex@agents.lazy.invalid"
	}
	return "lazy exec agent", "exec@agents.lazy.invalid"
}

// Bounds of a leftover commit's message.
const (
	maxSubject = 72
	maxBody    = 4 << 10
)

// leftoverMessage is the commit message of the agent's leftovers: the
// first line of its final summary as the subject, the rest (bounded) as
// the body, then lazy's trailers, which name the task and the turn (the
// human turn that started it, as lazy show numbers it).
func leftoverMessage(cmd *proto.Command, summary string) string {
	summary = strings.TrimSpace(sanitize.Prose(agent.StripTerminal(summary)))
	subject, body, _ := strings.Cut(summary, "\n")
	subject = strings.TrimSpace(strings.TrimLeft(subject, "#*-> "))
	if subject == "" {
		subject = fmt.Sprintf("Work of turn %d the agent left uncommitted", cmd.Seq)
	}
	if utf8.RuneCountInString(subject) > maxSubject {
		subject = string([]rune(subject)[:maxSubject-3]) + "..."
		body = summary // the whole summary, since the subject is cut
	}
	body = strings.TrimSpace(body)
	if len(body) > maxBody {
		body = strings.ToValidUTF8(body[:maxBody], "") + "\n[...]"
	}
	var b strings.Builder
	b.WriteString(subject + "\n\n")
	if body != "" {
		b.WriteString(body + "\n\n")
	}
	fmt.Fprintf(&b, "The agent left these changes uncommitted at the end of its turn; lazy committed them on its behalf (lazy.uncommitted).\n\n")
	fmt.Fprintf(&b, "Lazy-Task: %s\nLazy-Turn: %d\n", cmd.TaskID, cmd.Seq)
	return b.String()
}

// grantsOf is what the posture table needs of this machine for cmd's
// turn: the sandbox, the permission mode and allow-list the command
// carries, and for Codex the git directories a commit in the worktree
// writes, read from git on disk.
func grantsOf(ctx context.Context, cmd *proto.Command) agent.Grants {
	g := agent.Grants{Sandboxed: cmd.Sandbox != nil, PermissionMode: cmd.PermissionMode, Allow: cmd.Policy.Allow}
	if cmd.Agent == "codex" && !g.Sandboxed && cmd.Kind != "ask" {
		g.WritableRoots = worktree.CommitDirs(ctx, cmd.Worktree)
	}
	return g
}
