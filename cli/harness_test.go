package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// lazyT is one test's lazy, as gh tests its commands: a fresh repository
// and an empty HOME, and every command run in the test's own process
// through the command table (run, what main calls), with the standard
// streams, the environment, the clock and the terminal the test gives
// it. No daemon, no supervisor: a command that would start a lazy
// process fails instead (noSpawn); the e2e tests run those.
type lazyT struct {
	t    *testing.T
	dir  string // the repository's top
	home string
	// env is the whole environment lazy's own reads see (a.getenv);
	// git and the store still read the process's, which newLazy cleans.
	env map[string]string
	// now is the clock (zero: the real one); term, when set, makes
	// stdout a terminal of that width.
	now  time.Time
	term *terminal
}

// result is how one command ended: what it printed and its exit status.
type result struct {
	out, err string
	code     int
}

// gitVars are the git variables a user's shell may carry that would
// point a test's git somewhere else.
var gitVars = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
	"GIT_CONFIG_GLOBAL", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CEILING_DIRECTORIES", "LAZY_ACTOR"}

// TestMain gives the package's tests an empty HOME of their own and a
// git that reads no system file and none of the user's GIT_* variables,
// so that they pass on any machine, and so that tests that need nothing
// more can run in parallel.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "lazy-cli-test-home")
	if err != nil {
		panic(err)
	}
	_ = os.Setenv("HOME", home)
	_ = os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	_ = os.Unsetenv("XDG_CONFIG_HOME")
	for _, k := range gitVars {
		_ = os.Unsetenv(k)
	}
	code := testrepo.Main(m)
	_ = os.RemoveAll(home)
	os.Exit(code)
}

// newLazy is a lazy in a new repository (one commit on main), with the
// package's empty HOME and no git identity but the repository's own. Its
// test runs in parallel with the other tests that use one: each has its
// repository, and the process's environment is the same for all.
func newLazy(t *testing.T) *lazyT {
	t.Helper()
	t.Parallel()
	home := os.Getenv("HOME")
	return &lazyT{t: t, dir: testrepo.New(t), home: home, env: map[string]string{"LAZY_NO_DAEMON": "1", "HOME": home}}
}

// ownHomeLazy is newLazy with a HOME of the test's own, for a test that
// writes the user's global config; such a test does not run in parallel.
func ownHomeLazy(t *testing.T) *lazyT {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	return &lazyT{t: t, dir: testrepo.New(t), home: home, env: map[string]string{"LAZY_NO_DAEMON": "1", "HOME": home}}
}

// in runs the next commands in another directory (a clone, a worktree).
func (l *lazyT) in(dir string) *lazyT {
	c := *l
	c.dir = dir
	return &c
}

// runIn runs lazy with args in the repository, stdin as its input.
func (l *lazyT) runIn(stdin string, args ...string) result {
	l.t.Helper()
	var out, errb bytes.Buffer
	o := runIO{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, terminal: l.term, noSpawn: true,
		getenv: func(k string) string { return l.env[k] }}
	if !l.now.IsZero() {
		o.now = func() time.Time { return l.now }
	}
	code := run("dev", append([]string{"-C", l.dir}, args...), o)
	return result{out: out.String(), err: errb.String(), code: code}
}

// start runs lazy with stdin in the background: out fills as it
// prints, wait returns how it ended.
func (l *lazyT) start(stdin io.Reader, args ...string) (out *syncBuffer, wait func() result) {
	out = &syncBuffer{}
	var errb syncBuffer
	o := runIO{stdin: stdin, stdout: out, stderr: &errb, terminal: l.term, noSpawn: true,
		getenv: func(k string) string { return l.env[k] }}
	done := make(chan int, 1)
	go func() { done <- run("dev", append([]string{"-C", l.dir}, args...), o) }()
	return out, func() result {
		code := <-done
		return result{out: out.String(), err: errb.String(), code: code}
	}
}

// syncBuffer is a buffer a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (l *lazyT) run(args ...string) result {
	l.t.Helper()
	return l.runIn("", args...)
}

