package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/internal/allowpath"
	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/proc"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/link"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
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
	// One supervisor per task: the flock is held until this process dies,
	// and it is what everyone else reads as "a turn is running". Probes
	// hold it only for an instant, so a short wait tells a probe from a
	// second supervisor.
	lazyDir := dir.LazyDir()
	lockCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	lock, err := flock.Acquire(lockCtx, proto.SupervisorLock(lazyDir, cmd.TaskID))
	cancel()
	if err != nil {
		return fmt.Errorf("supervise %s: another supervisor runs this task; this one exits without running a turn: %w", cmd.TaskID, err)
	}
	defer func() { _ = lock.Release() }()
	// A stop that came between this process's launch and its lock took
	// the command away (lazy stop right after lazy start): the turn ends
	// before it begins.
	var again proto.Command
	if err := dir.Read(proto.CommandFile, &again); err != nil || again.Turn != cmd.Turn {
		return nil
	}
	// An agent of an earlier turn whose supervisor died must not share
	// the worktree with this one.
	proc.KillMarkedIn(proto.TurnMarker(cmd.TaskID), proto.TurnScope(lazyDir))
	// This process exists for the turn alone: whatever the agent starts
	// and orphans (setsid, a double fork) comes back to it, so the turn's
	// end can end it even if it cleared its environment.
	_ = proc.BecomeSubreaper()
	started := time.Now().UTC()
	revoke := giveMCP(dir, &cmd)
	defer revoke()
	st := proto.Status{Turn: cmd.Turn, PID: os.Getpid(), StartedAt: started, Phase: "agent"}
	if err := dir.Write(proto.StatusFile, st); err != nil {
		return err
	}
	var resp proto.Response
	if cmd.Prepare != nil {
		st.Phase = "setup"
		_ = dir.Write(proto.StatusFile, st)
		if failed := prepare(ctx, dir, &cmd); failed != nil {
			resp = *failed
		}
		noteEscapees(dir, &cmd, "the setup (lazy.setup)", endEscapees(dir, &cmd))
	}
	var conflicts []string
	mergeHead := "" // the upstream side of a merge the agent must conclude
	if cmd.SyncFrom != "" && resp.Status == "" {
		st.Phase = "merge_and_fix"
		_ = dir.Write(proto.StatusFile, st)
		var err error
		if conflicts, err = syncUpstream(ctx, cmd.Worktree, cmd.SyncFrom); err != nil {
			resp = proto.Response{Status: proto.Errored, Phase: "merge_and_fix", Error: err.Error(), ExitCode: -1}
		}
	}
	st.Phase = "agent"
	_ = dir.Write(proto.StatusFile, st)
	if cmd.BaseSHA == "" {
		if head, err := gitcli.New(cmd.Worktree, "rev-parse", "HEAD").String(ctx); err == nil {
			cmd.BaseSHA = head
		}
	}
	st.BaseSHA = cmd.BaseSHA
	_ = dir.Write(proto.StatusFile, st)
	switch {
	case resp.Status != "":
	case cmd.Kind == "sync" && len(conflicts) > 0:
		resp = mergeConflictResponse(cmd.SyncFrom, conflicts)
	case cmd.Kind == "sync":
		// A sync is the merge alone; no agent runs.
		resp = proto.Response{Status: proto.Completed, Phase: "merge_and_fix", Result: "merged " + cmd.SyncFrom + " into the task branch"}
	case cmd.Kind == "ask":
		resp = readOnly(ctx, dir, &cmd, &st)
	default:
		// A conflict this turn's merge (or an earlier one) left is the
		// agent's to resolve: the prompt says where.
		note := conflictNote(ctx, cmd.Worktree, cmd.SyncFrom, conflicts)
		cmd.Prompt = note + cmd.Prompt
		if cmd.FreshPrompt != "" {
			cmd.FreshPrompt = note + cmd.FreshPrompt
		}
		if merging(ctx, cmd.Worktree) {
			mergeHead, _ = gitcli.New(cmd.Worktree, "rev-parse", "MERGE_HEAD").String(ctx)
		}
		resp = runResuming(ctx, dir, &cmd, &st, DefaultPolicy(), time.Now)
		resp = settleUncommitted(ctx, dir, &cmd, &st, resp)
	}
	resp.Turn = cmd.Turn
	resp.FinishedAt = time.Now().UTC()
	// Work on disk is reported whatever happened to the agent; an ask
	// made none (readOnly put the worktree back).
	if cmd.BaseSHA != "" && cmd.Kind != "ask" {
		if c, err := worktree.Commits(ctx, cmd.Worktree, cmd.BaseSHA); err == nil {
			resp.Commits = c
		}
		if f, err := worktree.ChangedFiles(ctx, cmd.Worktree, cmd.BaseSHA); err == nil {
			resp.ChangedFiles = f
		}
		if mergeHead != "" && len(resp.ChangedFiles) > 0 {
			// The upstream side of a merge the agent resolved is not the
			// agent's change (nor a violation of its allowed paths).
			if f, err := worktree.Except(ctx, cmd.Worktree, mergeHead, resp.ChangedFiles); err == nil {
				resp.ChangedFiles = f
			}
		}
		resp.BaseSHA = cmd.BaseSHA
		approved := map[string]bool{}
		for _, a := range cmd.Approved {
			approved[a] = true
		}
		for _, v := range allowpath.Outside(cmd.AllowedPaths, resp.ChangedFiles) {
			if !approved[v] {
				resp.Violations = append(resp.Violations, v)
			}
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

// readOnly runs an ask, which must change nothing, for every agent kind:
// the worktree is captured before the agent runs and put back after it,
// whatever the agent did (the sandbox, where it is on, already makes the
// worktree read-only; the exec agent is only told LAZY_READ_ONLY=1). What
// the agent wrote is never destroyed: it is kept at proto.KeptRef, and
// the answer says so. An ask whose worktree cannot be captured does not
// run.
func readOnly(ctx context.Context, dir proto.Dir, cmd *proto.Command, st *proto.Status) proto.Response {
	before, err := worktree.Capture(ctx, cmd.Worktree)
	if err != nil {
		return proto.Response{Status: proto.Errored, Phase: "supervisor", ExitCode: -1,
			Error: "the ask did not run: lazy could not capture the worktree to keep the ask read-only: " + err.Error()}
	}
	ro := proto.TreeState(before)
	st.ReadOnly = &ro
	_ = dir.Write(proto.StatusFile, st)
	resp := runResuming(ctx, dir, cmd, st, DefaultPolicy(), time.Now)
	// Put back even when the turn was stopped: the stop waits for it.
	if note := worktree.UndoReadOnly(context.WithoutCancel(ctx), cmd.Worktree, before, proto.KeptRef(cmd.TaskID, cmd.Seq)); note != "" {
		resp.Result = strings.TrimSpace(resp.Result + "\n\n" + note)
	}
	st.ReadOnly = nil
	_ = dir.Write(proto.StatusFile, st)
	return resp
}

// pushBack gives a turn that completed with uncommitted changes in its
// worktree one more run of the agent, in the same conversation, asking it
// to commit or discard them (lazy.uncommitted push-back): uncommitted
// work is easy to lose and invisible to accept. At most once per turn.
func pushBack(ctx context.Context, dir proto.Dir, cmd *proto.Command, st *proto.Status, resp proto.Response) proto.Response {
	files := uncommittedFiles(ctx, cmd.Worktree)
	if len(files) == 0 {
		return resp
	}
	prompt := fmt.Sprintf("[supervisor] Your turn ended with uncommitted changes in the worktree (%s: %s). "+
		"Commit what belongs to this task with a clear message, or discard what should not be kept, so the worktree is clean; then say in one or two sentences what you did.",
		words.Count(len(files), "file", "files"), listFiles(files))
	pb := &proto.PushBack{Prompt: prompt, At: time.Now().UTC(), FirstResult: resp.Result}
	first := resp.Usage
	cmd.Prompt = prompt
	if resp.AgentSessionID != "" {
		cmd.ResumeID = resp.AgentSessionID
	}
	if cmd.Env == nil {
		cmd.Env = map[string]string{}
	}
	cmd.Env["LAZY_PUSH_BACK"] = "1" // an exec agent can tell it is being pushed back
	again := runAttempts(ctx, dir, cmd, st, DefaultPolicy(), time.Now)
	again.PushBack = pb
	again.Resume = resp.Resume // how the turn met the agent's session, before the push-back
	again.Usage = first.Plus(again.Usage)
	again.Tools = resp.Tools.Plus(again.Tools)
	if again.AgentSessionID == "" {
		again.AgentSessionID = resp.AgentSessionID
	}
	return again
}

// leftToRetry is what a retry may spend of allowed once the earlier
// attempts reported spent. A figure no turn can cost (negative, not a
// number, past budget's bound) spends it all: a hostile report never
// buys a retry more than the budget left.
func leftToRetry(allowed, spent float64) float64 {
	if !(spent >= 0 && spent <= task.MaxTurnUSD) {
		return 0
	}
	return allowed - spent
}

// giveMCP mints the turn's MCP token and points the agent at lazy
// mcp-proxy. The token lives in the agent's environment only and is
// revoked when the turn ends. Without it the turn still runs: the agent
// just has no lazy tools.
func giveMCP(dir proto.Dir, cmd *proto.Command) (revoke func()) {
	lazyDir := dir.LazyDir()
	exe, err := os.Executable()
	if err != nil {
		return func() {}
	}
	token, err := link.MintToken(lazyDir, link.Identity{Task: cmd.TaskID, Session: cmd.Session, Turn: cmd.Seq})
	if err != nil {
		return func() {}
	}
	if cmd.Env == nil {
		cmd.Env = map[string]string{}
	}
	cmd.Env[link.TokenEnv] = token
	cmd.MCP = &proto.MCPServer{Command: exe, Args: []string{"-C", filepath.Dir(lazyDir), "mcp-proxy"}}
	if b, err := json.Marshal(append([]string{exe}, cmd.MCP.Args...)); err == nil {
		cmd.Env["LAZY_MCP_COMMAND"] = string(b) // for exec agents
	}
	return func() { link.RevokeToken(lazyDir, token) }
}

// runResuming runs a turn that continues a session (cmd.FreshPrompt is
// set) in the agent's own session when it can, and in a new one when it
// cannot: none was recorded, or the CLI refused the id (class
// resume_refused, which the policy never retries). The new session gets
// FreshPrompt (the task's prompt, why, and the turn's message), at once
// and once, so a session that is gone costs neither a failure nor a
// retry loop. The response says which happened.
func runResuming(ctx context.Context, dir proto.Dir, cmd *proto.Command, st *proto.Status, policy Policy, now func() time.Time) proto.Response {
	if cmd.FreshPrompt == "" {
		return runAttempts(ctx, dir, cmd, st, policy, now)
	}
	fresh := func(why string, before proto.Response) proto.Response {
		cmd.ResumeID, cmd.Prompt = "", cmd.FreshPrompt
		resp := runAttempts(ctx, dir, cmd, st, policy, now)
		resp.Usage = before.Usage.Plus(resp.Usage)
		resp.Tools = before.Tools.Plus(resp.Tools)
		resp.Resume = &proto.Resume{NewSession: resp.AgentSessionID, Reason: why}
		return resp
	}
	id := cmd.ResumeID
	if id == "" {
		return fresh("no session of the agent was recorded for this task on this machine", proto.Response{})
	}
	resp := runAttempts(ctx, dir, cmd, st, policy, now)
	if resp.FailureClass == string(agent.ResumeRefused) && resp.Tools == nil && !committed(ctx, cmd) && ctx.Err() == nil {
		// Only a run that did nothing: the CLI refused before any model
		// call. Words the agent itself printed after working are not a
		// reason to start over.
		return fresh(resp.FailureReason, resp)
	}
	if resp.AgentSessionID != "" && resp.AgentSessionID != id {
		// Codex takes an id that is not one of its threads for a new
		// thread's name and starts one without a word.
		resp.Resume = &proto.Resume{NewSession: resp.AgentSessionID, Reason: "the agent started a new session instead of resuming " + id}
		return resp
	}
	resp.Resume = &proto.Resume{Resumed: id}
	return resp
}

// committed reports whether the turn made commits; false when git cannot
// tell.
func committed(ctx context.Context, cmd *proto.Command) bool {
	if cmd.BaseSHA == "" {
		return false
	}
	c, err := worktree.Commits(ctx, cmd.Worktree, cmd.BaseSHA)
	return err == nil && len(c) > 0
}

// maxWatchdogRelaunches bounds in-turn relaunches after zero-work
// watchdog kills.
const maxWatchdogRelaunches = 2

// runAttempts runs the agent until it completes, the policy says stop, or
// the watchdog ends the turn.
func runAttempts(ctx context.Context, dir proto.Dir, cmd *proto.Command, st *proto.Status, policy Policy, now func() time.Time) proto.Response {
	timing := cmd.Timing.WithDefaults()
	policy.UnreachableFor = timing.UnreachableTimeout
	var history []Attempt
	var spent *proto.Usage // every attempt's cost counts
	var tools *proto.Tools // and every attempt's tool calls
	relaunches := 0
	allowed := cmd.MaxBudgetUSD
	for {
		began := now()
		resp, wd := launchAgent(ctx, dir, cmd, st, timing, unreachableStreak(history))
		spent = spent.Plus(resp.Usage)
		resp.Usage = spent
		tools = tools.Plus(resp.Tools)
		resp.Tools = tools
		if wd != nil && wd.Guard == unreachableGuard {
			// The agent kept retrying an API it cannot reach past the
			// bound: a stop, blocked with the class, like the policy's.
			since := unreachableStreak(history)
			if since.IsZero() {
				since = wd.Since
			}
			history = append(history, Attempt{Failure: agent.Failure{Class: agent.TransientUnreachable, Reason: resp.FailureReason}, Ran: now().Sub(began), At: began})
			resp.Attempts = len(history)
			resp.FailureReason = UnreachableStop(now().Sub(since), timing.UnreachableTimeout, resp.Attempts, resp.FailureReason)
			resp.Error = "lazy stopped the agent: " + resp.FailureReason
			return resp
		}
		if wd != nil {
			wd.Relaunched = relaunches
			wd.AfterWork = didWork(ctx, cmd)
			if !wd.AfterWork && relaunches < maxWatchdogRelaunches && ctx.Err() == nil {
				// Nothing was captured, so nothing is lost by starting
				// over: the case a provider incident produces.
				relaunches++
				continue
			}
			return watchdogResponse(resp, wd)
		}
		if resp.Status == proto.Completed || resp.FailureClass == "" || ctx.Err() != nil {
			return resp
		}
		f := agent.Failure{Class: agent.Class(resp.FailureClass), Reason: resp.FailureReason, ResetAt: resp.ResetAt}
		history = append(history, Attempt{Failure: f, Ran: now().Sub(began), At: began})
		d := policy.Decide(history, now())
		resp.Attempts = len(history)
		if !d.Retry {
			resp.FailureReason = d.Stop
			return resp
		}
		if allowed > 0 && spent != nil {
			// A retry may spend only what the earlier attempts left.
			if cmd.MaxBudgetUSD = leftToRetry(allowed, spent.CostUSD); cmd.MaxBudgetUSD < 0.0001 {
				resp.FailureClass, resp.FailureReason = string(agent.Budget), fmt.Sprintf("the turn's attempts spent the $%.2f it was given", allowed)
				resp.ResetAt = time.Time{}
				return resp
			}
		}
		if resp.AgentSessionID != "" {
			cmd.ResumeID = resp.AgentSessionID // retry inside the same conversation
		}
		delay := time.Duration(float64(d.Delay) * timing.RetryScale)
		st.Phase, st.Attempt = "retrying", len(history)
		st.RetryFailureClass, st.RetryFailureReason, st.RetryNextDelayMS = resp.FailureClass, resp.FailureReason, d.Delay.Milliseconds()
		_ = dir.Write(proto.StatusFile, st)
		select {
		case <-ctx.Done():
			return resp
		case <-time.After(delay):
		}
		st.Phase, st.RetryFailureClass, st.RetryFailureReason, st.RetryNextDelayMS = "agent", "", "", 0
		_ = dir.Write(proto.StatusFile, st)
	}
}

// unreachableStreak returns when the trailing run of unreachable
// failures began, or zero when the last attempt was something else.
func unreachableStreak(history []Attempt) time.Time {
	var since time.Time
	for i := len(history) - 1; i >= 0 && history[i].Failure.Class == agent.TransientUnreachable; i-- {
		since = history[i].At
	}
	return since
}

// unreachableGuard names the kill of an agent that retried an unreachable
// API past lazy.unreachableTimeout.
const unreachableGuard = "unreachable_timeout"

// didWork reports whether the turn left commits or uncommitted changes.
// If git cannot tell, it answers false: fail toward retrying.
func didWork(ctx context.Context, cmd *proto.Command) bool {
	if cmd.BaseSHA == "" {
		return false
	}
	commits, err := worktree.Commits(ctx, cmd.Worktree, cmd.BaseSHA)
	if err != nil {
		return false
	}
	dirty, err := worktree.Dirty(ctx, cmd.Worktree)
	return len(commits) > 0 || (err == nil && dirty)
}

func watchdogResponse(resp proto.Response, wd *proto.Watchdog) proto.Response {
	how := "SIGTERM"
	if wd.Escalated {
		how = "SIGTERM, then SIGKILL"
	}
	what := "after the agent had done work, so the turn ends here"
	if !wd.AfterWork {
		what = "with no work captured"
	}
	resp.Status, resp.Phase = proto.Errored, "agent"
	resp.FailureClass, resp.FailureReason = "", "" // outside the taxonomy: the reconciler interrupts
	resp.Error = fmt.Sprintf("watchdog: no progress for %s (watchdog_output_timeout; keep-alives are not progress); sent %s %s; lazy relaunched the agent %s in this turn first",
		wd.Limit, how, what, words.Count(wd.Relaunched, "time", "times"))
	resp.Watchdog = wd
	return resp
}

// launchFailure is the response for lazy's own failure to launch or
// wait for the agent. It is not the agent's failure: no class, so it is
// not retried and the reconciler interrupts.
func launchFailure(phase string, err error) proto.Response {
	return proto.Response{Status: proto.Errored, Phase: phase, Error: err.Error(), ExitCode: -1}
}

// runAgent runs the agent once. unreachableSince is when the current
// streak of unreachable attempts began (zero if none): an agent that
// only retries an unreachable API is stopped once the streak, counted
// from then or from its own first retry notice, reaches the bound.
// launchAgent runs one attempt of the agent: runAgent, which a test
// replaces to script what the CLI answers.
var launchAgent = runAgent

func runAgent(ctx context.Context, dir proto.Dir, cmd *proto.Command, st *proto.Status, timing proto.Timing, unreachableSince time.Time) (proto.Response, *proto.Watchdog) {
	adapter, err := agent.For(cmd.Agent)
	if err != nil {
		return launchFailure("supervisor", err), nil
	}
	grants := grantsOf(ctx, cmd)
	argv, err := adapter.Argv(turnOf(cmd, grants))
	if err != nil {
		return launchFailure("supervisor", err), nil
	}
	argv, release, err := confine(ctx, dir, cmd, argv)
	if err != nil {
		return launchFailure("supervisor", err), nil
	}
	defer release()
	logf, err := openTurnLog(dir, cmd)
	if err != nil {
		return launchFailure("supervisor", err), nil
	}
	defer func() { _ = logf.Close() }()

	c := agentCommand(ctx, cmd, argv, grants, timing, proto.TurnScope(dir.LazyDir()))
	// The pty makes the agent believe it has a terminal (some CLIs buffer
	// or refuse otherwise); pty.Start also puts it in its own session, so
	// the whole process group can be signalled.
	tty, err := pty.StartWithSize(c, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		return launchFailure("supervisor", fmt.Errorf("start %s: %w", argv[0], err)), nil
	}
	st.AgentPID = c.Process.Pid
	_ = dir.Write(proto.StatusFile, st)

	output := copyOutput(adapter, logf, tty)
	w := &turnWatch{dir: dir, st: st, stream: output.stream, prog: output.prog, timing: timing, unreachableSince: unreachableSince,
		disk: &diskWork{dir: cmd.Worktree, every: min(diskCheckEvery, timing.WatchdogTimeout/3)}}
	wd, waitErr := waitWatched(ctx, c, w)
	// What the agent left running goes with it, before the terminal is
	// drained (an escapee may hold it open); the log says so after.
	escaped := endEscapees(dir, cmd)
	out := output.drain(tty)
	noteEscapees(dir, cmd, "the agent", escaped)
	w.endRetry()

	code, err := exitCode(waitErr)
	if err != nil {
		return launchFailure("agent", err), nil
	}
	resp, wd := agentResponse(adapter, argv[0], output.stream, wd, w.retrying, code, out)
	t := output.tools.Tally()
	resp.Tools = (&proto.Tools{Calls: t.Calls, Failed: t.Failed}).Plus(nil)
	resp = withUsage(resp, output.stream)
	if u := resp.Usage; u != nil && u.Model == "" && cmd.Model == "" && cmd.Agent == "codex" {
		// Codex names no model in its output; the one its config chose
		// is what lazy prices the turn by.
		u.Model = agent.CodexConfiguredModel(c.Env)
	}
	return resp, wd
}

// endEscapees ends every process the agent or the setup left running
// once it exited: those carrying the turn's marker (which setsid does
// not shed) and every descendant of this supervisor (a subreaper, so
// orphans that cleared their environment are among them). It runs only
// while nothing else of the supervisor has a child process: what ran
// has been waited for. It returns the pids it ended.
func endEscapees(dir proto.Dir, cmd *proto.Command) []int {
	lazyDir := dir.LazyDir()
	killed := proc.KillMarkedIn(proto.TurnMarker(cmd.TaskID), proto.TurnScope(lazyDir))
	killed = append(killed, proc.KillDescendantsExcept(lazyDetached)...)
	slices.Sort(killed)
	return slices.Compact(killed)
}

// lazyDetached reports whether pid is a lazy process the agent started
// detached on purpose: a daemon, or another task's supervisor, which a
// lazy command the agent ran spawned (it runs lazy's own binary without
// the turn's marker, which lazy strips from what it detaches and from
// nothing else; see proto.WithoutTurnEnv). It outlives the turn, with
// what it runs, as it would have without the subreaper. (An agent
// outside a sandbox that runs lazy's binary on purpose to outlive its
// turn is not stopped by this: SECURITY.md's limits.)
func lazyDetached(pid int) bool {
	if proc.EnvHas(pid, proto.TurnEnv) {
		return false
	}
	self, err := os.Executable()
	if err != nil {
		return false
	}
	exe := proc.Exe(pid)
	if exe == "" {
		return false
	}
	a, aerr := os.Stat(exe)
	b, berr := os.Stat(self)
	return aerr == nil && berr == nil && os.SameFile(a, b)
}

// noteEscapees says in the turn's log what endEscapees ended after what
// (the agent, the setup) exited.
func noteEscapees(dir proto.Dir, cmd *proto.Command, what string, killed []int) {
	if len(killed) == 0 {
		return
	}
	pids := make([]string, len(killed))
	for i, p := range killed {
		pids[i] = strconv.Itoa(p)
	}
	_ = dir.AppendLogNote(proto.LogLine{Kind: proto.NoteEnded, Turn: cmd.Seq,
		Text: fmt.Sprintf("%s exited and left %d process(es) running (pid %s); lazy ended them", what, len(killed), strings.Join(pids, ", "))})
}

// openTurnLog opens the task's agent log for one launch of the agent:
// its frame first (turn, kind, agent; a later launch of the same turn
// says why it runs), marked in the index, which lazy logs --turn reads.
func openTurnLog(dir proto.Dir, cmd *proto.Command) (*os.File, error) {
	frame := proto.LogLine{Turn: cmd.Seq, Kind: cmd.Kind, Agent: cmd.Agent, Model: cmd.Model, At: time.Now(), Run: dir.Launches(cmd.Seq, cmd.Kind) + 1}
	switch {
	case cmd.Env["LAZY_PUSH_BACK"] == "1":
		frame.Why = "push-back on uncommitted changes"
	case frame.Run > 1:
		frame.Why = "retry"
	}
	if frame.Run == 1 {
		frame.Run = 0
	}
	return dir.StartLaunch(frame)
}

// agentCommand is the agent's process, not yet started: in the worktree,
// with the turn's environment (what the agent is asked, where, and what
// it may do), stopped as a whole process group.
func agentCommand(ctx context.Context, cmd *proto.Command, argv []string, grants agent.Grants, timing proto.Timing, scope string) *exec.Cmd {
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// When the supervisor is told to stop, the whole agent process group
	// gets SIGTERM, and the agent SIGKILL after the grace period.
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGTERM) }
	c.WaitDelay = timing.KillGrace
	c.Dir = cmd.Worktree
	c.Env = append(proto.WithoutTurnEnv(os.Environ()), "LAZY_PROMPT="+cmd.Prompt, "LAZY_TASK_ID="+cmd.TaskID, "LAZY_WORKTREE="+cmd.Worktree, "LAZY_TURN_KIND="+cmd.Kind, "TERM=dumb",
		proto.TurnMarker(cmd.TaskID), scope)
	if cmd.Kind == "ask" {
		// The exec agent has no enforced sandbox; it is told, and must honour it.
		c.Env = append(c.Env, "LAZY_READ_ONLY=1")
	}
	c.Env = append(c.Env, agent.TurnPermissions(cmd.Agent, cmd.Kind == "ask", grants).Env...)
	for k, v := range cmd.Env {
		c.Env = append(c.Env, k+"="+v)
	}
	return c
}

