// Package e2e drives the real lazy binary in real temporary git
// repositories.
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

var lazyBin, fakeAgentBin, fakeGHDir string

func TestMain(m *testing.M) {
	if d := os.Getenv(slowMCPEnv); d != "" {
		// This test binary, started by a real agent CLI as its MCP
		// server (TestRealCodexWaitsForASlowLazyServer).
		os.Exit(serveSlowMCP(d))
	}
	flag.Parse() // for testing.Short: the fast lane builds lazy without -race
	dir, err := os.MkdirTemp("", "lazy-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lazyBin = filepath.Join(dir, "lazy")
	fakeAgentBin = filepath.Join(dir, "fakeagent")
	// The fake gh and glab are installed as "gh" and "glab" in a
	// directory of their own, which the forge tests put first on PATH.
	fakeGHDir = filepath.Join(dir, "gh-bin")
	// The four builds run side by side: linking is most of each, and
	// one at a time it was most of the fast lane's wait for this
	// package.
	lazyBuild := []string{"build", "-race", "-o", lazyBin, ".."}
	if os.Getenv("LAZY_E2E_NORACE") != "" || testing.Short() {
		lazyBuild = []string{"build", "-o", lazyBin, ".."}
	}
	builds := []struct {
		what string
		args []string
	}{
		{"lazy", lazyBuild},
		{"fakeagent", []string{"build", "-o", fakeAgentBin, "../internal/testfakes/fakeagent"}},
		{"fake gh", []string{"build", "-o", filepath.Join(fakeGHDir, "gh"), "../internal/testfakes/fakegh"}},
		{"fake glab", []string{"build", "-o", filepath.Join(fakeGHDir, "glab"), "../internal/testfakes/fakeglab"}},
	}
	if testing.Short() {
		// The fast lane's tests (shortLane) run lazy and the fake agent,
		// never a forge: the fake gh and glab are not linked.
		builds = builds[:2]
	}
	errs := make([]error, len(builds))
	var wg sync.WaitGroup
	for i, b := range builds {
		wg.Go(func() {
			out, err := exec.Command("go", b.args...).CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("build %s: %w\n%s", b.what, err, out)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Task worktrees go to $XDG_DATA_HOME/lazy/worktrees by default: the
	// tests' go to a directory of their own, never the user's.
	if err := os.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The credential gate refuses claude and codex without credentials;
	// the fake agents need none, so every test gets a placeholder key
	// (the gate's own tests clear it, the real-CLI tests set their own).
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
		if os.Getenv(k) == "" {
			_ = os.Setenv(k, "lazy-e2e-placeholder")
		}
	}
	code := testrepo.Main(m)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// result is one finished lazy process.
type result struct {
	Stdout, Stderr string
	Code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// runner runs lazy in one repository.
type runner struct {
	t   testing.TB
	dir string
	env []string
	bin string // the lazy binary this runner runs ("" is lazyBin)
}

// lazy is the binary r runs.
func (r *runner) lazy() string {
	if r.bin != "" {
		return r.bin
	}
	return lazyBin
}

// shortLane names the end-to-end tests the fast lane (go test -short)
// keeps: a smoke test of the core commands and their errors against the
// real binary, a few seconds in all. Every other e2e test drives agents,
// daemons, forges, crashes or real clients, and only the full suite
// (scripts/test.sh) runs it.
var shortLane = map[string]bool{
	"TestCreateListShow":                     true,
	"TestCloseRejectReopenAndComment":        true,
	"TestExitCodes":                          true,
	"TestErrorsSayWhatIsWrongAndWhatToDo":    true,
	"TestAmbiguousPrefixListsCandidates":     true,
	"TestInitConfiguresRefspecsIdempotently": true,
	"TestMergeGateCLI":                       true,
}

// full skips t in the fast lane unless shortLane keeps it. Every e2e
// test reaches it through newRepo, and every real client's finder
// (chromium, tmux, bwrap, the TS SDK, the agent CLIs) calls it before
// its LAZY_REQUIRE_* check, so the fast lane never asks for one.
func full(t testing.TB) {
	t.Helper()
	name, _, _ := strings.Cut(t.Name(), "/")
	if testing.Short() && !shortLane[name] {
		t.Skip("e2e: the full suite runs it (scripts/test.sh)")
	}
}

func newRepo(t testing.TB) *runner {
	t.Helper()
	full(t)
	return &runner{t: t, dir: testrepo.New(t)}
}

// manualResume turns auto-resume off, for tests about the interrupt
// itself or about lazy resume.
func manualResume(r *runner) *runner {
	r.t.Helper()
	r.git("config", "lazy.autoResume", "false")
	return r
}

func (r *runner) with(env ...string) *runner {
	c := *r
	c.env = append(append([]string(nil), r.env...), env...)
	return &c
}

// environ is the environment every lazy the tests run gets.
func (r *runner) environ() []string {
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LAZY_ACTOR=", "GORACE=atexit_sleep_ms=0 halt_on_error=1", "LAZY_RETRY_SCALE=0.001", "LAZY_NO_DAEMON=1")
	return append(env, r.env...)
}

// startLines starts lazy with args in dir and env, ends it when the test
// does, and returns its stdout line by line; the channel closes when the
// output ends.
func startLines(t *testing.T, dir string, env []string, args ...string) <-chan string {
	t.Helper()
	cmd := exec.Command(lazyBin, args...)
	cmd.Dir = dir
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// run runs lazy with stdin (nil for none) and returns what happened.
func (r *runner) run(stdin []byte, args ...string) result {
	r.t.Helper()
	cmd := exec.Command(r.lazy(), args...)
	cmd.Dir = r.dir
	cmd.Env = r.environ()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := result{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.Code = ee.ExitCode()
	case err != nil:
		r.t.Fatalf("run lazy %v: %v", args, err)
	}
	if strings.Contains(res.Stderr, "panic:") || strings.Contains(res.Stderr, "DATA RACE") {
		r.t.Fatalf("lazy %v crashed:\n%s", args, res)
	}
	return res
}

// ok runs lazy and fails the test unless it exits 0.
func (r *runner) ok(args ...string) string {
	r.t.Helper()
	res := r.run(nil, args...)
	if res.Code != 0 {
		r.t.Fatalf("lazy %s: %s", strings.Join(args, " "), res)
	}
	return res.Stdout
}

// fails runs lazy, requires exit code want and returns stderr.
func (r *runner) fails(want int, stdin []byte, args ...string) string {
	r.t.Helper()
	res := r.run(stdin, args...)
	if res.Code != want {
		r.t.Fatalf("lazy %s: want exit %d, got %s", strings.Join(args, " "), want, res)
	}
	if strings.TrimSpace(res.Stderr) == "" {
		r.t.Fatalf("lazy %s failed without saying why", strings.Join(args, " "))
	}
	return res.Stderr
}

func (r *runner) git(args ...string) string {
	r.t.Helper()
	return testrepo.Git(r.t, r.dir, args...)
}

// task is the JSON shape printed by create/list/show --json.
type task struct {
	ID        string `json:"id"`
	Slug      string `json:"slug"`
	Title     string `json:"title"`
	Status    string `json:"status"`
	Category  string `json:"category"`
	Parent    string `json:"parent"`
	Outcome   string `json:"outcome"`
	Reason    string `json:"reason"`
	Turns     int    `json:"turns"`
	Comments  int    `json:"comments"`
	Goal      string `json:"goal"`
	Error     string `json:"error"`
	CreatedBy string `json:"created_by"`
	History   []struct {
		Op    string `json:"op"`
		Actor string `json:"actor"`
		From  string `json:"from"`
		To    string `json:"to"`
		Host  string `json:"host"`
		Clock int    `json:"clock"`
	} `json:"history"`
	CommentList []struct {
		Text  string `json:"text"`
		Actor string `json:"actor"`
	} `json:"comment_list"`
}

func (r *runner) create(args ...string) task {
	r.t.Helper()
	var tk task
	out := r.ok(append([]string{"create", "--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &tk); err != nil {
		r.t.Fatalf("create output %q: %v", out, err)
	}
	return tk
}

func (r *runner) show(name string) task {
	r.t.Helper()
	var tk task
	out := r.ok("show", "--json", name)
	if err := json.Unmarshal([]byte(out), &tk); err != nil {
		r.t.Fatalf("show output %q: %v", out, err)
	}
	return tk
}

func (r *runner) list(args ...string) []task {
	r.t.Helper()
	var ts []task
	out := r.ok(append([]string{"list", "--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &ts); err != nil {
		r.t.Fatalf("list output %q: %v", out, err)
	}
	return ts
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
