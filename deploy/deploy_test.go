package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	workflowFile   = "github-actions/lazy-runner.yml"
	deploymentFile = "kubernetes/lazy-runner.yaml"
	jobFile        = "kubernetes/lazy-runner-job.yaml"
	kedaFile       = "kubernetes/lazy-runner-keda.yaml"
	dockerfile     = "kubernetes/Dockerfile"
)

// runnerFlags are the flags of `lazy runner` (issue 32), each with whether
// it takes a value:
//
//	lazy runner [--remote NAME] [--label L]... [--max-tasks N] [--once] [--lease DURATION] [--poll DURATION] [--grace DURATION]
var runnerFlags = map[string]bool{
	"--remote":    true,
	"--label":     true,
	"--max-tasks": true,
	"--once":      false,
	"--lease":     true,
	"--poll":      true,
	"--grace":     true,
}

// runnerArgs checks the arguments that follow `lazy runner` against
// runnerFlags and returns each flag's values (nil for --once).
func runnerArgs(args []string) (map[string][]string, error) {
	got := map[string][]string{}
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		takes, known := runnerFlags[name]
		switch {
		case !known:
			return nil, fmt.Errorf("lazy runner has no argument %q (its flags: %s)", args[i], strings.Join(slices.Sorted(maps.Keys(runnerFlags)), " "))
		case !takes && hasValue:
			return nil, fmt.Errorf("%s takes no value, got %q", name, args[i])
		case takes && !hasValue:
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
				return nil, fmt.Errorf("%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if _, seen := got[name]; seen && name != "--label" {
			return nil, fmt.Errorf("%s given twice", name)
		}
		if err := checkRunnerValue(name, value); err != nil {
			return nil, err
		}
		if takes {
			got[name] = append(got[name], value)
		} else {
			got[name] = nil
		}
	}
	return got, nil
}

func checkRunnerValue(name, value string) error {
	switch name {
	case "--max-tasks":
		if n, err := strconv.Atoi(value); err != nil || n < 1 {
			return fmt.Errorf("--max-tasks wants a whole number of at least 1, got %q", value)
		}
	case "--lease", "--poll":
		if d, err := time.ParseDuration(value); err != nil || d <= 0 {
			return fmt.Errorf("%s wants a positive duration such as 30s, got %q", name, value)
		}
	case "--label", "--remote":
		if value == "" || strings.ContainsAny(value, ", \t\n") {
			return fmt.Errorf("%s wants one non-empty word, got %q", name, value)
		}
	}
	return nil
}

// lazyRunnerIn finds `lazy runner` in an argv and returns what follows it.
func lazyRunnerIn(argv []string) ([]string, bool) {
	for i := 0; i+1 < len(argv); i++ {
		if filepath.Base(argv[i]) == "lazy" && argv[i+1] == "runner" {
			return argv[i+2:], true
		}
	}
	return nil, false
}

func TestRunnerArgsChecker(t *testing.T) {
	good := []string{"--once", "--label", "gpu", "--label=linux", "--max-tasks", "3", "--remote", "origin", "--lease=10m", "--poll", "30s"}
	got, err := runnerArgs(good)
	if err != nil {
		t.Fatalf("runnerArgs(%q): %v", good, err)
	}
	if !slices.Equal(got["--label"], []string{"gpu", "linux"}) || got["--max-tasks"][0] != "3" {
		t.Errorf("runnerArgs(%q) = %v", good, got)
	}
	if _, ok := got["--once"]; !ok {
		t.Errorf("runnerArgs(%q) lost --once: %v", good, got)
	}
	for _, bad := range [][]string{
		{"--forever"},
		{"--label"},
		{"--label", "--once"},
		{"--label", "a,b"},
		{"--once=true"},
		{"--max-tasks", "0"},
		{"--max-tasks", "two"},
		{"--poll", "soon"},
		{"--remote", "a", "--remote", "b"},
		{"task-id"},
	} {
		if _, err := runnerArgs(bad); err == nil {
			t.Errorf("runnerArgs(%q) accepted arguments lazy runner does not take", bad)
		}
	}
}