// agentOutput is where the agent's terminal output goes while it runs:
// the turn's log, the tail the response quotes, the adapter's stream
// parser (nil for agents without one) and the progress clock the
// watchdog reads.
type agentOutput struct {
	log    *agent.Capture
	tail   *tailBuffer
	stream agent.Stream
	tools  *agent.ToolCounter
	prog   *progress
	copied chan struct{} // closed when the copy from the terminal ends
}

// copyOutput starts copying the agent's terminal into every sink. The
// progress clock starts now: a fresh agent has not been silent yet.
func copyOutput(adapter agent.Adapter, logf io.Writer, tty io.Reader) *agentOutput {
	o := &agentOutput{log: agent.NewCapture(logf), tail: &tailBuffer{max: maxResult}, stream: adapter.NewStream(), tools: &agent.ToolCounter{}, copied: make(chan struct{})}
	sinks := []io.Writer{o.log, o.tail, o.tools}
	if o.stream != nil {
		sinks = append(sinks, o.stream)
	}
	o.prog = &progress{stream: o.stream}
	o.prog.touch()
	sinks = append(sinks, o.prog)
	go func() {
		defer close(o.copied)
		_, _ = io.Copy(io.MultiWriter(sinks...), tty)
	}()
	return o
}

// drain ends the copy once the agent exited and returns the readable
// tail of its output. The master keeps what the agent wrote buffered
// until read, and returns EIO once every slave fd is closed; a
// grandchild that inherited the terminal may keep it open forever, so
// the drain is bounded.
func (o *agentOutput) drain(tty io.Closer) string {
	select {
	case <-o.copied:
	case <-time.After(drainTimeout):
	}
	_ = tty.Close()
	<-o.copied
	// The launch ends on a newline, whatever the agent printed last.
	_ = o.log.Close()
	// A CLI under a pty restores its terminal modes on exit: those
	// escape sequences are not text a human can read in a reason.
	return strings.TrimSpace(strings.ReplaceAll(agent.StripTerminal(o.tail.String()), "\r\n", "\n"))
}

