package gate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
)

var _ Config = (*gitrepo.Config)(nil)

// fakeConfig is git config as key -> values, in git's order.
type fakeConfig map[string][]string

func (c fakeConfig) Get(key string) (string, bool) {
	v := c[key]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

func (c fakeConfig) All(key string) []string { return c[key] }

func TestLoadDefaults(t *testing.T) {
	s, err := Load(fakeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{Timeout: 15 * time.Minute, Parallel: 1, MaxAttempts: 3, Forge: ForgeLocal, UseFile: true, Batch: 1}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("defaults %+v, want %+v", s, want)
	}
}

func TestLoadReadsEveryKey(t *testing.T) {
	s, err := Load(fakeConfig{
		"lazy.gate":             {"go vet ./...", "  go test ./...  "},
		"lazy.gate.timeout":     {"90s"},
		"lazy.gate.parallel":    {"2"},
		"lazy.gate.autoFix":     {"yes"},
		"lazy.gate.maxAttempts": {"20"},
		"lazy.gate.forge":       {"checks"},
		"lazy.gate.file":        {"off"},
		"lazy.gate.protect":     {"tests/", "./**/*_test.go"},
		"lazy.gate.minDuration": {"2s"},
		"lazy.gate.batch":       {" 8 "},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{
		ConfigCommands: []string{"go vet ./...", "go test ./..."},
		Timeout:        90 * time.Second, Parallel: 2, AutoFix: true, MaxAttempts: 20,
		Forge: ForgeChecks, UseFile: false,
		Protect: []string{"tests/", "**/*_test.go"}, MinDuration: 2 * time.Second, Batch: 8,
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("%+v, want %+v", s, want)
	}
	for v, want := range map[string]bool{"true": true, "On": true, "1": true, "false": false, "NO": false, "0": false, "off": false, "": false} {
		s, err := Load(fakeConfig{"lazy.gate.autoFix": {v}})
		if err != nil || s.AutoFix != want {
			t.Errorf("autoFix %q: %v %v, want %v", v, s.AutoFix, err, want)
		}
	}
	for _, v := range []string{"auto", " AUTO "} {
		s, err := Load(fakeConfig{"lazy.gate.batch": {v}})
		if err != nil || !s.BatchAuto || s.Batch != 1 {
			t.Errorf("batch %q: auto %v, batch %d, %v; want auto with batch 1", v, s.BatchAuto, s.Batch, err)
		}
	}
	if s, err := Load(fakeConfig{"lazy.gate.batch": {"4"}}); err != nil || s.BatchAuto || s.Batch != 4 {
		t.Errorf("batch 4: auto %v, batch %d, %v", s.BatchAuto, s.Batch, err)
	}
}

// TestLoadAnEmptyValueClearsTheCommandsBefore checks how a repository
// switches off a gate its user set globally.
func TestLoadAnEmptyValueClearsTheCommandsBefore(t *testing.T) {
	s, err := Load(fakeConfig{"lazy.gate": {"make global", "", "make local"}})
	if err != nil || !reflect.DeepEqual(s.ConfigCommands, []string{"make local"}) {
		t.Fatalf("%q %v", s.ConfigCommands, err)
	}
	s, err = Load(fakeConfig{"lazy.gate": {"make global", " "}})
	if err != nil || s.ConfigCommands != nil {
		t.Fatalf("%q %v", s.ConfigCommands, err)
	}
}

func TestLoadRefusesEveryBadValue(t *testing.T) {
	tooMany := make([]string, MaxCommands+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("echo %d", i)
	}
	maxPar := fmt.Sprint(2*runtime.NumCPU() + 1)
	for _, tc := range []struct {
		key  string
		vals []string
		want []string // all in the error
	}{
		{"lazy.gate.timeout", []string{"soon"}, []string{`git config lazy.gate.timeout = "soon" is not a duration; fix it with git config lazy.gate.timeout 10m (or git config --unset lazy.gate.timeout for the default)`}},
		{"lazy.gate.timeout", []string{"15"}, []string{`lazy.gate.timeout = "15" is not a duration`}},
		{"lazy.gate.timeout", []string{"0s"}, []string{`lazy.gate.timeout = "0s" is out of range`, "10m"}},
		{"lazy.gate.timeout", []string{"-1m"}, []string{`"-1m" is out of range`}},
		{"lazy.gate.timeout", []string{"25h"}, []string{`"25h" is out of range`, "24h"}},
		{"lazy.gate.parallel", []string{"many"}, []string{`lazy.gate.parallel = "many" is not a number`, "fix it with git config lazy.gate.parallel 2"}},
		{"lazy.gate.parallel", []string{"0"}, []string{`lazy.gate.parallel = "0" is out of range`}},
		{"lazy.gate.parallel", []string{maxPar}, []string{`lazy.gate.parallel = "` + maxPar + `" is out of range`, "CPUs"}},
		{"lazy.gate.batch", []string{"0"}, []string{`lazy.gate.batch = "0" is out of range: a number from 1 to 100, or auto (1 gates each entry on its own)`, "fix it with git config lazy.gate.batch 8"}},
		{"lazy.gate.batch", []string{"autom"}, []string{`"autom" is not a number from 1 to 100, or auto`}},
		{"lazy.gate.batch", []string{"-2"}, []string{`"-2" is out of range`}},
		{"lazy.gate.batch", []string{"101"}, []string{`"101" is out of range`}},
		{"lazy.gate.batch", []string{"eight"}, []string{`"eight" is not a number from 1 to 100`}},
		{"lazy.gate.maxAttempts", []string{"21"}, []string{`lazy.gate.maxAttempts = "21" is out of range: a number from 1 to 20; fix it with git config lazy.gate.maxAttempts 3`}},
		{"lazy.gate.maxAttempts", []string{"0"}, []string{`"0" is out of range`}},
		{"lazy.gate.maxAttempts", []string{"3x"}, []string{`"3x" is not a number`}},
		{"lazy.gate.autoFix", []string{"maybe"}, []string{`git config lazy.gate.autoFix = "maybe" is not a boolean (true or false); fix it with git config lazy.gate.autoFix true`}},
		{"lazy.gate.file", []string{"sometimes"}, []string{`lazy.gate.file = "sometimes" is not a boolean`}},
		{"lazy.gate.forge", []string{"github"}, []string{`lazy.gate.forge = "github" is neither local nor checks`, "fix it with git config lazy.gate.forge local"}},
		{"lazy.gate", []string{"echo \x00"}, []string{"lazy.gate", "NUL"}},
		{"lazy.gate", []string{strings.Repeat("x", MaxCommandBytes+1)}, []string{"lazy.gate", "4097 bytes long", "…"}},
		{"lazy.gate", tooMany, []string{"lazy.gate has 65 commands, more than 64"}},
		{"lazy.gate.minDuration", []string{"quick"}, []string{`lazy.gate.minDuration = "quick" is not a duration`, "fix it with git config lazy.gate.minDuration"}},
		{"lazy.gate.minDuration", []string{"-1s"}, []string{`"-1s" is out of range`}},
		{"lazy.gate.minDuration", []string{"0s"}, []string{`"0s" is out of range`, "unset the key for no minimum"}},
		{"lazy.gate.protect", []string{"/etc/passwd"}, []string{"lazy.gate.protect", "absolute", "relative to the repository's root"}},
		{"lazy.gate.protect", []string{"../x"}, []string{"leaves the repository"}},
		{"lazy.gate.protect", []string{"a/[b"}, []string{`"[b" is not a valid glob`}},
	} {
		_, err := Load(fakeConfig{tc.key: tc.vals})
		if err == nil {
			t.Errorf("%s = %.20q: no error", tc.key, tc.vals)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s = %.20q: %q does not say %q", tc.key, tc.vals, err, w)
			}
		}
	}
}

// TestLoadFromGitConfig reads real config files through gitrepo, where a
// bare key is true and "key =" false, as git reads them.
func TestLoadFromGitConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(dir, "global"))
	global := "[lazy]\n\tgate = make check\n"
	local := "[lazy]\n\tgate = go test ./...\n[lazy \"gate\"]\n\tautoFix\n\tfile =\n\tTIMEOUT = 2m\n"
	if err := os.WriteFile(filepath.Join(dir, "global"), []byte(global), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := gitrepo.ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.ConfigCommands, []string{"make check", "go test ./..."}) || !s.AutoFix || s.UseFile || s.Timeout != 2*time.Minute {
		t.Fatalf("%+v", s)
	}
}