// TestMain lets the test binary stand in for lazy: run as "lazy" with
// FAKE_LAZY_LOG set, it appends its directory and arguments to that file
// as a JSON line and exits 0, so a recipe's script runs as written.
func TestMain(m *testing.M) {
	if log := os.Getenv("FAKE_LAZY_LOG"); log != "" && filepath.Base(os.Args[0]) == "lazy" {
		os.Exit(fakeLazy(log))
	}
	os.Exit(m.Run())
}

type lazyCall struct {
	Dir  string   `json:"dir"`
	Args []string `json:"args"`
}

func fakeLazy(log string) int {
	// FAKE_LAZY_STDOUT is what the fake prints, as lazy pool --count would.
	fmt.Print(os.Getenv("FAKE_LAZY_STDOUT"))
	dir, _ := os.Getwd()
	line, _ := json.Marshal(lazyCall{Dir: dir, Args: os.Args[1:]})
	f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake lazy:", err)
		return 1
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		fmt.Fprintln(os.Stderr, "fake lazy:", err)
		return 1
	}
	return 0
}

// fakeLazyDir returns a directory holding a fake lazy (see TestMain) to put
// first on PATH, and the log its calls go to (FAKE_LAZY_LOG).
func fakeLazyDir(t *testing.T) (dir, log string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(dir, "lazy")); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(t.TempDir(), "lazy-calls.jsonl")
}

func readLazyCalls(t *testing.T, log string) []lazyCall {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var calls []lazyCall
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		var c lazyCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("fake lazy log line %q: %v", sc.Text(), err)
		}
		calls = append(calls, c)
	}
	return calls
}

// shellcheckPath returns the shellcheck to run, or "" where there is none
// and LAZY_REQUIRE_SHELLCHECK (set by scripts/test.sh) does not demand it.
func shellcheckPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("shellcheck")
	if err != nil {
		if os.Getenv("LAZY_REQUIRE_SHELLCHECK") == "1" {
			t.Fatal("shellcheck is not on PATH but LAZY_REQUIRE_SHELLCHECK=1: apt-get install shellcheck")
		}
		return ""
	}
	return p
}

// cleanEnv is the environment of a recipe's script run by a test: this
// process's, less git's and lazy's own settings, with HOME and git's config
// confined to the test, then extra.
func cleanEnv(home string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "LAZY_") || strings.HasPrefix(k, "XDG_") || k == "HOME" || k == "FAKE_LAZY_LOG" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "GIT_CONFIG_NOSYSTEM=1")
	return append(env, extra...)
}