// waitWatched waits for the agent to exit while the watchdog watches it,
// and returns the watchdog's verdict (nil: none fired) and how the wait
// ended.
func waitWatched(ctx context.Context, c *exec.Cmd, w *turnWatch) (*proto.Watchdog, error) {
	exited := make(chan struct{})
	var wd *proto.Watchdog
	var wdDone sync.WaitGroup
	wdDone.Add(1)
	go func() {
		defer wdDone.Done()
		wd = watch(c.Process.Pid, w.prog, w.timing, exited, func() *proto.Watchdog { return w.tick(ctx) })
	}()
	waitErr := c.Wait()
	close(exited)
	wdDone.Wait()
	return wd, waitErr
}

// exitCode is the agent's exit code, 128+signal when a signal ended it,
// or an error when the agent could not be waited for at all.
func exitCode(waitErr error) (int, error) {
	var ee *exec.ExitError
	switch {
	case errors.As(waitErr, &ee):
		code := ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return code, nil
	case waitErr != nil:
		return 0, waitErr
	}
	return 0, nil
}

// withUsage adds what the turn cost, as the agent's stream reported it,
// to resp.
func withUsage(resp proto.Response, stream agent.Stream) proto.Response {
	if stream == nil {
		return resp
	}
	stream.Close() // a last line without its newline counts too
	u := stream.Usage()
	resp.Usage = (&proto.Usage{CostUSD: u.CostUSD, InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens, OutputTokens: u.OutputTokens, Model: u.Model}).Plus(nil)
	return resp
}

