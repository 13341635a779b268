package gitrepo

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// configPieces are the parts random config files are made of: what git
// writes, what people write by hand, and what git refuses.
var configPieces = struct{ headers, keys, seps, values, ends, comments []string }{
	headers: []string{"[core]", "[Lazy]", `[remote "Origin"]`, `[branch "feat/x.y"]`, "[a.B]", "[a.b.C]",
		`[x "a\"b\\c"]`, `[x "a\qb"]`, "[ bad]", "[core", `[sec "sub" ]`, `[sec  "sub"]`, "[sec\t\"s\"]",
		"[]", "[.x]", "[a-b]", "[a_b]", `[sec "unterminated]`, `[sec sub]`, "[sec] k = inline", `[s.t "u"]`, "[1a]"},
	keys: []string{"key", "Key2", "k-e-y", "2key", "k_ey", "k.ey", "autoResume", "x"},
	seps: []string{" = ", "=", " =", "= ", "\t=\t", "", " ", " # c", "; c"},
	values: []string{"v", `"quoted value"`, "a # comment", "a ; c", `"a # not comment"`, "  lead", "trail  ",
		"x\\\ny", `\t\n\b`, `\q`, `"unterminated`, `a"b"c`, "", "v\vt", "v\ff", `\\`, `\"`, "true", "mid  dle",
		"\"x\\\n y\"", "tab\there", "é ünïcode"},
	ends:     []string{"\n", "\r\n", "", "\r", "\n\n"},
	comments: []string{"# comment", "; comment", "  # indented", "\t;x"},
}

// randomConfig is a config file of a few random lines.
func randomConfig(r *rand.Rand) string {
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	var b strings.Builder
	if r.IntN(20) == 0 {
		b.WriteString("\xef\xbb\xbf")
	}
	if r.IntN(4) != 0 {
		b.WriteString(pick(configPieces.headers) + "\n")
	}
	for range 1 + r.IntN(6) {
		switch r.IntN(10) {
		case 0:
			b.WriteString(pick(configPieces.headers))
		case 1:
			b.WriteString(pick(configPieces.comments))
		case 2:
			b.WriteString("   ")
		default:
			indent := []string{"", "\t", "  "}[r.IntN(3)]
			b.WriteString(indent + pick(configPieces.keys) + pick(configPieces.seps))
			if r.IntN(5) != 0 {
				b.WriteString(pick(configPieces.values))
			}
		}
		b.WriteString(pick(configPieces.ends))
	}
	return b.String()
}

// gitConfigList is what `git config --file --list -z` makes of the file:
// ok false when git refuses it.
func gitConfigList(t *testing.T, path string) (string, bool) {
	t.Helper()
	cmd := exec.Command("git", "config", "--file", path, "--list", "-z")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		if _, ok := err.(*exec.ExitError); ok { //nolint:errorlint // exec returns it unwrapped
			return "", false
		}
		t.Fatal(err)
	}
	return string(out), true
}

// listed is parseConfig's entries in git's --list -z form.
func listed(entries []configEntry) string {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.key)
		if !e.bare {
			b.WriteString("\n" + e.value)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// parseConfig reads what git reads: on 2,000 random files of lines git
// writes, lines people write and lines git refuses, it accepts exactly
// the files git accepts and reads the same variables and values from
// them.
func TestParseConfigAgreesWithGit(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	path := filepath.Join(t.TempDir(), "config")
	r := rand.New(rand.NewPCG(11, 12))
	accepted, refused := 0, 0
	n := 2000
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		src := randomConfig(r)
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		want, gitOK := gitConfigList(t, path)
		entries, err := parseConfig([]byte(src))
		switch {
		case gitOK && err != nil:
			t.Fatalf("git reads %q as %q; parseConfig refuses it: %v", src, want, err)
		case !gitOK && err == nil:
			t.Fatalf("git refuses %q; parseConfig reads %q", src, listed(entries))
		case gitOK && listed(entries) != want:
			t.Fatalf("%q:\ngit reads         %q\nparseConfig reads %q", src, want, listed(entries))
		case gitOK:
			accepted++
		default:
			refused++
		}
	}
	if accepted < n/10 || refused < n/10 {
		t.Fatalf("%d files accepted and %d refused: the generator no longer covers both", accepted, refused)
	}
}

func TestConfigLooksUpKeysAsGitDoes(t *testing.T) {
	entries, err := parseConfig([]byte("[Lazy]\n\tAutoResume\n\tpushBack =\n[lazy]\n\tretries = 3\n\tretries = 5\n" +
		"[remote \"Origin\"]\n\turl = one\n[remote \"origin\"]\n\turl = two\n[branch.Feat]\n\tmerge = m\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := &Config{entries: entries}
	if v, err := c.Bool("lazy.autoresume", false); err != nil || !v {
		t.Errorf("a bare key reads as %v, %v; git reads it as true", v, err)
	}
	if v, err := c.Bool("LAZY.pushBack", true); err != nil || v {
		t.Errorf(`"key =" reads as %v, %v; git reads it as false`, v, err)
	}
	if v, err := c.Int("lazy.retries", 0); err != nil || v != 5 {
		t.Errorf("the last value wins: got %d, %v", v, err)
	}
	if got := c.All("lazy.retries"); len(got) != 2 {
		t.Errorf("All = %q", got)
	}
	if v, _ := c.Get("remote.Origin.url"); v != "one" {
		t.Errorf("subsections keep their case: remote.Origin.url = %q", v)
	}
	if v, _ := c.Get("branch.feat.merge"); v != "m" {
		t.Errorf("[branch.Feat] is branch.feat: %q", v)
	}
	if _, ok := c.Get("lazy.missing"); ok {
		t.Error("a missing key reads as set")
	}
	if _, err := parseConfig([]byte("[core]\n\tbad key = 1\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad line: %v", err)
	}
	if !bytes.Equal([]byte(listed(entries)[:6]), []byte("lazy.a")) {
		t.Errorf("listed = %q", listed(entries))
	}
}
