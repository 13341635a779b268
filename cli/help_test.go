package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run("dev", args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func TestHelpGolden(t *testing.T) {
	for _, width := range []string{"60", "100", "200"} {
		t.Setenv("COLUMNS", width) // kong wraps help to it, as on a terminal
		for name, args := range map[string][]string{
			"root":     {"--help"},
			"start":    {"help", "start"},
			"reparent": {"reparent", "--help"},
		} {
			out, errs, code := runCLI(t, args...)
			if code != 0 || errs != "" {
				t.Fatalf("%v: exit %d, stderr %q", args, code, errs)
			}
			golden(t, "help-"+name+"-"+width+".golden", []byte(out))
			for _, l := range strings.Split(out, "\n") {
				if n := len([]rune(l)); n > 200 {
					t.Errorf("help %s at %s columns: a line of %d", name, width, n)
				}
			}
		}
	}
}

func TestLazyHelpXIsXHelp(t *testing.T) {
	want, _, _ := runCLI(t, "diff", "--help")
	got, _, code := runCLI(t, "help", "diff")
	if code != 0 || got != want || !strings.Contains(got, "Examples:\n  lazy diff fix-login\n") {
		t.Fatalf("lazy help diff (exit %d):\n%s", code, got)
	}
	if got, _, code := runCLI(t, "-C", ".", "--no-color", "help", "diff"); code != 0 || got != want {
		t.Fatalf("lazy -C . --no-color help diff (exit %d):\n%s", code, got)
	}
	if got, _, code := runCLI(t, "help"); code != 0 || !strings.Contains(got, "Tasks:") {
		t.Fatalf("lazy help (exit %d):\n%s", code, got)
	}
	if _, errs, code := runCLI(t, "help", "nosuch"); code != 2 || !strings.Contains(errs, "nosuch") {
		t.Fatalf("lazy help nosuch: exit %d %q", code, errs)
	}
}

// Every visible command's help ends with examples.
func TestEveryCommandHasExamples(t *testing.T) {
	var g Globals
	parser, err := newParser(&g, commands, build{version: "dev"}, io.Discard, io.Discard, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, c := range n.Children {
			if c.Hidden {
				continue
			}
			path := commandPath(c)
			if strings.TrimSpace(examples[path]) == "" {
				t.Errorf("lazy %s has no examples", path)
			}
			out, _, code := runCLI(t, append(strings.Fields(path), "--help")...)
			if code != 0 || !strings.Contains(out, "\nExamples:\n  lazy ") && path != "mcp" {
				t.Errorf("lazy %s --help shows no examples:\n%s", path, out)
			}
			walk(c)
		}
	}
	walk(parser.Model.Node)
}

func TestVersionNamesTheBuild(t *testing.T) {
	out, _, code := runCLI(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "lazy ") || !strings.Contains(out, " go1.") || !strings.Contains(out, "\nbuild id "+versionID("dev")+"\n") {
		t.Fatalf("--version: exit %d %q", code, out)
	}
}

func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		out, errs, code := runCLI(t, "completion", sh)
		if code != 0 || !strings.Contains(out, "lazy") || errs != "" {
			t.Fatalf("completion %s: exit %d %q %q", sh, code, out, errs)
		}
	}
	if _, errs, code := runCLI(t, "completion", "tcsh"); code != 2 || !strings.Contains(errs, `must be one of "bash","zsh","fish"`) {
		t.Fatalf("completion tcsh: exit %d %q", code, errs)
	}
	t.Setenv("COMP_LINE", "lazy un")
	t.Setenv("COMP_POINT", "7")
	out, _, code := runCLI(t)
	if code != 0 || strings.TrimSpace(out) != "unblock" {
		t.Fatalf("completing %q: exit %d %q", "lazy un", code, out)
	}
	t.Setenv("COMP_LINE", "lazy diff --na")
	t.Setenv("COMP_POINT", "14")
	if out, _, _ := runCLI(t); strings.TrimSpace(out) != "--name-only" {
		t.Fatalf("completing a flag: %q", out)
	}
}