// turnWatch is what the watchdog checks on every tick of a running turn:
// the agent's progress, its own retrying, and how long it has been
// unable to reach its API. It publishes both to the status file for the
// read surfaces. Only the watchdog goroutine touches it until the agent
// exited.
type turnWatch struct {
	dir    proto.Dir
	st     *proto.Status
	stream agent.Stream
	prog   *progress
	disk   *diskWork
	timing proto.Timing
	// unreachableSince is when an earlier turn of this run first found the
	// API unreachable (zero: none did).
	unreachableSince time.Time
	reported         time.Time      // the last progress published
	retrySince       time.Time      // the agent's first retry notice since its last work
	retrying         *agent.Failure // what the agent is retrying, nil when it is not
}

// tick publishes what changed since the last tick, at most one status
// write, and returns the unreachable guard when the agent has been unable
// to reach its API for too long.
func (w *turnWatch) tick(ctx context.Context) *proto.Watchdog {
	// Files or commits that changed in the worktree are work too, though
	// the agent printed nothing (a long tool call).
	if w.disk.changed(ctx) {
		w.prog.touch()
	}
	progressed := w.publishProgress()
	retried := w.trackRetry()
	if progressed || retried {
		_ = w.dir.Write(proto.StatusFile, w.st)
	}
	return w.unreachable()
}

