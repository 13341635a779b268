package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// Human feedback is never lost (spec: "Feedback Redelivery"): every
// message no agent received reaches the next turn, and only what a turn
// delivered is consumed when it completes. The agent logs every prompt it
// receives (log-prompt), and the assertions are on that log.

// received is one prompt an agent was launched with.
type received struct {
	Kind     string `json:"kind"`
	Prompt   string `json:"prompt"`
	ReadOnly string `json:"read_only"`
	PID      int    `json:"pid"`
}

// promptLog reads the prompts the fake agent logged to path.
func promptLog(t *testing.T, path string) []received {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []received
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r received
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue // a line a killed agent left half-written
		}
		out = append(out, r)
	}
	return out
}

// waitPrompts waits until the agent has logged n prompts.
func waitPrompts(t *testing.T, r *runner, path string, n int) []received {
	t.Helper()
	var got []received
	eventually(t, "the agent to receive its prompt", func() bool {
		got = promptLog(t, path)
		return len(got) >= n
	})
	return got
}

// feedbackTurn finds the human turn whose content is text.
func feedbackTurn(t *testing.T, s showFull, text string) turnJSON {
	t.Helper()
	for _, tn := range s.TurnList {
		if tn.Role == "human" && tn.Content == text {
			return tn
		}
	}
	t.Fatalf("no turn holds %q: %+v", text, s.TurnList)
	return turnJSON{}
}

// crashTurn SIGKILLs the supervisor of the running turn (after its agent
// logged prompt number n) and waits for the task to be interrupted.
func crashTurn(t *testing.T, r *runner, tk task, log string, n int) {
	t.Helper()
	waitPrompts(t, r, log, n)
	crash(t, waitSupervisor(t, r, tk.ID, 0))
	r.waitUntil(tk.Slug, "interrupted", func(s showFull) bool { return s.Status == "interrupted" })
}

// pairBriefly pairs on the task with a "shell" that exits at once.
func pairBriefly(t *testing.T, r *runner, slug string) {
	t.Helper()
	human := r.with("SHELL="+fakeAgentBin, script(t, "print paired"))
	cmd, _, output := ptyRun(t, human, &pty.Winsize{Rows: 24, Cols: 80}, "pair", slug)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lazy pair: %v\n%s", err, output())
	}
}

// The reproduction: with auto-resume off, unblock -> kill ->
// unblock -> kill -> unblock; the last agent gets every message, and
// only then are they consumed. The same through pair and through stop.
func TestAnUnblockDeliversEveryMessageNoAgentReceived(t *testing.T) {
	for _, path := range []string{"crashes", "pair", "stop"} {
		t.Run(path, func(t *testing.T) {
			r := manualResume(crashRepo(t))
			dir := t.TempDir()
			log, counter := filepath.Join(dir, "prompts"), filepath.Join(dir, "runs")
			t.Cleanup(func() { killTurns(r) })
			// Turn 1 completes, every later one hangs until the last.
			r = r.with(script(t, "attempt "+counter, "log-prompt "+log, "when 1 exit 0", "when 4 exit 0", "hang"))
			tk := r.create("feedback " + path)
			r.ok("start", tk.Slug, "--command", fakeAgentBin)
			r.waitStatus(tk.Slug, "blocked")

			r.ok("unblock", tk.Slug, "-m", "FB-A")
			switch path {
			case "crashes":
				crashTurn(t, r, tk, log, 2)
				r.ok("unblock", tk.Slug, "-m", "FB-B")
				crashTurn(t, r, tk, log, 3)
			case "pair":
				crashTurn(t, r, tk, log, 2)
				pairBriefly(t, r, tk.Slug)
				if st := r.showFull(tk.Slug).Status; st != "blocked" {
					t.Fatalf("after pairing: %s", st)
				}
				r.ok("unblock", tk.Slug, "-m", "FB-B")
				waitPrompts(t, r, log, 3)
				r.ok("stop", tk.Slug)
			case "stop":
				waitPrompts(t, r, log, 2)
				r.ok("stop", tk.Slug)
				r.ok("unblock", tk.Slug, "-m", "FB-B")
				waitPrompts(t, r, log, 3)
				r.ok("stop", tk.Slug)
			}
			s := r.showFull(tk.Slug)
			for _, fb := range []string{"FB-A", "FB-B"} {
				if d := feedbackTurn(t, s, fb).FeedbackDelivery; d != "pending" {
					t.Fatalf("%s is %s before any turn finished with it", fb, d)
				}
			}
			r.ok("unblock", tk.Slug, "-m", "FB-C")
			s = r.waitStatus(tk.Slug, "blocked")
			got := promptLog(t, log)
			last := got[len(got)-1].Prompt
			if !strings.HasPrefix(last, "FB-C\n\n---\n\n") || !strings.Contains(last, "\nFB-A\n") || !strings.HasSuffix(last, "\nFB-B") ||
				strings.Index(last, "FB-A") > strings.Index(last, "FB-B") {
				t.Fatalf("the last turn's prompt does not carry every undelivered message, newest first then oldest first:\n%s", last)
			}
			for _, fb := range []string{"FB-A", "FB-B", "FB-C"} {
				if d := feedbackTurn(t, s, fb).FeedbackDelivery; d != "consumed" {
					t.Fatalf("%s is %s after the turn that delivered it completed", fb, d)
				}
			}
		})
	}
}

// killTurns ends every supervisor and agent a test's tasks left running.
func killTurns(r *runner) {
	ents, _ := os.ReadDir(filepath.Join(r.dir, ".git", "lazy", "proto"))
	for _, e := range ents {
		sups, agents := turnProcs(e.Name())
		for _, pid := range append(sups, agents...) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range append(sups, agents...) {
			for deadline := time.Now().Add(10 * time.Second); !gone(pid) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}