// ok runs lazy and fails the test unless it exits 0; it returns stdout.
func (l *lazyT) ok(args ...string) string {
	l.t.Helper()
	r := l.run(args...)
	if r.code != 0 {
		l.t.Fatalf("lazy %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.out, r.err)
	}
	return r.out
}

// fails runs lazy and fails the test unless it exits with code, saying
// one "lazy: " line that holds every want; it returns stderr.
func (l *lazyT) fails(code int, args []string, want ...string) string {
	l.t.Helper()
	r := l.run(args...)
	if r.code != code {
		l.t.Fatalf("lazy %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.out, r.err)
	}
	// Progress lines ("· ...") may come first; the error is the last
	// line but the usage hint.
	errLines := lines(r.err)
	last := errLines[len(errLines)-1]
	if strings.HasPrefix(last, "Run \"lazy") && len(errLines) > 1 {
		last = errLines[len(errLines)-2]
	}
	if !strings.HasPrefix(last, "lazy: ") {
		l.t.Errorf("lazy %s: the error is not a \"lazy: \" line: %q", strings.Join(args, " "), r.err)
	}
	for _, w := range want {
		if !strings.Contains(r.err, w) {
			l.t.Errorf("lazy %s: the error lacks %q:\n%s", strings.Join(args, " "), w, r.err)
		}
	}
	return r.err
}

// json runs lazy with --json (given in args) and decodes stdout into v.
func (l *lazyT) json(v any, args ...string) {
	l.t.Helper()
	out := l.ok(args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		l.t.Fatalf("lazy %s: not JSON (%v):\n%s", strings.Join(args, " "), err, out)
	}
}

// taskJSON is the part of a task's JSON (show, create, list) the tests
// read: the fields of docs/json.md, not Go types.
type taskJSON struct {
	ID           string   `json:"id"`
	Slug         string   `json:"slug"`
	Title        string   `json:"title"`
	Goal         string   `json:"goal"`
	Status       string   `json:"status"`
	Parent       string   `json:"parent"`
	TargetBranch string   `json:"target_branch"`
	Outcome      string   `json:"outcome"`
	Reason       string   `json:"reason"`
	Comments     int      `json:"comments"`
	BudgetUSD    *float64 `json:"budget_usd"`
	AllowedPaths []string `json:"allowed_paths"`
	After        []string `json:"after"`
	CommentList  []struct {
		Text  string `json:"text"`
		Actor string `json:"actor"`
	} `json:"comment_list"`
	History []struct {
		Op   string `json:"op"`
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"history"`
}

// create makes a task through lazy create --json.
func (l *lazyT) create(title string, args ...string) taskJSON {
	l.t.Helper()
	var tk taskJSON
	l.json(&tk, append([]string{"create", title, "--json"}, args...)...)
	if tk.ID == "" || tk.Slug == "" {
		l.t.Fatalf("lazy create %q gave %+v", title, tk)
	}
	return tk
}

// show is lazy show --json of a task.
func (l *lazyT) show(name string) taskJSON {
	l.t.Helper()
	var tk taskJSON
	l.json(&tk, "show", name, "--json")
	return tk
}

// store opens the repository's task store, for what no command can do
// outside a turn (a status an agent's turn would leave, usage).
func (l *lazyT) store() *gitstore.Store {
	l.t.Helper()
	repo, err := gitstore.Discover(l.dir)
	if err != nil {
		l.t.Fatal(err)
	}
	return gitstore.Open(repo, gitstore.WithHost("test"))
}

// setStatus moves a task through statuses as turns would (each step a
// transition the state machine allows), through the store.
func (l *lazyT) setStatus(id string, statuses ...machine.Status) {
	l.t.Helper()
	for _, st := range statuses {
		l.set(id, func(sn *task.Snapshot) { sn.Task.Status = st })
	}
}

// set changes a task's record as a turn would, through the store.
func (l *lazyT) set(id string, fn func(sn *task.Snapshot)) {
	l.t.Helper()
	if _, _, err := l.store().Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		fn(sn)
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		l.t.Fatal(err)
	}
}

// lines is text's lines without the trailing newline.
func lines(text string) []string { return strings.Split(strings.TrimRight(text, "\n"), "\n") }

// has fails the test unless text holds every want.
func has(t *testing.T, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

// hasNot fails the test if text holds any of bad.
func hasNot(t *testing.T, what, text string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(text, b) {
			t.Errorf("%s holds %q:\n%s", what, b, text)
		}
	}
}

// worked is a task whose agent's turn ended (blocked) after committing
// file with content on its branch, in its worktree: the state a turn
// leaves, made with git and the store (the supervisor and the agent are
// the e2e tests'). This machine's session record says it started it.
func (l *lazyT) worked(title, file, content string) taskJSON {
	l.t.Helper()
	tk := l.create(title)
	root, _ := testrepo.GitErr(l.dir, "config", "--get", "lazy.worktreeDir")
	if root == "" {
		root = l.t.TempDir()
		testrepo.Git(l.t, l.dir, "config", "lazy.worktreeDir", root)
	}
	branch, wt := "lazy/"+tk.Slug, filepath.Join(root, tk.Slug)
	base := testrepo.Git(l.t, l.dir, "rev-parse", "main")
	testrepo.Git(l.t, l.dir, "worktree", "add", "-q", "-b", branch, wt, "main")
	if err := os.MkdirAll(filepath.Dir(filepath.Join(wt, file)), 0o755); err != nil {
		l.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, file), []byte(content), 0o644); err != nil {
		l.t.Fatal(err)
	}
	testrepo.Git(l.t, wt, "add", file)
	testrepo.Git(l.t, wt, "commit", "-q", "-m", "agent: "+title)
	host := testrepo.Git(l.t, l.dir, "config", "--get", "lazy.hostid")
	sessionID := "5e55" + tk.ID[4:] // 16 hex digits, as lazy mints them
	started := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	lazyDir := filepath.Join(l.dir, ".git", "lazy")
	if err := owned.For(lazyDir).Save(owned.Session{TaskID: tk.ID, SessionID: sessionID, Agent: "exec", Exec: []string{"true"},
		Worktree: wt, Branch: branch, StartedAt: started}); err != nil {
		l.t.Fatal(err)
	}
	l.setStatus(tk.ID, machine.Working)
	l.set(tk.ID, func(sn *task.Snapshot) {
		ended := started.Add(30 * time.Second)
		sn.Session = &task.Session{ID: sessionID, Number: 1, Host: host, Agent: "exec", ExecCommand: []string{"true"}, Branch: branch,
			Worktree: wt, GitStartSHA: base, Turn: 1, TurnKind: "start", StartedAt: started, EndedAt: &ended, Outcome: "completed"}
		sn.Task.Sessions = 1
		sn.Task.Status = machine.Blocked
	})
	return l.show(tk.Slug)
}

// jsonDecode decodes a command's JSON output.
func jsonDecode(out string, v any) error { return json.Unmarshal([]byte(out), v) }