// publishProgress records the agent's latest progress in the status,
// reporting whether it changed.
func (w *turnWatch) publishProgress() bool {
	last := w.prog.lastAt()
	if last.Equal(w.reported) {
		return false
	}
	w.reported = last
	w.st.LastProgress = last
	if w.stream != nil {
		w.st.Progress = w.stream.Progress()
	}
	return true
}

// trackRetry follows the agent's own retrying (as its stream reports it)
// into the status, reporting whether the status changed.
func (w *turnWatch) trackRetry() bool {
	var a agent.Activity
	if w.stream != nil {
		a = w.stream.Activity()
	}
	st := w.st
	switch {
	case a.Retry != nil:
		if w.retrySince.IsZero() {
			w.retrySince = time.Now()
		}
		w.retrying = a.Retry
		if !st.AgentRetrying || st.Attempt != a.RetryAttempt || st.RetryFailureClass != string(a.Retry.Class) || st.RetryFailureReason != a.Retry.Reason {
			st.AgentRetrying, st.Attempt, st.RetryFailureClass, st.RetryFailureReason = true, a.RetryAttempt, string(a.Retry.Class), a.Retry.Reason
			return true
		}
	case st.AgentRetrying:
		w.retrySince, w.retrying = time.Time{}, nil
		clearAgentRetry(st)
		return true
	}
	return false
}