func TestVersionCommand(t *testing.T) {
	out, errs, code := runCLI(t, "version")
	want, _, _ := runCLI(t, "--version")
	if code != 0 || errs != "" || out != want {
		t.Fatalf("lazy version: exit %d %q %q; --version says %q", code, out, errs, want)
	}
	out, _, code = runCLI(t, "version", "--json")
	var b buildInfo
	if err := json.Unmarshal([]byte(out), &b); code != 0 || err != nil {
		t.Fatalf("lazy version --json: exit %d %v\n%s", code, err, out)
	}
	if b.Version != "dev" || !strings.HasPrefix(b.GoVersion, "go1.") || b.BuildID != versionID("dev") || b.OS == "" || b.Arch == "" {
		t.Fatalf("lazy version --json: %+v", b)
	}
	// Test binaries carry no VCS stamp; String still names the build.
	if s := (buildInfo{Version: "v1.2.3", Revision: "0123456789abcdef", Dirty: true, GoVersion: "go1.26"}).String(); s != "v1.2.3 (0123456789ab, modified) go1.26" {
		t.Fatalf("String: %q", s)
	}
}

// An unknown command, run or asked about, names the nearest commands:
// a prefix first, else the fewest typos (a swap is one).
func TestUnknownCommandSuggestsTheNearest(t *testing.T) {
	for word, want := range map[string]string{
		"statsu":  "did you mean status?",
		"wiat":    "did you mean wait?",
		"acc":     "did you mean accept?",
		"pu":      "did you mean one of pull, push?",
		"vesrion": "did you mean version?",
		"xyzzy":   "lazy --help lists them",
	} {
		for _, args := range [][]string{{word}, {"help", word}, {"-C", ".", word, "--json"}} {
			out, errs, code := runCLI(t, args...)
			if code != 2 || out != "" || !strings.Contains(errs, `lazy: "`+word+`" is not a lazy command; `+want) {
				t.Errorf("lazy %v: exit %d %q %q; want %q", args, code, out, errs, want)
			}
		}
	}
	// The word is escaped on its way to the terminal.
	if _, errs, _ := runCLI(t, "st\x1b]0;x\x07"); strings.ContainsAny(errs, "\x1b\x07") {
		t.Fatalf("unescaped: %q", errs)
	}
}

// Completion offers the statuses for --status, the agents for --agent,
// the keys for lazy config, and for lazy accept only the tasks accept
// takes.
func TestCompletionValues(t *testing.T) {
	for line, want := range map[string][]string{
		"lazy list --status bl":    {"blocked"},
		"lazy list --status ":      {"backlog", "working", "blocked", "complete", "abandoned"},
		"lazy start x --agent co":  {"codex"},
		"lazy create t --agent ":   {"claude", "codex", "exec"},
		"lazy config lazy.gate.ti": {"lazy.gate.timeout"},
	} {
		t.Setenv("COMP_LINE", line)
		t.Setenv("COMP_POINT", strconv.Itoa(len(line)))
		out, _, code := runCLI(t)
		got := strings.Fields(out)
		for _, w := range want {
			if code != 0 || !slices.Contains(got, w) {
				t.Errorf("completing %q: exit %d, %q lacks %q", line, code, got, w)
			}
		}
	}

	dir := testrepo.New(t)
	t.Chdir(dir)
	t.Setenv("LAZY_NO_DAEMON", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(t.TempDir(), "none"))
	t.Setenv("COMP_LINE", "")
	for _, title := range []string{"parked one", "still backlog"} {
		if _, errs, code := runCLI(t, "create", title); code != 0 {
			t.Fatal(errs)
		}
	}
	// Park the first as a finished turn would leave it: blocked.
	repo, err := gitrepo.Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := gitstore.Open(repo)
	id, err := st.Resolve("parked-one")
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []machine.Status{machine.Working, machine.Blocked} {
		if _, _, err := st.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
			s.Task.Status = to
			return &task.Op{Name: "test", Actor: machine.System}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for line, want := range map[string]string{"lazy accept ": "parked-one", "lazy show ": "parked-one still-backlog"} {
		t.Setenv("COMP_LINE", line)
		t.Setenv("COMP_POINT", strconv.Itoa(len(line)))
		out, _, _ := runCLI(t)
		got := strings.Fields(out)
		slices.Sort(got)
		if strings.Join(got, " ") != want {
			t.Errorf("completing %q: %q, want %q", line, got, want)
		}
	}
}
