package supervise

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/proto"
)

// scriptAgent replaces the agent's launch for the test with answer,
// recording every command it was given.
func scriptAgent(t *testing.T, answer func(cmd proto.Command) proto.Response) *[]proto.Command {
	t.Helper()
	var seen []proto.Command
	was := launchAgent
	launchAgent = func(_ context.Context, _ proto.Dir, cmd *proto.Command, _ *proto.Status, _ proto.Timing, _ time.Time) (proto.Response, *proto.Watchdog) {
		seen = append(seen, *cmd)
		return answer(*cmd), nil
	}
	t.Cleanup(func() { launchAgent = was })
	return &seen
}

func refused(id string) proto.Response {
	reason := "No conversation found with session ID: " + id
	return proto.Response{Status: proto.Errored, FailureClass: string(agent.ResumeRefused), FailureReason: reason, AgentSessionID: id,
		Usage: &proto.Usage{CostUSD: 0.01}}
}

func completed(id string) proto.Response {
	return proto.Response{Status: proto.Completed, Result: "fixed", AgentSessionID: id, Usage: &proto.Usage{CostUSD: 0.02}}
}

func resumingCommand(t *testing.T, resumeID string) (proto.Dir, *proto.Command) {
	t.Helper()
	return proto.ForTask(t.TempDir(), "t1"), &proto.Command{Agent: "claude", Kind: "unblock", ResumeID: resumeID,
		Prompt: "the gate failed: fix it", FreshPrompt: "[lazy] new session; the task; the gate failed: fix it", Worktree: t.TempDir()}
}

// TestRunResumingResumes: a session the CLI resumes keeps its context:
// the turn's own prompt, the id, and the response says it resumed.
func TestRunResumingResumes(t *testing.T) {
	seen := scriptAgent(t, func(cmd proto.Command) proto.Response { return completed(cmd.ResumeID) })
	dir, cmd := resumingCommand(t, "s-1")
	resp := runResuming(context.Background(), dir, cmd, &proto.Status{}, DefaultPolicy(), time.Now)
	if len(*seen) != 1 || (*seen)[0].ResumeID != "s-1" || (*seen)[0].Prompt != "the gate failed: fix it" {
		t.Fatalf("runs %+v", *seen)
	}
	if r := resp.Resume; r == nil || r.Resumed != "s-1" || r.NewSession != "" || r.Reason != "" {
		t.Fatalf("resume %+v", resp.Resume)
	}
}

// TestRunResumingRefusedStartsFresh: a CLI that refuses the id gets no
// retry of the same resume (no retry loop, no delay): one new session
// at once, with the fresh prompt, and the response says why; the
// refused attempt's cost still counts.
func TestRunResumingRefusedStartsFresh(t *testing.T) {
	seen := scriptAgent(t, func(cmd proto.Command) proto.Response {
		if cmd.ResumeID != "" {
			return refused(cmd.ResumeID)
		}
		return completed("s-new")
	})
	dir, cmd := resumingCommand(t, "s-gone")
	began := time.Now()
	resp := runResuming(context.Background(), dir, cmd, &proto.Status{}, DefaultPolicy(), time.Now)
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("the new session waited %s (a retry delay?)", took)
	}
	if len(*seen) != 2 || (*seen)[1].ResumeID != "" || !strings.HasPrefix((*seen)[1].Prompt, "[lazy] new session") {
		t.Fatalf("runs %+v", *seen)
	}
	r := resp.Resume
	if resp.Status != proto.Completed || r == nil || r.Resumed != "" || r.NewSession != "s-new" || r.Reason != "No conversation found with session ID: s-gone" {
		t.Fatalf("response %+v resume %+v", resp, r)
	}
	if resp.Usage == nil || resp.Usage.CostUSD < 0.029 {
		t.Fatalf("usage %+v: the refused attempt's cost was dropped", resp.Usage)
	}
}

// TestRunResumingNoSessionStartsFresh: nothing recorded to resume: the
// new session gets the fresh prompt at the first attempt.
func TestRunResumingNoSessionStartsFresh(t *testing.T) {
	seen := scriptAgent(t, func(proto.Command) proto.Response { return completed("s-new") })
	dir, cmd := resumingCommand(t, "")
	resp := runResuming(context.Background(), dir, cmd, &proto.Status{}, DefaultPolicy(), time.Now)
	if len(*seen) != 1 || !strings.HasPrefix((*seen)[0].Prompt, "[lazy] new session") {
		t.Fatalf("runs %+v", *seen)
	}
	if r := resp.Resume; r == nil || r.NewSession != "s-new" || !strings.Contains(r.Reason, "no session of the agent was recorded") {
		t.Fatalf("resume %+v", resp.Resume)
	}
}

// TestRunResumingRefusalAfterWorkIsNotBelieved (adversarial): an agent
// that made tool calls and then printed the CLI's refusal does not get
// a new session started over its work; the turn ends as it is, and the
// class stops the retries.
func TestRunResumingRefusalAfterWorkIsNotBelieved(t *testing.T) {
	seen := scriptAgent(t, func(cmd proto.Command) proto.Response {
		r := refused(cmd.ResumeID)
		r.Tools = &proto.Tools{Calls: 3}
		return r
	})
	dir, cmd := resumingCommand(t, "s-1")
	resp := runResuming(context.Background(), dir, cmd, &proto.Status{}, DefaultPolicy(), time.Now)
	if len(*seen) != 1 || resp.FailureClass != string(agent.ResumeRefused) {
		t.Fatalf("%d runs, response %+v", len(*seen), resp)
	}
}

// TestRunResumingNoticesASilentNewSession: Codex starts a new thread for
// an id that is not one of its threads, without a word; the response
// says a new session was started.
func TestRunResumingNoticesASilentNewSession(t *testing.T) {
	scriptAgent(t, func(proto.Command) proto.Response { return completed("t-other") })
	dir, cmd := resumingCommand(t, "not-a-thread")
	cmd.Agent = "codex"
	resp := runResuming(context.Background(), dir, cmd, &proto.Status{}, DefaultPolicy(), time.Now)
	if r := resp.Resume; r == nil || r.Resumed != "" || r.NewSession != "t-other" || !strings.Contains(r.Reason, "instead of resuming not-a-thread") {
		t.Fatalf("resume %+v", resp.Resume)
	}
}

// TestRunResumingWithoutFreshPrompt: a turn lazy gave no fresh prompt
// (a first turn, the exec agent) runs as before, with no resume record.
func TestRunResumingWithoutFreshPrompt(t *testing.T) {
	scriptAgent(t, func(proto.Command) proto.Response { return completed("s-1") })
	dir, cmd := resumingCommand(t, "")
	cmd.FreshPrompt = ""
	if resp := runResuming(context.Background(), dir, cmd, &proto.Status{}, DefaultPolicy(), time.Now); resp.Resume != nil {
		t.Fatalf("resume %+v", resp.Resume)
	}
}