// unreachable returns the unreachable guard once the agent has retried an
// unreachable API for longer than the timing allows, counted from the
// first such turn of this run; nil otherwise.
func (w *turnWatch) unreachable() *proto.Watchdog {
	if w.retrying == nil || w.retrying.Class != agent.TransientUnreachable {
		return nil
	}
	since := w.unreachableSince
	if since.IsZero() {
		since = w.retrySince
	}
	if time.Since(since) < w.timing.UnreachableTimeout {
		return nil
	}
	return &proto.Watchdog{Guard: unreachableGuard, Limit: w.timing.UnreachableTimeout, Since: since}
}

// endRetry clears a retry notice the agent left in the status when it
// exited: it is not retrying any more.
func (w *turnWatch) endRetry() {
	if w.st.AgentRetrying {
		clearAgentRetry(w.st)
		_ = w.dir.Write(proto.StatusFile, w.st)
	}
}

// agentResponse turns how the agent's run ended into a response.
func agentResponse(adapter agent.Adapter, bin string, stream agent.Stream, wd *proto.Watchdog, retrying *agent.Failure, code int, out string) (proto.Response, *proto.Watchdog) {
	if wd != nil && wd.Guard == unreachableGuard {
		reason := "cannot connect to its API"
		if retrying != nil && retrying.Reason != "" {
			reason = retrying.Reason
		}
		resp := proto.Response{Status: proto.Errored, Phase: "agent", Result: proto.Tail(out), ExitCode: code, StderrTail: proto.Tail(out),
			FailureClass: string(agent.TransientUnreachable), FailureReason: reason}
		if stream != nil {
			resp.AgentSessionID = stream.Session()
		}
		return resp, wd
	}
	if wd != nil {
		return proto.Response{Status: proto.Errored, Phase: "agent", Result: out, ExitCode: code, StderrTail: proto.Tail(out)}, wd
	}
	if stream != nil {
		return streamResponse(adapter.Name(), stream, code, out), nil
	}
	if code == 0 {
		return proto.Response{Status: proto.Completed, Phase: "agent", Result: out, ExitCode: 0}, nil
	}
	f := adapter.Classify(agent.Signals{Text: out, ExitCode: code})
	return proto.Response{
		Status: proto.Errored, Phase: "agent", Result: out, ExitCode: code,
		Error:      fmt.Sprintf("%s exited with status %d", bin, code),
		StderrTail: proto.Tail(out), FailureClass: string(f.Class), FailureReason: f.Reason, Attempts: 1,
	}, nil
}

