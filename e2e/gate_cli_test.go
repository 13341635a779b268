package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMergeGateCLI: the merge gate's command-line surface. --skip-gate
// without a reason is a usage error; an empty queue says so; lazy accept
// of several tasks --json gives one element of one shape per task, with
// the gate run; lazy show of a task whose gate failed shows the run, the
// command's exit and its output's tail with terminal escapes made
// harmless.
func TestMergeGateCLI(t *testing.T) {
	t.Parallel() // a repository and worktrees of its own
	r := newRepo(t)
	if msg := r.fails(2, nil, "accept", "any-task", "--skip-gate"); !strings.Contains(msg, "--skip-gate needs --reason") {
		t.Fatalf("--skip-gate without --reason: %s", msg)
	}
	if out := r.ok("queue"); !strings.Contains(out, "No merge queue on this machine") {
		t.Fatalf("lazy queue with nothing queued: %q", out)
	}
	if out := strings.TrimSpace(r.ok("queue", "--json")); out != "[]" {
		t.Fatalf("lazy queue --json with nothing queued: %q", out)
	}

	// The gate clears the screen (an escape a terminal would obey), then
	// checks the tree.
	r.git("config", "--add", "lazy.gate", `printf '\033[2J'; echo checking the tree; test ! -e FAIL.txt`)
	good := workedTask(t, r, "good work", "good.txt fine")
	bad := workedTask(t, r, "bad work", "FAIL.txt broken")
	res := r.run(nil, "accept", "--json", good.Slug, bad.Slug)
	if res.Code != 1 {
		t.Fatalf("accept of a passing and a failing task: want exit 1, got %s", res)
	}
	var results []struct {
		Task     task   `json:"task"`
		Accepted bool   `json:"accepted"`
		Commit   string `json:"commit"`
		GateRun  string `json:"gate_run"`
		Error    string `json:"error"`
		Gate     *struct {
			ID       string `json:"id"`
			Passed   bool   `json:"passed"`
			Failed   string `json:"failed"`
			Commands []struct {
				Exit int `json:"exit"`
			} `json:"commands"`
		} `json:"gate"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &results); err != nil {
		t.Fatalf("accept --json of two tasks: %v\n%s", err, res)
	}
	if len(results) != 2 {
		t.Fatalf("accept --json of two tasks gave %d results:\n%s", len(results), res.Stdout)
	}
	ok, no := results[0], results[1]
	if !ok.Accepted || ok.Task.Slug != good.Slug || ok.Task.Status != "complete" || ok.GateRun == "" || ok.Commit != strings.TrimSpace(r.git("rev-parse", "main")) {
		t.Fatalf("the passing task's result: %+v", ok)
	}
	if msg := r.git("log", "-1", "--format=%B", "main"); !strings.Contains(msg, "Lazy-Gate: passed "+ok.GateRun) {
		t.Fatalf("main's commit does not name the run %s:\n%s", ok.GateRun, msg)
	}
	if no.Accepted || no.Task.Slug != bad.Slug || no.Task.Status != "blocked" || no.Gate == nil || no.Gate.Passed || len(no.Gate.Commands) != 1 || no.Gate.Commands[0].Exit != 1 || !strings.Contains(no.Error, "the gate failed") {
		t.Fatalf("the failing task's result: %+v (gate %+v)", no, no.Gate)
	}

	show := r.ok("show", bad.Slug)
	for _, want := range []string{"\nGate\n", "run " + no.Gate.ID + " failed", "-> exit 1", `\u001b[2J`, "checking the tree"} {
		if !strings.Contains(show, want) {
			t.Fatalf("lazy show of the failed task lacks %q:\n%s", want, show)
		}
	}
	if strings.ContainsRune(show, '\x1b') {
		t.Fatalf("lazy show passed the gate output's escape to the terminal:\n%q", show)
	}
	q := r.ok("queue")
	for _, want := range []string{"Queue into main: 0 waiting or running", good.Slug, "landed", bad.Slug, "failed"} {
		if !strings.Contains(q, want) {
			t.Fatalf("lazy queue lacks %q:\n%s", want, q)
		}
	}
}
