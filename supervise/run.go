package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/gitcli"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/worktree"
)

// maxResult bounds the result text an exec agent's output contributes to
// the recorded turn; the full output stays in the log.
const maxResult = 64 << 10

// drainTimeout bounds reading the pty after the agent exited.
const drainTimeout = 2 * time.Second

// Run executes the turn described by dir's command.json and writes
// response.json. It returns an error only when it could not even record
// a response (the reconciler then sees a dead supervisor).
func Run(ctx context.Context, dir proto.Dir) error {
	var cmd proto.Command
	if err := dir.Read(proto.CommandFile, &cmd); err != nil {
		return fmt.Errorf("supervise: %w", err)
	}
	started := time.Now().UTC()
	st := proto.Status{Turn: cmd.Turn, PID: os.Getpid(), StartedAt: started, Phase: "agent"}
	if err := dir.Write(proto.StatusFile, st); err != nil {
		return err
	}
	var resp proto.Response
	if cmd.SyncFrom != "" {
		st.Phase = "merge_and_fix"
		_ = dir.Write(proto.StatusFile, st)
		if err := syncUpstream(ctx, cmd.Worktree, cmd.SyncFrom); err != nil {
			resp = proto.Response{Status: proto.Errored, Phase: "merge_and_fix", Error: err.Error(), ExitCode: -1}
		}
		st.Phase = "agent"
		_ = dir.Write(proto.StatusFile, st)
	}
	if cmd.BaseSHA == "" {
		if head, err := gitcli.New(cmd.Worktree, "rev-parse", "HEAD").String(ctx); err == nil {
			cmd.BaseSHA = head
		}
	}
	if resp.Status == "" {
		resp = runAgent(ctx, dir, &cmd, &st)
	}
	resp.Turn = cmd.Turn
	resp.FinishedAt = time.Now().UTC()
	// Work on disk is reported whatever happened to the agent.
	if cmd.BaseSHA != "" {
		if c, err := worktree.Commits(ctx, cmd.Worktree, cmd.BaseSHA); err == nil {
			resp.Commits = c
		}
		if f, err := worktree.ChangedFiles(ctx, cmd.Worktree, cmd.BaseSHA); err == nil {
			resp.ChangedFiles = f
		}
	}
	if resp.Commits == nil {
		resp.Commits = []string{}
	}
	if resp.ChangedFiles == nil {
		resp.ChangedFiles = []string{}
	}
	st.Phase = "done"
	_ = dir.Write(proto.StatusFile, st)
	return dir.Write(proto.ResponseFile, resp)
}

