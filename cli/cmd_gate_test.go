package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
)

// commitGate commits .lazy/gate on main with the commands given.
func commitGate(t *testing.T, l *lazyT, commands string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(l.dir, ".lazy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.dir, ".lazy", "gate"), []byte(commands), 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, l.dir, "add", ".lazy/gate")
	testrepo.Git(t, l.dir, "commit", "-q", "-m", "the gate")
}

// TestTheRepositorysGateFileGatesAccepts: with no lazy.gate set, the
// commands of .lazy/gate at the tip of the target are the gate. A task
// whose tree passes lands without running it again (the pass is reused
// on that exact tree); one that fails is refused with the command, its
// exit and where the log is, and --json gives the run field by field;
// list --json carries each task's gate state.
func TestTheRepositorysGateFileGatesAccepts(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	commitGate(t, l, "# the tests\ntest -f auth/login.go\n")
	good := l.worked("First change", "auth/login.go", "package auth\n")
	bad := l.worked("Other change", "b.txt", "b\n")

	has(t, "gate of a passing tree", l.ok("gate", good.Slug), "Gate passed (run ", "1 command")
	var g struct {
		Passed bool `json:"passed"`
		Run    *struct {
			Source   string `json:"source"`
			Target   string `json:"target"`
			Failed   string `json:"failed"`
			Log      string `json:"log"`
			Commands []struct {
				Cmd  string `json:"cmd"`
				Exit int    `json:"exit"`
			} `json:"commands"`
		} `json:"run"`
	}
	r := l.run("gate", bad.Slug, "--json")
	if r.code != 1 {
		t.Fatalf("gate --json of a failing tree: %+v", r)
	}
	if err := jsonDecode(r.out, &g); err != nil || g.Passed || g.Run == nil || g.Run.Source != ".lazy/gate at main" || g.Run.Target != "main" ||
		g.Run.Failed != "test -f auth/login.go" || len(g.Run.Commands) != 1 || g.Run.Commands[0].Exit != 1 || g.Run.Log == "" {
		t.Fatalf("gate --json of a failing tree (%v): %+v", err, g.Run)
	}
	if _, err := os.Stat(g.Run.Log); err != nil {
		t.Errorf("the run's log: %v", err)
	}

	var rows []struct {
		Slug string `json:"slug"`
		Gate *struct {
			State  string `json:"state"`
			Failed string `json:"failed"`
		} `json:"gate"`
	}
	l.json(&rows, "list", "--json")
	states := map[string]string{}
	for _, row := range rows {
		if row.Gate != nil {
			states[row.Slug] = row.Gate.State + " " + row.Gate.Failed
		}
	}
	if states[good.Slug] != "passed " || states[bad.Slug] != "failed test -f auth/login.go" {
		t.Errorf("list --json gates: %v", states)
	}

	before := testrepo.Git(t, l.dir, "rev-parse", "main")
	l.fails(1, []string{"accept", bad.Slug}, `accept other-change: the gate failed: "test -f auth/login.go" exited 1; nothing was merged`,
		"lazy accept other-change --skip-gate --reason")
	if testrepo.Git(t, l.dir, "rev-parse", "main") != before || l.show(bad.Slug).Status != "blocked" {
		t.Fatal("a failed gate landed the task")
	}
	r = l.run("accept", good.Slug)
	if r.code != 0 || !strings.Contains(r.err, "the gate passed on this exact tree already (run ") {
		t.Fatalf("accept after a pass: %+v", r)
	}
}

// TestFinishedTasksSayWhereTheirWorkIs: once a task is accepted, lazy
// diff says its branch is gone and how to find the squash commit; a
// rejected task's kept branch is still diffed; its log holds lazy's notes
// of the gates that failed on it.
func TestFinishedTasksSayWhereTheirWorkIs(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	landed := l.worked("First change", "a.txt", "a\n")
	rejected := l.worked("Other change", "b.txt", "b\n")
	testrepo.Git(t, l.dir, "config", "lazy.gate", "false")
	l.run("gate", rejected.Slug)
	testrepo.Git(t, l.dir, "config", "--unset", "lazy.gate")
	l.ok("accept", landed.Slug)
	l.ok("reject", rejected.Slug, "-m", "not this")
	l.fails(1, []string{"diff", landed.Slug}, "first-change is complete and its branch lazy/first-change is gone; its work is in the squash commit (git log --grep='Lazy-Task: "+landed.ID+"')")
	if hits := testrepo.Git(t, l.dir, "log", "--format=%H", "--grep=Lazy-Task: "+landed.ID); hits != testrepo.Git(t, l.dir, "rev-parse", "main") {
		t.Errorf("the squash commit the diff points at: %q", hits)
	}
	has(t, "diff of a rejected task", l.ok("diff", rejected.Slug), "+++ b/b.txt", "+b")
	has(t, "logs of a rejected task", l.ok("logs", rejected.Slug), `✗ the merge gate failed: "false" exited 1 on main`)
}

// TestStatusShowsActiveWork: a task with a turn recorded as running is
// counted, listed under ACTIVE with its substate (its supervisor is not
// alive here), and in --json's active list; lazy active lists it too.
func TestStatusShowsActiveWork(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	running := l.worked("Third", "c.txt", "c\n")
	l.worked("Parked", "d.txt", "d\n")
	l.setStatus(running.ID, machine.Working)
	out := l.ok("status")
	has(t, "lazy status", out, "1 working, 1 blocked", "ACTIVE", "third", "working (not-alive)", "Third")
	var st struct {
		Active []struct {
			Slug, Status, Substate, Title string
		} `json:"active"`
	}
	l.json(&st, "status", "--json")
	if len(st.Active) != 1 || st.Active[0].Slug != running.Slug || st.Active[0].Status != "working" || st.Active[0].Substate != "not-alive" {
		t.Errorf("status --json active: %+v", st.Active)
	}
	active := l.ok("active")
	has(t, "lazy active", active, "third", "working (not-alive)")
	hasNot(t, "lazy active", active, "parked")
}