// progress tracks when the agent last made progress. For a structured
// agent that is an event showing work (its stream's Activity counts
// them): retry notices and keep-alives are not progress, so a CLI that
// only retries its API trips the watchdog. For a plain command any output
// line counts.
type progress struct {
	stream agent.Stream
	mu     sync.Mutex
	last   time.Time
	work   int
	lines  agent.Lines
}

func (p *progress) touch() {
	p.mu.Lock()
	p.last = time.Now()
	p.mu.Unlock()
}

func (p *progress) lastAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func (p *progress) since() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Since(p.last)
}

// Write sees output after the stream parsed it (it follows the stream in
// the MultiWriter), so the stream's work count is current.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stream != nil {
		if w := p.stream.Activity().Work; w > p.work {
			p.work, p.last = w, time.Now()
		}
		return len(b), nil
	}
	p.lines.Feed(b, func(line string) {
		if strings.TrimSpace(line) != "" {
			p.last = time.Now()
		}
	})
	return len(b), nil
}

// diskCheckEvery bounds how often the watchdog looks at the worktree.
const diskCheckEvery = 30 * time.Second

// diskWork notices changes in a worktree (HEAD, or what git status
// reports) at most once per every, so an agent that edits or commits
// without printing still makes progress.
type diskWork struct {
	dir   string
	every time.Duration
	next  time.Time
	last  string
}

func (d *diskWork) changed(ctx context.Context) bool {
	now := time.Now()
	if now.Before(d.next) {
		return false
	}
	d.next = now.Add(d.every)
	head, err := gitcli.New(d.dir, "rev-parse", "-q", "--verify", "HEAD").String(ctx)
	if err != nil {
		return false
	}
	// No optional locks: a status that refreshed the index would take
	// index.lock and could fail the agent's own git commit.
	status, err := gitcli.New(d.dir, "status", "--porcelain", "--untracked-files=all").Env("GIT_OPTIONAL_LOCKS=0").String(ctx)
	if err != nil {
		return false
	}
	// Sizes and times are not in git status: a file rewritten in place
	// shows no change once it is listed, which only delays the next
	// progress to its commit.
	fp := head + "\n" + status
	first := d.last == ""
	was := d.last
	d.last = fp
	return !first && fp != was
}

func clearAgentRetry(st *proto.Status) {
	st.AgentRetrying, st.Attempt, st.RetryFailureClass, st.RetryFailureReason = false, 0, "", ""
}

// watch kills the agent's process group when progress stops for the
// watchdog timeout, or when tick (run once a tick, to publish status)
// returns a guard of its own: SIGTERM, then SIGKILL after the grace
// period. It returns what it did, or nil if the agent exited on its own.
func watch(pid int, prog *progress, timing proto.Timing, exited <-chan struct{}, tick func() *proto.Watchdog) *proto.Watchdog {
	every := timing.WatchdogTimeout / 10
	if every > time.Second {
		every = time.Second
	}
	if every < 5*time.Millisecond {
		every = 5 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-exited:
			return nil
		case <-t.C:
		}
		wd := tick()
		if wd == nil && prog.since() >= timing.WatchdogTimeout {
			wd = &proto.Watchdog{Guard: "watchdog_output_timeout", Limit: timing.WatchdogTimeout}
		}
		if wd == nil {
			continue
		}
		_ = syscall.Kill(-pid, syscall.SIGTERM) // the agent leads its own session and group
		select {
		case <-exited:
		case <-time.After(timing.KillGrace):
			wd.Escalated = true
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-exited
		}
		return wd
	}
}

func turnOf(cmd *proto.Command, grants agent.Grants) agent.Turn {
	t := agent.Turn{Prompt: cmd.Prompt, ResumeID: cmd.ResumeID, ReadOnly: cmd.Kind == "ask", Exec: cmd.Exec, Grants: grants, MaxBudgetUSD: cmd.MaxBudgetUSD, Model: cmd.Model}
	if cmd.MCP != nil {
		t.MCP = &agent.MCPServer{Command: cmd.MCP.Command, Args: cmd.MCP.Args, EnvVars: []string{link.TokenEnv}}
	}
	return t
}