func runAgent(ctx context.Context, dir proto.Dir, cmd *proto.Command, st *proto.Status) proto.Response {
	fail := func(phase string, err error) proto.Response {
		f := agent.ClassifyExec(agent.Signals{Text: err.Error()})
		return proto.Response{Status: proto.Errored, Phase: phase, Error: err.Error(), ExitCode: -1, FailureClass: string(f.Class), FailureReason: f.Reason, Attempts: 1}
	}
	argv, err := agentArgv(cmd)
	if err != nil {
		return fail("supervisor", err)
	}
	logf, err := os.OpenFile(dir.Path(proto.LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fail("supervisor", err)
	}
	defer func() { _ = logf.Close() }()

	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Dir = cmd.Worktree
	c.Env = append(os.Environ(), "LAZY_PROMPT="+cmd.Prompt, "LAZY_TASK_ID="+cmd.TaskID, "LAZY_WORKTREE="+cmd.Worktree, "TERM=dumb")
	for k, v := range cmd.Env {
		c.Env = append(c.Env, k+"="+v)
	}
	// The pty makes the agent believe it has a terminal (some CLIs buffer
	// or refuse otherwise); pty.Start also puts it in its own session, so
	// the whole process group can be signalled.
	tty, err := pty.StartWithSize(c, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		return fail("supervisor", fmt.Errorf("start %s: %w", argv[0], err))
	}
	st.AgentPID = c.Process.Pid
	_ = dir.Write(proto.StatusFile, st)

	tail := &tailBuffer{max: maxResult}
	sinks := []io.Writer{logf, tail}
	var stream *agent.ClaudeStream
	if cmd.Agent == "claude" {
		stream = &agent.ClaudeStream{}
		sinks = append(sinks, stream)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(io.MultiWriter(sinks...), tty)
	}()
	waitErr := c.Wait()
	// Drain what the agent wrote before exiting: the master keeps it
	// buffered until read, and returns EIO once every slave fd is closed.
	// A grandchild that inherited the terminal may keep it open forever,
	// so the drain is bounded.
	select {
	case <-copied:
	case <-time.After(drainTimeout):
	}
	_ = tty.Close()
	<-copied
	out := strings.TrimSpace(strings.ReplaceAll(tail.String(), "\r\n", "\n"))

	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(waitErr, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case waitErr != nil:
		return fail("agent", waitErr)
	}
	if stream != nil {
		return claudeResponse(stream, code, out)
	}
	if code == 0 {
		return proto.Response{Status: proto.Completed, Phase: "agent", Result: out, ExitCode: 0}
	}
	f := agent.ClassifyExec(agent.Signals{Text: out, ExitCode: code})
	return proto.Response{
		Status: proto.Errored, Phase: "agent", Result: out, ExitCode: code,
		Error:      fmt.Sprintf("%s exited with status %d", argv[0], code),
		StderrTail: lastLines(out, 50), FailureClass: string(f.Class), FailureReason: f.Reason, Attempts: 1,
	}
}

// agentArgv builds the agent's argv. The exec agent gets the prompt as its
// last argument (and in LAZY_PROMPT).
func agentArgv(cmd *proto.Command) ([]string, error) {
	switch cmd.Agent {
	case "exec":
		if len(cmd.Exec) == 0 {
			return nil, errors.New("the exec agent needs a command (lazy start --command, or git config lazy.exec.command)")
		}
		argv := append(append([]string(nil), cmd.Exec...), cmd.Prompt)
		for i, a := range argv {
			if strings.IndexByte(a, 0) >= 0 {
				return nil, fmt.Errorf("argument %d of the agent command contains a NUL byte; lazy escapes NUL at intake, so this command.json was not written by lazy", i)
			}
		}
		return argv, nil
	case "claude":
		return agent.ClaudeArgv(cmd.Prompt, cmd.ResumeID, cmd.PermissionMode, false), nil
	default:
		return nil, fmt.Errorf("agent %q is not supported yet (available: exec, claude)", cmd.Agent)
	}
}

// claudeResponse turns what Claude Code streamed into a response. The
// final text is the result event's, not the raw stream.
func claudeResponse(stream *agent.ClaudeStream, code int, out string) proto.Response {
	stream.Close()
	f, failed := stream.Failed(code)
	if !failed {
		return proto.Response{Status: proto.Completed, Phase: "agent", Result: stream.Result, AgentSessionID: stream.SessionID, ExitCode: 0}
	}
	result := stream.Result
	if result == "" {
		result = lastLines(out, 50)
	}
	return proto.Response{
		Status: proto.Errored, Phase: "agent", Result: result, AgentSessionID: stream.SessionID, ExitCode: code,
		Error:      fmt.Sprintf("claude failed (exit %d): %s", code, f.Reason),
		StderrTail: lastLines(out, 50), FailureClass: string(f.Class), FailureReason: f.Reason, Attempts: 1,
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// syncUpstream merges the upstream branch into the task branch before
// the agent runs. A conflicting merge is aborted, leaving the worktree as
// it was, and reported: the task then needs a human (spec: "Merge-and-Fix
// Failures").
func syncUpstream(ctx context.Context, dir, branch string) error {
	ref := "refs/heads/" + branch
	if err := gitcli.New(dir, "rev-parse", "--verify", "--quiet", ref+"^{commit}").Run(ctx); err != nil {
		return fmt.Errorf("upstream branch %s does not exist", branch)
	}
	args := []string{"merge", "--no-edit", "-m", "Merge " + branch + " (lazy: upstream before the next turn)", ref}
	if id, _ := gitcli.New(dir, "config", "user.email").String(ctx); id == "" {
		args = append([]string{"-c", "user.name=lazy", "-c", "user.email=lazy@lazy.invalid"}, args...)
	}
	err := gitcli.New(dir, args...).Run(ctx)
	if err == nil {
		return nil
	}
	conflicts, _ := gitcli.New(dir, "diff", "--name-only", "--diff-filter=U").String(ctx)
	if gitcli.New(dir, "rev-parse", "--verify", "--quiet", "MERGE_HEAD").Run(ctx) == nil {
		if aerr := gitcli.New(dir, "merge", "--abort").Run(ctx); aerr != nil {
			return fmt.Errorf("merging %s failed (%w) and could not be aborted: %w", branch, err, aerr)
		}
	}
	if conflicts != "" {
		return fmt.Errorf("merging %s into the task branch conflicts in: %s (merge aborted; resolve it by hand or with lazy pair)", branch, strings.ReplaceAll(conflicts, "\n", ", "))
	}
	return fmt.Errorf("merging %s into the task branch failed: %w", branch, err)
}