func TestParseFile(t *testing.T) {
	got, err := ParseFile([]byte("\xef\xbb\xbf# the gate\r\n\r\ngo vet ./...\r\n   # indented comment\n  go test -short ./...  \n\t\nmake lint"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"go vet ./...", "go test -short ./...", "make lint"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("%q, want %q", got, want)
	}
	if got, err := ParseFile([]byte("# nothing\n\n")); err != nil || got != nil {
		t.Fatalf("comments only: %q %v", got, err)
	}

	full := strings.Repeat("true\n# c\n", MaxCommands)
	if got, err := ParseFile([]byte(full)); err != nil || len(got) != MaxCommands {
		t.Fatalf("%d commands: %d %v", MaxCommands, len(got), err)
	}
	long := strings.Repeat("x", MaxCommandBytes)
	if got, err := ParseFile([]byte("# ok\n" + long + "\r\n")); err != nil || len(got) != 1 {
		t.Fatalf("a command of %d bytes: %v", MaxCommandBytes, err)
	}
	for name, tc := range map[string]struct {
		in   string
		want string
	}{
		"too many":         {full + "# more\nfalse\n", ".lazy/gate line 130 is command 65, more than 64"},
		"too long":         {"true\n" + long + "x\n", ".lazy/gate line 2 is 4097 bytes long, more than 4096"},
		"nul":              {"true\n\necho a\x00b\n", ".lazy/gate line 3 holds a NUL byte"},
		"nul in a comment": {"# \x00\n", ".lazy/gate line 1 holds a NUL byte"},
	} {
		if _, err := ParseFile([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func TestCommandsPrecedence(t *testing.T) {
	reads := 0
	file := func(content string, ok bool, err error) func(string) ([]byte, bool, error) {
		return func(path string) ([]byte, bool, error) {
			reads++
			if path != FileName {
				t.Errorf("read %q, want %q", path, FileName)
			}
			return []byte(content), ok, err
		}
	}
	withFile := file("# gate\nmake test\n", true, nil)

	s, _ := Load(fakeConfig{"lazy.gate": {"go test ./..."}})
	cmds, src, err := s.Commands(withFile, "main")
	if err != nil || !reflect.DeepEqual(cmds, []string{"go test ./..."}) || src != "git config lazy.gate" || reads != 0 {
		t.Fatalf("config over file: %q %q %v (read %d)", cmds, src, err, reads)
	}
	if !Enabled(cmds) {
		t.Fatal("not enabled")
	}

	s, _ = Load(fakeConfig{})
	cmds, src, err = s.Commands(withFile, "main")
	if err != nil || !reflect.DeepEqual(cmds, []string{"make test"}) || src != ".lazy/gate at main" {
		t.Fatalf("the file: %q %q %v", cmds, src, err)
	}

	s, _ = Load(fakeConfig{"lazy.gate.file": {"false"}})
	reads = 0
	cmds, src, err = s.Commands(withFile, "main")
	if err != nil || cmds != nil || src != "" || reads != 0 || Enabled(cmds) {
		t.Fatalf("file off: %q %q %v (read %d)", cmds, src, err, reads)
	}

	s, _ = Load(fakeConfig{})
	for name, read := range map[string]func(string) ([]byte, bool, error){
		"missing file":  file("", false, nil),
		"comments only": file("# soon\n", true, nil),
		"no reader":     nil,
	} {
		cmds, src, err = s.Commands(read, "main")
		if err != nil || cmds != nil || src != "" {
			t.Errorf("%s: %q %q %v, want no gate", name, cmds, src, err)
		}
	}

	boom := errors.New("boom")
	if _, _, err := s.Commands(file("", false, boom), "main"); !errors.Is(err, boom) || !strings.Contains(err.Error(), ".lazy/gate at main") {
		t.Errorf("read error: %v", err)
	}
	_, _, err = s.Commands(file("ok\nbad\x00\n", true, nil), "release")
	if err == nil || !strings.Contains(err.Error(), ".lazy/gate line 2") || !strings.Contains(err.Error(), ".lazy/gate at release") {
		t.Errorf("bad file: %v", err)
	}
}

// TestProtectedPaths: what the commands name and the target has is
// protected, with the defaults and lazy.gate.protect; what the target
// lacks (a file the gate checks the task writes) is not.
func TestProtectedPaths(t *testing.T) {
	cmds := []string{
		"sh check.sh",
		`./scripts/lint.sh --config=ci/lint.toml && make test`,
		"grep -qx ok 'fixed.txt' || exit 3",
		"go test ./... $PKG *.go ~/x ../up /abs -v",
		"npm test",
	}
	named := Named(cmds)
	for _, want := range []string{"check.sh", "scripts/lint.sh", "ci/lint.toml", "Makefile", "GNUmakefile", "fixed.txt", "package.json"} {
		if !slices.Contains(named, want) {
			t.Errorf("Named lacks %q: %q", want, named)
		}
	}
	for _, not := range []string{"...", "$PKG", "*.go", "~/x", "../up", "/abs", "-v", "./scripts/lint.sh", "||", "&&"} {
		if slices.Contains(named, not) {
			t.Errorf("Named has %q: %q", not, named)
		}
	}
	s, err := Load(fakeConfig{"lazy.gate.protect": {"**/*_test.sh"}})
	if err != nil {
		t.Fatal(err)
	}
	// The target has check.sh and the Makefile, not fixed.txt.
	p := s.Protected([]string{"check.sh", "Makefile"})
	changed := []string{"src/a.go", "check.sh", "fixed.txt", ".lazy/gate", ".github/workflows/ci.yml", "Makefile", "tests/a_test.sh", ".gitlab-ci.yml", "docs/check.sh"}
	got := p.Touched(changed)
	want := []string{".github/workflows/ci.yml", ".gitlab-ci.yml", ".lazy/gate", "Makefile", "check.sh", "tests/a_test.sh"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Touched = %q, want %q", got, want)
	}
	if !s.Protecting(nil, false) || (Settings{}).Protecting(nil, false) || !(Settings{}).Protecting([]string{"x"}, false) || !(Settings{}).Protecting(nil, true) {
		t.Error("Protecting: a gate, the forge's checks or lazy.gate.protect protect; nothing else does")
	}
}
