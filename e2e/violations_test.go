package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

type violationsJSON struct {
	Status     string `json:"status"`
	Violations *struct {
		Pending []string          `json:"pending"`
		Decided map[string]string `json:"decided"`
	} `json:"violations"`
}

func (r *runner) violations(name string) violationsJSON {
	r.t.Helper()
	var v violationsJSON
	if err := json.Unmarshal([]byte(r.ok("show", "--json", name)), &v); err != nil {
		r.t.Fatal(err)
	}
	return v
}

func TestViolationLifecycle(t *testing.T) {
	r := newRepo(t)
	counter := filepath.Join(t.TempDir(), "runs")
	r = r.with(script(t, "attempt "+counter,
		"when 1 write src/ok.go package ok",
		"when 1 write keep.txt keep me",
		"when 1 write drop.txt drop me",
		"when 1 write --force an option-looking name",
		"when 1 write README.md rewritten by the agent",
		"when 1 commit agent: edits inside and outside src",
		"when 2 write keep.txt keep me, edited again",
		"when 2 write src/more.go package ok",
		"when 2 commit agent: second turn",
		"print turn done"))
	tk := r.create("fenced in", "--allow", "src/**")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "conflict")
	v := r.violations(tk.Slug)
	got := append([]string(nil), v.Violations.Pending...)
	sort.Strings(got)
	if strings.Join(got, ",") != "--force,README.md,drop.txt,keep.txt" {
		t.Fatalf("pending %q", got)
	}

	// Nothing moves while decisions are owed.
	if msg := r.fails(1, nil, "unblock", tk.Slug, "-m", "continue"); !strings.Contains(msg, "--approve-file") || !strings.Contains(msg, "drop.txt") {
		t.Fatalf("unblock without decisions: %s", msg)
	}
	if msg := r.fails(1, nil, "resume", tk.Slug); !strings.Contains(msg, "conflict") {
		t.Fatalf("resume of a conflict task: %s", msg)
	}
	for _, bad := range []string{"../x", "--force=1", "src/ok.go"} {
		if msg := r.fails(1, nil, "unblock", tk.Slug, "-m", "x", "--approve-file="+bad); !strings.Contains(msg, "not a pending violation") {
			t.Fatalf("approve %q: %s", bad, msg)
		}
	}
	if r.violations(tk.Slug).Status != "conflict" {
		t.Fatal("a refused decision changed the task")
	}

	// Approve one; the rest are reverted to their pre-turn content.
	r.ok("unblock", tk.Slug, "-m", "keep keep.txt only", "--approve-file", "keep.txt")
	s := r.waitStatus(tk.Slug, "blocked")
	wt := s.Session.Worktree
	if b, err := os.ReadFile(filepath.Join(wt, "README.md")); err != nil || string(b) != "# test\n" {
		t.Fatalf("README.md not restored: %q %v", b, err)
	}
	for _, gone := range []string{"drop.txt", "--force"} {
		if _, err := os.Stat(filepath.Join(wt, gone)); !os.IsNotExist(err) {
			t.Fatalf("%s not reverted (it did not exist before the turn): %v", gone, err)
		}
		if out := r.git("log", "--format=%s", "lazy/"+tk.Slug, "--", gone); !strings.Contains(out, "lazy: revert files outside the allowed paths") {
			t.Fatalf("the revert of %s is not committed on the branch: %q", gone, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "keep.txt")); string(b) != "keep me, edited again\n" {
		t.Fatalf("approved keep.txt: %q", b)
	}
	// Sticky: the second turn changed keep.txt again without a new
	// violation, and the decisions survive.
	v = r.violations(tk.Slug)
	if len(v.Violations.Pending) != 0 || v.Violations.Decided["keep.txt"] != "approved" || v.Violations.Decided["drop.txt"] != "reverted" || v.Violations.Decided["--force"] != "reverted" {
		t.Fatalf("after the decisions: %+v", v.Violations)
	}
	// A later unblock needs no decisions.
	r.ok("unblock", tk.Slug, "-m", "one more")
	if st := r.waitStatus(tk.Slug, "blocked"); st.Status != "blocked" {
		t.Fatal(st.Status)
	}
}

func TestNoApproveFilesRevertsEverything(t *testing.T) {
	r := newRepo(t)
	counter := filepath.Join(t.TempDir(), "runs")
	r = r.with(script(t, "attempt "+counter, "when 1 write out.txt outside", "print done"))
	tk := r.create("strict", "--allow", "docs")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	s := r.waitStatus(tk.Slug, "conflict")
	r.ok("unblock", tk.Slug, "-m", "no", "--no-approve-files")
	r.waitStatus(tk.Slug, "blocked")
	if _, err := os.Stat(filepath.Join(s.Session.Worktree, "out.txt")); !os.IsNotExist(err) {
		t.Fatalf("an uncommitted violation was not reverted: %v", err)
	}
	if v := r.violations(tk.Slug); v.Violations.Decided["out.txt"] != "reverted" {
		t.Fatalf("decisions %+v", v.Violations)
	}
}

func TestAllowEditsThePolicy(t *testing.T) {
	r := newRepo(t)
	tk := r.create("policy", "--allow", "src/**")
	policy := func() []string {
		var s struct {
			AllowedPaths []string `json:"allowed_paths"`
		}
		if err := json.Unmarshal([]byte(r.ok("show", "--json", tk.Slug)), &s); err != nil {
			t.Fatal(err)
		}
		return s.AllowedPaths
	}
	r.ok("allow", tk.Slug, "--add", "docs", "src/**")
	if got := strings.Join(policy(), ","); got != "src/**,docs" {
		t.Fatalf("after --add: %q", got)
	}
	r.ok("allow", tk.Slug, "--remove", "src/**")
	if got := strings.Join(policy(), ","); got != "docs" {
		t.Fatalf("after --remove: %q", got)
	}
	if msg := r.fails(1, nil, "allow", tk.Slug, "--remove", "nope/**"); !strings.Contains(msg, "not in its policy") {
		t.Fatalf("remove of an absent glob: %s", msg)
	}
	for _, bad := range []string{"../x", "/etc", "--force"} {
		res := r.run(nil, "allow", tk.Slug, "--", bad)
		if res.Code == 0 || !strings.Contains(res.Stderr, bad) {
			t.Fatalf("allow %q: %s", bad, res)
		}
	}
	r.ok("allow", tk.Slug, "lib/*.go", "cmd")
	if got := strings.Join(policy(), ","); got != "lib/*.go,cmd" {
		t.Fatalf("after replace: %q", got)
	}
	if out := r.ok("allow", tk.Slug, "--clear"); !strings.Contains(out, "every file is allowed") || len(policy()) != 0 {
		t.Fatalf("--clear: %s %q", out, policy())
	}
	if res := r.run(nil, "allow", tk.Slug); res.Code != 2 {
		t.Fatalf("allow without globs: %s", res)
	}
}
