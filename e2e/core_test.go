package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInitConfiguresRefspecsIdempotently(t *testing.T) {
	t.Parallel() // a repository and worktrees of its own
	r := newRepo(t)
	bare := t.TempDir()
	r.git("init", "-q", "--bare", bare)
	r.git("remote", "add", "origin", bare)
	out := r.ok("init")
	if !strings.Contains(out, "Initialized lazy") || !strings.Contains(out, "remote origin") {
		t.Fatalf("init said %q", out)
	}
	var res struct {
		HostID  string   `json:"host_id"`
		Remotes []string `json:"remotes_configured"`
	}
	if err := json.Unmarshal([]byte(r.ok("init", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if res.HostID == "" || r.git("config", "lazy.hostid") != res.HostID {
		t.Fatalf("host id %q vs config %q", res.HostID, r.git("config", "lazy.hostid"))
	}
	fetch := r.git("config", "--get-all", "remote.origin.fetch")
	if strings.Count(fetch, "refs/lazy/*:refs/lazy-remotes/origin/*") != 1 {
		t.Fatalf("fetch refspecs after two inits:\n%s", fetch)
	}
	if !strings.Contains(fetch, "+refs/heads/*:refs/remotes/origin/*") {
		t.Fatalf("the user's own fetch refspec was lost:\n%s", fetch)
	}
	if r.git("config", "lazy.pushRefspec") != "refs/lazy/*:refs/lazy/*" {
		t.Fatal("push refspec not recorded")
	}
	if _, err := r.gitErr("config", "remote.origin.push"); err == nil {
		t.Fatal("lazy changed what a plain git push pushes")
	}
	// Task state travels with plain git using the configured refspecs.
	tk := r.create("travel")
	r.git("push", "-q", "origin", "refs/lazy/*:refs/lazy/*")
	clone := t.TempDir()
	r.git("clone", "-q", bare, clone)
	c := &runner{t: t, dir: clone}
	c.ok("init")
	c.git("fetch", "-q", "origin")
	if got := c.git("rev-parse", "refs/lazy-remotes/origin/tasks/"+tk.ID); got != r.git("rev-parse", "refs/lazy/tasks/"+tk.ID) {
		t.Fatalf("fetched %s", got)
	}
}

func (r *runner) gitErr(args ...string) (string, error) {
	cmd := gitCmd(r.dir, args...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func TestCreateListShow(t *testing.T) {
	t.Parallel() // a repository and worktrees of its own
	r := newRepo(t)
	a := r.create("Fix the flaky login test", "-m", "It fails one run in ten.\n\nSee CI.")
	if a.Slug != "fix-the-flaky-login-test" || a.Status != "backlog" || a.Category != "resting" || len(a.ID) != 16 {
		t.Fatalf("created %+v", a)
	}
	child := r.create("cover logout", "--parent", a.Slug)
	if child.Parent != a.ID {
		t.Fatalf("child parent %q, want %q", child.Parent, a.ID)
	}
	fromMsg := r.create("-m", "title from the first line\nand a body")
	if fromMsg.Title != "title from the first line" {
		t.Fatalf("title %q", fromMsg.Title)
	}
	if s := r.show(fromMsg.Slug); s.Goal != "title from the first line\nand a body" {
		t.Fatalf("goal %q", s.Goal)
	}
	piped := r.run([]byte("goal from stdin\n"), "create", "--json", "piped task")
	var p task
	if piped.Code != 0 || json.Unmarshal([]byte(piped.Stdout), &p) != nil || r.show(p.Slug).Goal != "goal from stdin" {
		t.Fatalf("piped create: %s", piped)
	}
	list := r.list()
	if len(list) != 4 {
		t.Fatalf("list has %d tasks", len(list))
	}
	text := r.ok("list")
	// The child is indented under its parent.
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.Contains(l, "fix-the-flaky-login-test") {
			if !strings.Contains(lines[i+1], "  cover-logout") {
				t.Fatalf("child not under parent:\n%s", text)
			}
		}
	}
	if got := r.list("--parent", a.Slug); len(got) != 1 || got[0].ID != child.ID {
		t.Fatalf("--parent filter: %+v", got)
	}
	if got := r.list("-s", "abandoned"); len(got) != 0 {
		t.Fatalf("status filter: %+v", got)
	}
	s := r.show(a.ID[:6])
	if s.Goal != "It fails one run in ten.\n\nSee CI." || len(s.History) != 1 || s.History[0].Op != "create" || s.History[0].To != "backlog" || s.History[0].Actor != "human" {
		t.Fatalf("show %+v", s)
	}
	human := r.ok("show", a.Slug)
	for _, want := range []string{"Fix the flaky login test", "Status:   backlog", "History", "create"} {
		if !strings.Contains(human, want) {
			t.Errorf("show lacks %q:\n%s", want, human)
		}
	}
}

func TestCloseRejectReopenAndComment(t *testing.T) {
	t.Parallel() // a repository and worktrees of its own
	r := newRepo(t)
	a := r.create("to close")
	errText := r.fails(1, nil, "reject", a.Slug, "-m", "no")
	if !strings.Contains(errText, "use lazy close") {
		t.Fatalf("reject of backlog: %s", errText)
	}
	if msg := r.fails(1, nil, "show", "close"); !strings.Contains(msg, "did you mean to-close?") {
		t.Fatalf("unknown name without a suggestion: %s", msg)
	}
	if !strings.Contains(r.fails(1, nil, "reopen", a.Slug), "not finished") {
		t.Fatal("reopen of backlog did not explain")
	}
	r.ok("comment", a.Slug, "-m", "first thoughts")
	r.ok("close", a.Slug, "-m", "duplicate of another")
	s := r.show(a.Slug)
	if s.Status != "abandoned" || s.Outcome != "closed" || s.Reason != "duplicate of another" || s.Comments != 2 {
		t.Fatalf("after close %+v", s)
	}
	if !strings.Contains(r.fails(1, nil, "close", a.Slug), "already abandoned") {
		t.Fatal("second close did not explain")
	}
	r.ok("reopen", a.Slug, "--reason", "not a duplicate after all")
	s = r.show(a.Slug)
	if s.Status != "backlog" || s.Outcome != "" {
		t.Fatalf("after reopen %+v", s)
	}
	var ops []string
	for _, h := range s.History {
		ops = append(ops, h.Op+":"+h.From+">"+h.To)
	}
	want := "create:>backlog comment:backlog>backlog close:backlog>abandoned reopen:abandoned>backlog"
	if strings.Join(ops, " ") != want {
		t.Fatalf("changelog %v, want %s", ops, want)
	}
	// The changelog is plain git.
	log := r.git("log", "--format=%s", "refs/lazy/tasks/"+a.ID)
	if !strings.Contains(log, "close to-close: backlog -> abandoned") {
		t.Fatalf("git log:\n%s", log)
	}
}

func TestActorFromEnvironment(t *testing.T) {
	r := newRepo(t)
	b := r.with("LAZY_ACTOR=builder").create("made by the builder")
	s := r.show(b.Slug)
	if s.CreatedBy != "builder" || s.History[0].Actor != "builder" {
		t.Fatalf("actor %+v", s)
	}
	if !strings.Contains(r.with("LAZY_ACTOR=robot").fails(1, nil, "create", "x"), "LAZY_ACTOR") {
		t.Fatal("bad actor not explained")
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel() // a repository and worktrees of its own
	r := newRepo(t)
	if res := r.run(nil, "--help"); res.Code != 0 || !strings.Contains(res.Stdout, "create") {
		t.Fatalf("--help: %s", res)
	}
	if res := r.run(nil, "--version"); res.Code != 0 || !strings.Contains(res.Stdout, "lazy") {
		t.Fatalf("--version: %s", res)
	}
	r.fails(2, nil, "frobnicate")
	r.fails(2, nil, "list", "--no-such-flag")
	r.fails(2, nil, "show")
	r.fails(2, nil, "list", "-s", "done")
	r.fails(1, nil, "show", "nothing-here")
	// Outside any repository.
	outside := &runner{t: t, dir: t.TempDir()}
	if !strings.Contains(outside.fails(1, nil, "list"), "not inside a git repository") {
		t.Fatal("outside a repo: unclear error")
	}
	// No message anywhere and no terminal: a usage error, not a hang.
	r.fails(2, nil, "create")
}

func TestBadInputNeverPanicsNorLoses(t *testing.T) {
	r := newRepo(t)
	// NUL and escapes arrive on stdin (argv cannot carry NUL).
	res := r.run([]byte("line one\x00hidden\x1b[31m red\n"), "create", "--json", "nul task")
	if res.Code != 0 {
		t.Fatalf("NUL in description: %s", res)
	}
	var tk task
	_ = json.Unmarshal([]byte(res.Stdout), &tk)
	goal := r.show(tk.Slug).Goal
	if !strings.HasPrefix(goal, `line one\u0000hidden\u001b[31m red`) || !strings.Contains(goal, "control characters") {
		t.Fatalf("sanitized goal %q", goal)
	}
	// Control characters in a title are escaped without the prose note.
	ctl := r.create("bell\atitle")
	if ctl.Title != `bell\u0007title` {
		t.Fatalf("title %q", ctl.Title)
	}
	// A 1 MiB message is stored and read back byte for byte.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	res = r.run(big, "create", "--json", "big")
	if res.Code != 0 {
		t.Fatalf("1 MiB description: %s", res)
	}
	_ = json.Unmarshal([]byte(res.Stdout), &tk)
	var whole, clipped struct {
		Goal      string
		Truncated []string
	}
	if err := json.Unmarshal([]byte(r.ok("show", "--json", "--full", tk.Slug)), &whole); err != nil {
		t.Fatal(err)
	}
	if whole.Goal != string(big) || len(whole.Truncated) != 0 {
		t.Fatalf("show --full: 1 MiB goal came back as %d bytes, truncated %v", len(whole.Goal), whole.Truncated)
	}
	// Without --full the goal is cut visibly, and the JSON says what was cut.
	if err := json.Unmarshal([]byte(r.ok("show", "--json", tk.Slug)), &clipped); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(clipped.Goal, string(big[:60<<10])) || len(clipped.Goal) >= len(big) ||
		!strings.Contains(clipped.Goal, "truncated, ") || len(clipped.Truncated) != 1 ||
		!strings.Contains(clipped.Truncated[0], "longer than 64 KiB") {
		t.Fatalf("show: 1 MiB goal came back as %d bytes, truncated %v", len(clipped.Goal), clipped.Truncated)
	}
	r.ok("comment", tk.Slug, "-m", string(big[:4096]))
	// Over the limit: refused with a clear error and nothing created.
	before := len(r.list())
	huge := bytes.Repeat([]byte("x"), 17<<20)
	if msg := r.fails(1, huge, "create", "huge"); !strings.Contains(msg, "MiB") {
		t.Fatalf("oversized description: %s", msg)
	}
	if after := len(r.list()); after != before {
		t.Fatalf("a refused create left %d tasks (was %d)", after, before)
	}
	long := strings.Repeat("t", 300)
	if msg := r.fails(1, nil, "create", long); !strings.Contains(msg, "title is 300 characters") {
		t.Fatalf("long title: %s", msg)
	}
	// Hostile or unknown task names.
	for _, name := range []string{"../../etc/passwd", "--force", "-rf", "refs/lazy/tasks/x", "nope", strings.Repeat("a", 5000), "a b", "ab"} {
		res := r.run(nil, "show", "--", name)
		if res.Code != 1 || !strings.Contains(res.Stderr, "no task") {
			t.Errorf("show %.30q: %s", name, res)
		}
	}
	if msg := r.fails(1, nil, "create", "x", "--target-branch=--upload-pack=evil"); !strings.Contains(msg, "invalid branch name") {
		t.Fatalf("hostile target branch: %s", msg)
	}
	if msg := r.fails(1, nil, "create", "x", "--allow", "../outside/*"); !strings.Contains(msg, "leaves the repository") {
		t.Fatalf("hostile allowed path: %s", msg)
	}
	if msg := r.fails(1, nil, "create", "x", "--slug", "../../etc"); !strings.Contains(msg, "invalid slug") {
		t.Fatalf("hostile slug: %s", msg)
	}
}

func TestAmbiguousPrefixListsCandidates(t *testing.T) {
	t.Parallel() // a repository and worktrees of its own
	r := newRepo(t)
	a := r.create("first")
	// A second ref sharing a's first 6 characters, written with git.
	twin := a.ID[:6] + "0000000000"
	if twin == a.ID {
		twin = a.ID[:6] + "1111111111"
	}
	r.git("update-ref", "refs/lazy/tasks/"+twin, "refs/lazy/tasks/"+a.ID)
	msg := r.fails(1, nil, "show", a.ID[:6])
	if !strings.Contains(msg, "ambiguous") || !strings.Contains(msg, a.ID) || !strings.Contains(msg, twin) {
		t.Fatalf("ambiguous prefix: %s", msg)
	}
	// The full id still works.
	if r.show(a.ID).ID != a.ID {
		t.Fatal("full id did not resolve")
	}
}

func TestCorruptRecordIsIsolated(t *testing.T) {
	r := newRepo(t)
	good := r.create("good one")
	bad := r.create("bad one")
	// Replace bad's task.json with garbage, by hand, with plain git.
	ref := "refs/lazy/tasks/" + bad.ID
	blob := strings.TrimSpace(r.gitIn([]byte("{not json"), "hash-object", "-w", "--stdin"))
	tree := strings.TrimSpace(r.gitIn([]byte("100644 blob "+blob+"\ttask.json\n"), "mktree"))
	commit := r.git("commit-tree", "-p", ref, "-m", "vandalism", tree)
	r.git("update-ref", ref, commit)

	msg := r.fails(1, nil, "show", bad.Slug)
	if !strings.Contains(msg, "corrupt") || !strings.Contains(msg, "task.json") {
		t.Fatalf("show corrupt: %s", msg)
	}
	if !strings.Contains(r.fails(1, nil, "comment", bad.Slug, "-m", "x"), "corrupt") {
		t.Fatal("comment on a corrupt task did not explain")
	}
	res := r.run(nil, "list", "--json")
	if res.Code != 0 || !strings.Contains(res.Stderr, bad.ID) {
		t.Fatalf("list with a corrupt record: %s", res)
	}
	var ts []task
	if err := json.Unmarshal([]byte(res.Stdout), &ts); err != nil {
		t.Fatal(err)
	}
	var sawGood, sawBad bool
	for _, tk := range ts {
		sawGood = sawGood || tk.ID == good.ID
		sawBad = sawBad || (tk.ID == bad.ID && tk.Error != "")
	}
	if !sawGood || !sawBad {
		t.Fatalf("list: good %v, bad reported %v: %s", sawGood, sawBad, res.Stdout)
	}
	// Everything else keeps working.
	r.ok("comment", good.Slug, "-m", "still fine")
	r.ok("close", good.Slug)
	// A ref pointing at a missing object, and one at a blob.
	r.git("update-ref", "refs/lazy/tasks/"+strings.Repeat("ab", 8), blob)
	res = r.run(nil, "list")
	if res.Code != 0 || !strings.Contains(res.Stdout, "good-one") {
		t.Fatalf("list with a blob ref: %s", res)
	}
}

func (r *runner) gitIn(stdin []byte, args ...string) string {
	r.t.Helper()
	cmd := gitCmd(r.dir, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

func TestCreateOutsideInitAutoInits(t *testing.T) {
	r := newRepo(t)
	res := r.run(nil, "create", "first")
	if res.Code != 0 || !strings.Contains(res.Stderr, "set up this repository") {
		t.Fatalf("first create: %s", res)
	}
	if r.git("config", "lazy.hostid") == "" {
		t.Fatal("no host id after auto-init")
	}
	if _, err := os.Stat(filepath.Join(r.dir, ".git", "lazy")); err != nil {
		t.Fatal(err)
	}
}
