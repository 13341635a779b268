package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// A runner told to stop (SIGTERM, as Kubernetes or systemd stop it)
// hands its claims back (issue 46): it gives the running turn --grace to
// finish, stops it when it does not (parked, its work kept), pushes the
// task's record fenced by its claim and releases the claim at its
// generation; it exits 0 with nothing of its machine left running, and
// another runner may take the task at once, long before the lease would
// have run out.
func TestPoolRunnerHandsItsClaimBackOnSIGTERM(t *testing.T) {
	n := newPoolNet(t)
	a, b := n.machine("a"), n.machine("b")
	tk := n.queue(1, "term")[0]
	n.hold("a") // a's turn never ends on its own
	pa := startRunner(a, "a", "--lease", "2m", "--poll", "1s", "--grace", "1s")
	poolWait(t, 60*time.Second, "a's agent to start", func() bool { return len(n.runs()[tk.ID]) == 1 })
	poolWait(t, 30*time.Second, "a's record of the running turn on the remote", func() bool { return n.record(tk.ID).Status == "working" })
	held, ok := n.claim(tk.ID)
	if !ok || held.Generation != 1 || held.Runner != host(a) || held.Released {
		t.Fatalf("a's claim mid-turn: %+v", held)
	}
	agentPID := n.runs()[tk.ID][0].PID

	signalled := time.Now()
	if err := pa.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	pa.wait(60 * time.Second) // exit 0: a clean hand-back
	if took := time.Since(signalled); took < time.Second {
		t.Fatalf("the runner stopped %s after SIGTERM, before its --grace of 1s", took)
	}
	out := pa.out.String()
	for _, want := range []string{"may take 1s to finish", "grace period of 1s is over", "handed " + tk.Slug + " back"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the runner did not say %q:\n%s", want, out)
		}
	}
	poolWait(t, 10*time.Second, "nothing of a's machine left running", func() bool { return len(machineProcs(machineHome(a))) == 0 })
	if !gone(agentPID) {
		t.Fatalf("a's agent %d outlived its runner", agentPID)
	}

	c, _ := n.claim(tk.ID)
	if !c.Released || c.Generation != 1 || c.Runner != host(a) {
		t.Fatalf("the claim after SIGTERM: %+v, want released by %s at generation 1", c, host(a))
	}
	if !time.Now().Before(held.Expires) {
		t.Fatalf("the test outlived a's lease (%s): the hand-back proves nothing", held.Expires)
	}
	rec := n.record(tk.ID)
	if rec.Status != "blocked" || rec.Pool == nil || rec.Pool.Runner != host(a) {
		t.Fatalf("the record a pushed: %+v, want blocked (stopped, parked) under a's claim", rec)
	}
	v := pool(n.human)
	stopped := false
	for _, rn := range v.Runners {
		stopped = stopped || rn.ID == host(a) && rn.Stopped
	}
	if !stopped {
		t.Fatalf("the pool does not show a as stopped: %+v", v.Runners)
	}

	// The human gives the stopped task more to do; b takes it at once
	// (a's lease of 2 minutes is far off) and runs it.
	n.human.ok("pull")
	n.human.ok("unblock", tk.Slug, "-m", "go on")
	pb := startRunner(b, "b", "--lease", "2m", "--poll", "500ms")
	poolWait(t, 60*time.Second, "b's run of the handed-back task", func() bool {
		rs := n.runs()[tk.ID]
		return len(rs) == 2 && rs[1].Machine == "b" && !rs[1].End.IsZero()
	})
	pb.stop()
	if c, _ := n.claim(tk.ID); c.Generation != 2 || c.Runner != host(b) {
		t.Fatalf("b's claim: %+v, want generation 2 by %s", c, host(b))
	}
	if !time.Now().Before(held.Expires) {
		t.Fatalf("b ran the task only after a's lease (%s) could have run out", held.Expires)
	}
}