// dockerfileInstructions returns the Dockerfile's instructions, each with
// its continuation lines joined, comments dropped.
func dockerfileInstructions(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if body, cont := strings.CutSuffix(trimmed, "\\"); cont {
			cur.WriteString(body)
			continue
		}
		cur.WriteString(trimmed)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// TestDockerfile holds the image to what the manifests expect of it: the
// user their securityContext names, tini where their command says, git,
// and lazy and the agent CLI installed from the places the README names.
func TestDockerfile(t *testing.T) {
	ins := dockerfileInstructions(t)
	var from, user, entrypoint []string
	var runs string
	for _, in := range ins {
		word, rest, _ := strings.Cut(in, " ")
		switch strings.ToUpper(word) {
		case "FROM":
			from = append(from, rest)
		case "USER":
			user = append(user, rest)
		case "ENTRYPOINT":
			entrypoint = append(entrypoint, rest)
		case "RUN":
			runs += rest + "\n"
		}
	}
	if len(from) != 2 || !strings.HasSuffix(from[0], " AS build") {
		t.Errorf("the Dockerfile has stages %q; want a build stage (FROM ... AS build) and the runtime stage", from)
	}
	if !slices.Equal(user, []string{fmt.Sprintf("%d:%d", runAsUser, runAsUser)}) {
		t.Errorf("the image runs as USER %q; the manifests' securityContext expects %d:%d", user, runAsUser, runAsUser)
	}
	if !slices.Equal(entrypoint, []string{`["/usr/bin/tini", "--"]`}) {
		t.Errorf("ENTRYPOINT %q; the manifests run /usr/bin/tini -- lazy runner", entrypoint)
	}
	for _, want := range []string{
		`go install "github.com/lazyorch/lazy@${LAZY_VERSION}"`,
		`"@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}"`,
		" git ",
		" tini",
		fmt.Sprintf("useradd --uid %d --gid %d", runAsUser, runAsUser),
	} {
		if !strings.Contains(runs, want) {
			t.Errorf("no RUN of the Dockerfile has %q", want)
		}
	}
}

var (
	claudeVersionInScript = regexp.MustCompile(`(?m)^CLAUDE_VERSION=\$\{LAZY_CLAUDE_VERSION:-([0-9.]+)\}$`)
	goDirective           = regexp.MustCompile(`(?m)^go (\d+\.\d+)`)
)

// TestPinnedVersionsAgree keeps the recipes on the releases lazy's own
// suite tests: the agent CLI of scripts/ci-install-agent-clis.sh, and a Go
// no older than go.mod's.
func TestPinnedVersionsAgree(t *testing.T) {
	script, err := os.ReadFile("../scripts/ci-install-agent-clis.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := claudeVersionInScript.FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/ci-install-agent-clis.sh pins no CLAUDE_VERSION this test can read")
	}
	tested := string(m[1])
	wf := readWorkflow(t)
	if got := envValue(wf.Env, "CLAUDE_CODE_VERSION"); got != tested {
		t.Errorf("the workflow installs Claude Code %q; lazy is tested against %s", got, tested)
	}
	if !slices.Contains(dockerfileInstructions(t), "ARG CLAUDE_CODE_VERSION="+tested) {
		t.Errorf("the Dockerfile does not pin ARG CLAUDE_CODE_VERSION=%s, the release lazy is tested against", tested)
	}

	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	gm := goDirective.FindSubmatch(mod)
	if gm == nil {
		t.Fatal("go.mod has no go directive")
	}
	need := string(gm[1])
	if got := actionInput(t, wf, "actions/setup-go@v5", "go-version"); !goAtLeast(got, need) {
		t.Errorf("the workflow sets up Go %q; lazy's go.mod needs %s", got, need)
	}
	for _, in := range dockerfileInstructions(t) {
		if v, ok := strings.CutPrefix(in, "FROM golang:"); ok {
			if ver, _, _ := strings.Cut(v, "-"); !goAtLeast(ver, need) {
				t.Errorf("the Dockerfile builds with golang:%s; lazy's go.mod needs %s", ver, need)
			}
		}
	}
}

// goAtLeast reports whether the Go version have (major.minor) is at least need.
func goAtLeast(have, need string) bool {
	parse := func(v string) (int, int, bool) {
		a, b, ok := strings.Cut(v, ".")
		x, err1 := strconv.Atoi(a)
		y, err2 := strconv.Atoi(b)
		return x, y, ok && err1 == nil && err2 == nil
	}
	hx, hy, ok1 := parse(have)
	nx, ny, ok2 := parse(need)
	return ok1 && ok2 && (hx > nx || hx == nx && hy >= ny)
}

// buildLazy builds this module's lazy into a temporary directory.
func buildLazy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "lazy"), "..").CombinedOutput()
	if err != nil {
		t.Fatalf("go build lazy: %v\n%s", err, out)
	}
	return dir
}

// TestRunnerFlagsMatchTheCLI holds runnerFlags to the built lazy's own
// `lazy runner --help`, once the command exists.
func TestRunnerFlagsMatchTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lazy")
	}
	lazy := filepath.Join(buildLazy(t), "lazy")
	cmd := exec.Command(lazy, "runner", "--help")
	cmd.Env = cleanEnv(t.TempDir())
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "unexpected argument runner") {
		t.Skip("this lazy has no runner command yet")
	}
	if err != nil {
		t.Fatalf("lazy runner --help: %v\n%s", err, out)
	}
	for flag := range runnerFlags {
		if !regexp.MustCompile(regexp.QuoteMeta(flag) + `\b`).Match(out) {
			t.Errorf("lazy runner --help does not list %s, which the recipes may use:\n%s", flag, out)
		}
	}
	// The KEDA recipe's metrics pod runs lazy pool --count.
	cmd = exec.Command(lazy, "pool", "--help")
	cmd.Env = cleanEnv(t.TempDir())
	cmd.Dir = t.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil || !regexp.MustCompile(`--count\b`).Match(out) {
		t.Errorf("lazy pool --help does not list --count, which %s runs: %v\n%s", kedaFile, err, out)
	}
}