// streamResponse turns what a structured agent streamed into a response.
// The final text is the agent's own answer, not the raw stream.
func streamResponse(name string, stream agent.Stream, code int, out string) proto.Response {
	stream.Close()
	f, failed := stream.Outcome(code)
	if !failed {
		return proto.Response{Status: proto.Completed, Phase: "agent", Result: stream.Final(), AgentSessionID: stream.Session(), ExitCode: 0}
	}
	result := stream.Final()
	if result == "" {
		result = proto.Tail(out)
	}
	return proto.Response{
		Status: proto.Errored, Phase: "agent", Result: result, AgentSessionID: stream.Session(), ExitCode: code,
		Error:      fmt.Sprintf("%s failed (exit %d): %s", name, code, f.Reason),
		StderrTail: proto.Tail(out), FailureClass: string(f.Class), FailureReason: f.Reason, Attempts: 1, ResetAt: f.ResetAt,
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

// syncUpstream merges the upstream branch into the task branch before
// the agent runs. A conflicting merge is left in the worktree, conflict
// markers and all, and its files returned: resolving it is the agent's
// next job (the prompt says so), not a reason to stop the turn. A merge
// an earlier turn left unfinished is not started again. Any other
// failure is an error.
func syncUpstream(ctx context.Context, dir, branch string) ([]string, error) {
	if merging(ctx, dir) {
		return unmerged(ctx, dir), nil
	}
	ref := "refs/heads/" + branch
	if err := gitcli.New(dir, "rev-parse", "--verify", "--quiet", ref+"^{commit}").Run(ctx); err != nil {
		return nil, fmt.Errorf("upstream branch %s does not exist", branch)
	}
	// The merge is lazy's own commit, not the agent's or the user's: it
	// carries lazy's identity whatever the environment says.
	err := gitcli.New(dir, "merge", "--no-edit", "-m", "Merge "+branch+" (lazy: upstream before the next turn)", ref).AsLazy().Run(ctx)
	if err == nil {
		return nil, nil
	}
	if conflicts := unmerged(ctx, dir); len(conflicts) > 0 && merging(ctx, dir) {
		return conflicts, nil
	}
	return nil, fmt.Errorf("merging %s into the task branch failed: %w", branch, err)
}

// merging reports whether a merge is in progress in the worktree. A
// turn asks up to three times before its agent runs, so it looks for the
// MERGE_HEAD file in the worktree's own git directory (a special ref git
// keeps as a file whatever its ref storage) rather than start git each
// time; only a worktree whose .git it cannot read asks git.
func merging(ctx context.Context, dir string) bool {
	if gd, ok := worktreeGitDir(dir); ok {
		_, err := os.Lstat(filepath.Join(gd, "MERGE_HEAD"))
		return err == nil
	}
	return gitcli.New(dir, "rev-parse", "--verify", "--quiet", "MERGE_HEAD").Run(ctx) == nil
}

// worktreeGitDir is the git directory of the worktree at dir: dir/.git
// itself, or where the "gitdir:" line of a linked worktree's .git file
// points.
func worktreeGitDir(dir string) (string, bool) {
	dotGit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotGit)
	switch {
	case err != nil:
		return "", false
	case fi.IsDir():
		return dotGit, true
	case !fi.Mode().IsRegular() || fi.Size() > 4096:
		return "", false
	}
	b, err := os.ReadFile(dotGit)
	if err != nil {
		return "", false
	}
	gd, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
	if !ok || gd == "" || strings.ContainsAny(gd, "\n\x00") {
		return "", false
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(dir, gd)
	}
	if fi, err := os.Stat(gd); err != nil || !fi.IsDir() {
		return "", false
	}
	return gd, true
}

// unmerged lists the worktree's files with unresolved conflicts.
func unmerged(ctx context.Context, dir string) []string {
	out, err := gitcli.New(dir, "diff", "--name-only", "-z", "--diff-filter=U").Output(ctx)
	if err != nil {
		return nil
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, sanitize.Field(f))
		}
	}
	return files
}

// conflictNote is what a work turn's prompt starts with while a merge
// conflicts in its worktree, or "" when none does.
func conflictNote(ctx context.Context, dir, branch string, conflicts []string) string {
	if len(conflicts) == 0 && merging(ctx, dir) {
		conflicts = unmerged(ctx, dir)
	}
	if len(conflicts) == 0 {
		return ""
	}
	what := "an earlier merge"
	if branch != "" {
		what = "merging " + branch + " into your branch"
	}
	return fmt.Sprintf("[lazy] Before this turn, %s conflicted in %s: %s. The merge is in progress in your worktree with conflict markers in those files. "+
		"First resolve every conflict (keep what both sides meant), git add the files and conclude the merge with git commit --no-edit; then continue with what follows.\n\n",
		what, words.Count(len(conflicts), "file", "files"), listFiles(conflicts))
}

// mergeConflictResponse ends a sync whose merge conflicted: the merge
// stays in the worktree for the next work turn's agent.
func mergeConflictResponse(branch string, conflicts []string) proto.Response {
	why := fmt.Sprintf("merging %s conflicts in %s: %s; the merge is left in the worktree, and the next turn (lazy unblock TASK -m ...) asks the agent to resolve it", branch, words.Count(len(conflicts), "file", "files"), listFiles(conflicts))
	return proto.Response{Status: proto.Errored, Phase: "merge_and_fix", Error: why, ExitCode: -1, FailureClass: "merge_conflict", FailureReason: why}
}

// listFiles names at most five files.
func listFiles(files []string) string {
	if len(files) > 5 {
		return strings.Join(files[:5], ", ") + fmt.Sprintf(" and %d more", len(files)-5)
	}
	return strings.Join(files, ", ")
}
